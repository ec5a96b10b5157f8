"""`adaptext serve` as a user runs it: a server process (uvicorn, its model in a process of its
own) on a loopback port. Requests as large as the service allows are answered, and so is every
request after them; concurrent explanations each get the answer they get alone."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import serving

from adaptext.serve import MAX_INPUTS
from adaptext.training.run import train_run

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
QUESTIONS = ["Who wrote Hamlet ?", "How far is the moon ?", "What is a nanometer ?", "When did Elvis die ?",
             "Where is Timbuktu ?", "Why is the sky blue ?", "What does NASA stand for ?", "Name a bird ."]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A port where `adaptext serve` answers for a small demo run (kim_cnn, 2 epochs)."""
    run = tmp_path_factory.mktemp("runs") / "demo"
    train_run({"out": str(run), "epochs": 2, "seed": 1, "progress": False, "filters": 20})
    with serving(run) as (url, _):
        yield url


def post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_a_request_of_the_most_inputs_allowed_is_answered_and_so_is_the_next(server):
    inputs = [QUESTIONS[k % len(QUESTIONS)] for k in range(MAX_INPUTS)]
    status, answer = post(server + "/predict", {"inputs": inputs})
    assert status == 200 and len(answer["predictions"]) == MAX_INPUTS   # far more than a pipe's buffer
    assert [p["label"] for p in answer["predictions"][:8]] == [p["label"] for p in answer["predictions"][8:16]]
    status, answer = post(server + "/predict", {"inputs": ["Who wrote Hamlet ?"]})
    assert status == 200 and len(answer["predictions"]) == 1
    assert urllib.request.urlopen(server + "/health", timeout=5).status == 200


def test_many_clients_of_large_requests_are_all_answered(server):
    bodies = [{"inputs": [QUESTIONS[(c + k) % len(QUESTIONS)] for k in range(50)]} for c in range(16)]
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda b: post(server + "/predict", b), bodies))
    assert [status for status, _ in answers] == [200] * 16
    assert all(len(a["predictions"]) == 50 for _, a in answers)


def test_concurrent_explanations_equal_their_sequential_answers(server):
    bodies = [{"inputs": QUESTIONS[k:k + 4]} for k in range(4)]
    alone = [post(server + "/explain", b) for b in bodies]
    assert [status for status, _ in alone] == [200] * 4
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda b: post(server + "/explain", b), bodies * 2))
    assert [status for status, _ in together] == [200] * 8
    for (_, one), (_, other) in zip(alone * 2, together):
        for a, b in zip(one["explanations"], other["explanations"]):
            assert a["label"] == b["label"] and a["segments"][0]["tokens"] == b["segments"][0]["tokens"]
            assert a["segments"][0]["scores"] == pytest.approx(b["segments"][0]["scores"], abs=1e-5)
