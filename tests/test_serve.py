"""The service's dynamic batching: concurrent requests share one model call, each gets its own
answers back, and a failure reaches every request of its batch; the model in a process of its
own answers as the in-process one does, and its loss is a 503, not a hang."""
from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from adaptext.errors import MissingResource
from adaptext.serve import DynamicBatcher, ProcessBatcher, take_batch


class HeldModel:
    """A model whose first call waits until the test lets it go: requests submitted meanwhile
    queue up for its next call, whatever the machine's speed."""

    def __init__(self, answer):
        self.answer, self.calls = answer, []
        self.reading, self.release = threading.Event(), threading.Event()

    def __call__(self, inputs):
        self.calls.append(list(inputs))
        if len(self.calls) == 1:
            self.reading.set()
            self.release.wait(60)
        return self.answer(inputs)


async def queue_while_held(batcher, model, requests: list) -> tuple:
    """Submits ``["held"]``, then, once the model reads it, ``requests``; lets the model go once
    all of them are queued. The held request's task and the others' tasks."""
    held = asyncio.ensure_future(batcher.submit(["held"]))
    await asyncio.to_thread(model.reading.wait, 60)
    rest = [asyncio.ensure_future(batcher.submit(r)) for r in requests]
    while batcher.queue.qsize() < len(requests):
        await asyncio.sleep(0)                   # each task queues its request, then awaits its answer
    model.release.set()
    return held, rest


def test_requests_queued_while_the_model_reads_share_its_next_call_and_get_their_own_answers():
    model = HeldModel(lambda inputs: [f"answer to {x}" for x in inputs])

    async def clients():
        batcher = DynamicBatcher(model, max_batch=100, max_wait=60)
        held, rest = await queue_while_held(batcher, model, [[f"{c}-{k}" for k in range(c + 1)] for c in range(4)])
        return await held, await asyncio.gather(*rest)

    first, answers = asyncio.run(clients())
    assert first == ["answer to held"]
    assert answers == [[f"answer to {c}-{k}" for k in range(c + 1)] for c in range(4)]
    assert [len(c) for c in model.calls] == [1, 10]


def test_a_batch_is_gathered_for_at_most_max_wait(monkeypatch):
    import adaptext.serve as serve
    now = [0.0]
    monkeypatch.setattr(serve, "time", SimpleNamespace(monotonic=lambda: now[0]))
    arrivals = iter(range(1, 1000))

    def more():                                  # a request arrives every quarter of a second
        now[0] += 0.25
        return [next(arrivals)], "b"

    batch = take_batch(([0], "a"), more, 10_000, 1.0)
    assert [x for xs, _ in batch for x in xs] == [0, 1, 2, 3, 4] and now[0] == 1.0
    assert take_batch(([0], "a"), lambda: None, 10, 1.0) == [([0], "a")] and now[0] == 1.0


def test_a_batch_is_cut_at_max_batch_inputs():
    model = HeldModel(lambda xs: xs)

    async def clients():
        batcher = DynamicBatcher(model, max_batch=4, max_wait=60)
        held, rest = await queue_while_held(batcher, model, [[c, c] for c in range(6)])
        return await held, await asyncio.gather(*rest)

    assert asyncio.run(clients()) == (["held"], [[c, c] for c in range(6)])
    assert [len(c) for c in model.calls] == [1, 4, 4, 4]


def test_a_model_failure_reaches_every_request_of_the_batch():
    def fail(inputs):
        raise RuntimeError("model failed")
    model = HeldModel(fail)

    async def clients():
        batcher = DynamicBatcher(model, max_wait=60)
        held, rest = await queue_while_held(batcher, model, [[c] for c in range(3)])
        return await asyncio.gather(held, *rest, return_exceptions=True)

    assert all(isinstance(r, RuntimeError) for r in asyncio.run(clients()))
    assert model.calls == [["held"], [0, 1, 2]]


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


def test_request_bodies_are_pydantic_models_that_answer_with_the_service_s_messages(tmp_path):
    """The shape and the limits of a body are checked by its model, each refusal one line; the
    models document the bodies in the service's OpenAPI schema."""
    pytest.importorskip("fastapi")
    from adaptext.errors import UsageError
    from adaptext.serve import MAX_CHARS, MAX_EXPLAIN, MAX_INPUTS
    from adaptext.serve_bodies import ExplainBody, PredictBody
    body = PredictBody.of({"inputs": ["a", {"text": "b", "pair": "c"}], "other": 1}, MAX_INPUTS, MAX_CHARS)
    assert body.inputs == ["a", {"text": "b", "pair": "c"}]
    assert ExplainBody.of({"inputs": ["a"], "label": "HUM"}, MAX_EXPLAIN, MAX_CHARS).label == "HUM"
    refused = {'the body must be a JSON object {"inputs": [...]}': [[], "x", None, {"inputs": "ab"},
                                                                      {"inputs": {"a": 1}}, {"input": []}],
               f"at most {MAX_EXPLAIN} inputs per request": [{"inputs": ["a"] * (MAX_EXPLAIN + 1)}],
               f"input 3 is longer than {MAX_CHARS:,} characters": [
                   {"inputs": ["a", "b", {"text": "c", "contexts": ["d" * MAX_CHARS]}]}]}
    for message, bodies in refused.items():
        for payload in bodies:
            with pytest.raises(UsageError) as e:
                ExplainBody.of(payload, MAX_EXPLAIN, MAX_CHARS)
            assert str(e.value) == message, payload
    from fastapi.testclient import TestClient

    from adaptext.serve import create_app
    run = Path(__file__).resolve().parent / "data" / "legacy_runs" / "kim_cnn"
    schema = TestClient(create_app(run)).get("/openapi.json").json()["paths"]
    for path, fields in (("/predict", {"inputs"}), ("/explain", {"inputs", "label"})):
        documented = schema[path]["post"]["requestBody"]["content"]["application/json"]["schema"]
        assert set(documented["properties"]) == fields and documented["required"] == ["inputs"]
        assert documented["properties"]["inputs"]["type"] == "array"


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
