"""The service's dynamic batching: concurrent requests share one model call, each gets its own
answers back, and a failure reaches every request of its batch; the model in a process of its
own answers as the in-process one does, and its loss is a 503, not a hang."""
from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import threading
import time

import pytest

from adaptext.data.errors import MissingResource
from adaptext.serve import DynamicBatcher, ProcessBatcher, take_batch


def test_requests_queued_while_the_model_reads_share_its_next_call_and_get_their_own_answers():
    calls, busy = [], threading.Event()

    def predict(inputs):
        calls.append(list(inputs))
        if len(calls) == 1:
            busy.wait(5)                         # the model reads the first request ...
        return [f"answer to {x}" for x in inputs]

    async def clients():
        batcher = DynamicBatcher(predict, max_batch=100, max_wait=0.05)
        first = asyncio.ensure_future(batcher.submit(["first"]))
        await asyncio.sleep(0.05)
        rest = [asyncio.ensure_future(batcher.submit([f"{c}-{k}" for k in range(c + 1)])) for c in range(4)]
        await asyncio.sleep(0.05)
        busy.set()                               # ... while four more arrive
        return await first, await asyncio.gather(*rest)

    first, answers = asyncio.run(clients())
    assert first == ["answer to first"]
    assert answers == [[f"answer to {c}-{k}" for k in range(c + 1)] for c in range(4)]
    assert [len(c) for c in calls] == [1, 10]


def test_a_batch_is_gathered_for_at_most_max_wait():
    arrivals = iter(range(1000))
    started = time.monotonic()
    batch = take_batch(([0], "a"), lambda: time.sleep(0.01) or ([next(arrivals)], "b"), 10_000, 0.05)
    assert 0.04 <= time.monotonic() - started < 0.5 and 3 <= len(batch) <= 7
    assert take_batch(([0], "a"), lambda: None, 10, 1.0) == [([0], "a")]


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


def test_the_model_in_its_own_process_answers_as_in_process_and_its_loss_is_a_503(tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from adaptext.serve import create_app
    from adaptext.training.run import train_run
    train_run({"out": str(tmp_path / "pair"), "model": "attconv", "data": str(_pairs(tmp_path)), "cv": 0,
               "test": str(_pairs(tmp_path)), "epochs": 1, "progress": False, "pair_col": "pair"})
    inputs = [{"text": f"question {k}", "pair": "an answer"} for k in range(12)]
    here = TestClient(create_app(tmp_path / "pair")).post("/predict", json={"inputs": inputs}).json()
    app = create_app(tmp_path / "pair", model_process=True)
    with TestClient(app) as client:
        apart = client.post("/predict", json={"inputs": inputs}).json()
        assert [p["label"] for p in apart["predictions"]] == [p["label"] for p in here["predictions"]]
        for a, b in zip(apart["predictions"], here["predictions"]):
            assert a["probs"] == pytest.approx(b["probs"], abs=1e-5)
        assert client.post("/predict", json={"inputs": ["no pair"]}).status_code == 422
        assert client.get("/info").json()["batching"]["inputs"] == 12
        model = [p for p in multiprocessing.active_children() if p.name == "adaptext-model"][0]
        os.kill(model.pid, signal.SIGKILL)
        lost = client.post("/predict", json={"inputs": inputs})
        assert lost.status_code == 503 and "model process stopped" in lost.json()["detail"]
        assert client.get("/health").status_code == 503


def test_a_model_process_that_cannot_load_says_why(tmp_path):
    with pytest.raises(MissingResource, match="could not start"):
        ProcessBatcher(tmp_path / "no-run")


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
