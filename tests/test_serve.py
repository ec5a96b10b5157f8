"""The service's dynamic batching: concurrent requests share one model call, each gets its own
answers back, and a failure reaches every request of its batch."""
from __future__ import annotations

import asyncio

import pytest

from adaptext.serve import DynamicBatcher


def test_concurrent_requests_share_one_model_call_and_get_their_own_answers():
    calls = []

    def predict(inputs):
        calls.append(list(inputs))
        return [f"answer to {x}" for x in inputs]

    async def clients():
        batcher = DynamicBatcher(predict, max_batch=100, max_wait=0.05)
        return await asyncio.gather(*(batcher.submit([f"{c}-{k}" for k in range(c + 1)]) for c in range(4)))

    answers = asyncio.run(clients())
    assert answers == [[f"answer to {c}-{k}" for k in range(c + 1)] for c in range(4)]
    assert len(calls) == 1 and len(calls[0]) == 10


def test_a_batch_is_cut_at_max_batch_inputs():
    calls = []

    async def clients():
        batcher = DynamicBatcher(lambda xs: calls.append(len(xs)) or xs, max_batch=4, max_wait=0.05)
        return await asyncio.gather(*(batcher.submit([c, c]) for c in range(6)))

    assert asyncio.run(clients()) == [[c, c] for c in range(6)]
    assert calls == [4, 4, 4]


def test_a_model_failure_reaches_every_request_of_the_batch():
    def predict(inputs):
        raise RuntimeError("model failed")

    async def clients():
        batcher = DynamicBatcher(predict, max_wait=0.05)
        return await asyncio.gather(*(batcher.submit([c]) for c in range(3)), return_exceptions=True)

    assert all(isinstance(r, RuntimeError) for r in asyncio.run(clients()))


def test_a_bad_input_fails_only_its_own_request(tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from adaptext.serve import create_app
    from adaptext.training.run import train_run
    train_run({"out": str(tmp_path / "pair"), "model": "attconv", "data": str(_pairs(tmp_path)), "cv": 0,
               "test": str(_pairs(tmp_path)), "epochs": 1, "progress": False, "pair_col": "pair"})
    client = TestClient(create_app(tmp_path / "pair"))
    good = client.post("/predict", json={"inputs": [{"text": "a question", "pair": "an answer"}]})
    bad = client.post("/predict", json={"inputs": ["a string where a pair is needed"]})
    assert good.status_code == 200 and len(good.json()["predictions"]) == 1
    assert bad.status_code == 422 and "pair" in bad.json()["detail"]


def _pairs(tmp_path):
    from conftest import bundled_examples
    f = tmp_path / "pairs.csv"
    if not f.exists():
        import csv
        with open(f, "w", newline="") as out:
            w = csv.writer(out)
            w.writerow(["text", "pair", "label"])
            w.writerows([e.text, e.pair, e.label] for e in bundled_examples("pair", 120))
    return f
