"""Word attributions (integrated gradients over the word vectors) for every registered model,
from Python, the command line and the service."""
import json
import math

import numpy as np
import pytest
import torch

import adaptext
from adaptext.cli import main
from adaptext.data.readers import read_trec_raw
from adaptext.explain.highlight import explanation_html
from adaptext.explain.words import integrated_gradients, per_example
from adaptext.registry import get_entry, list_models
from adaptext.runs.pipeline import logits_of
from adaptext.training.run import train_run

from conftest import BUNDLED_TREC, collate_for, registered_case

pytest.importorskip("captum")

CASES = [(name, kind) for name in list_models() for kind in get_entry(name).inputs]
FIXED = {"steps": 32, "tolerance": math.inf}          # no doubling: the same integral batched and alone


def _lengths(item) -> list[int]:
    """Tokens per segment of an item, in the order attributions are reported."""
    if item.tree is not None:
        trees = [item.tree] + ([item.pair_tree] if item.pair_tree is not None else [])
        return [int((t.left < 0).sum()) for t in trees]
    out = [len(item.text)] + ([len(item.pair)] if item.pair is not None else [])
    return out + [len(c) for c in item.contexts or () if len(c)]


@pytest.mark.parametrize("name,kind", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_attributions_reach_every_token_and_sum_to_the_logit_difference(name, kind):
    torch.manual_seed(0)
    model, items, num_classes = registered_case(name, kind)
    batch = collate_for(items, num_classes, model)
    r = integrated_gradients(model, batch)                    # steps doubled until complete within 1%
    with torch.no_grad():                                     # the logit explained is the model's own
        own = logits_of(model(batch)).gather(1, torch.as_tensor(r["target"])[:, None])[:, 0].numpy()
    assert np.allclose(r["logit"], own, atol=1e-4), (r["logit"], own)
    diff = r["logit"] - r["baseline_logit"]
    for b, item in enumerate(items):
        segments = per_example(r, b)
        assert [len(s) for _, s in segments] == _lengths(item)
        total = sum(float(s.sum()) for _, s in segments)
        assert abs(total - diff[b]) <= 0.01 * abs(diff[b]) + 1e-4, (b, total, diff[b], r["steps"])
    assert np.abs(r["scores"]).max() > 0
    # the same example alone: the same scores (positions are mapped per example, not per batch)
    r = integrated_gradients(model, batch, **FIXED)
    alone = integrated_gradients(model, collate_for(items[:1], num_classes, model), **FIXED)
    got = np.concatenate([s for _, s in per_example(alone, 0)])
    want = np.concatenate([s for _, s in per_example(r, 0)])
    assert np.allclose(got, want, atol=1e-4 + 1e-3 * np.abs(want).max()), np.abs(got - want).max()


def test_a_bag_of_vectors_gets_its_exact_linear_attributions():
    """A mean of the word vectors under one linear layer: word i's attribution is exactly
    w_target . x_i / length, whatever the number of steps."""
    torch.manual_seed(0)
    model, items, num_classes = registered_case("bov", "text")
    model.hidden = torch.nn.Identity()
    model.head = torch.nn.Linear(model.embedding.out_dim, num_classes)
    model.eval()
    batch = collate_for(items, num_classes, model)
    r = integrated_gradients(model, batch, target=1, steps=2, tolerance=math.inf)
    w = model.head.weight[1]
    for b, item in enumerate(items):
        x = model.embedding(torch.as_tensor(item.text))
        want = (x @ w / len(item.text)).detach().numpy()
        assert np.allclose(per_example(r, b)[0][1], want, atol=1e-5)


def test_steps_double_until_the_gap_is_within_the_tolerance():
    torch.manual_seed(0)
    model, items, num_classes = registered_case("kim_cnn", "text")
    batch = collate_for(items, num_classes, model)
    coarse = integrated_gradients(model, batch, steps=1, tolerance=math.inf)
    fine = integrated_gradients(model, batch, steps=1, tolerance=0.001)
    assert coarse["steps"] == 1 and fine["steps"] > 1
    missing = np.abs(fine["gap"] * np.abs(fine["logit"] - fine["baseline_logit"]))
    assert ((fine["gap"] <= 0.001) | (missing <= 1e-4)).all()
    assert fine["gap"].max() < coarse["gap"].max()


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The bundled demo run (kim_cnn on the TREC questions, its default size), 3 epochs."""
    out = tmp_path_factory.mktemp("runs") / "demo"
    train_run({"out": str(out), "epochs": 3, "seed": 1, "progress": False})
    return out


def test_the_demo_run_is_explained_within_one_percent(demo, tmp_path, capsys):
    questions = [q.text for q in read_trec_raw(BUNDLED_TREC.with_name("test.txt.gz"))[:40]]
    records = adaptext.load(demo).explain(questions)
    assert len(records) == 40
    assert max(r["gap"] for r in records) < 0.01
    for q, r in zip(questions, records):
        assert r["target"] == r["label"]                       # the predicted label by default
        assert abs(r["attribution_sum"] - (r["logit"] - r["baseline_logit"])) <= 0.01 * abs(r["logit"] - r["baseline_logit"])
        assert r["segments"][0]["tokens"] == adaptext.load(demo).tokens(q)
    # what a question word contributes: "who" moves a question toward HUM
    who = adaptext.load(demo).explain(["Who wrote Hamlet ?"], label="HUM")[0]["segments"][0]
    assert who["tokens"][0] == "who" and who["scores"][0] == max(who["scores"]) > 0


def test_explain_words_command_writes_html_png_and_json(demo, tmp_path, capsys):
    out = tmp_path / "x"
    assert main(["explain", "words", str(demo), "--text", "Who wrote Hamlet ?", "--text", "How far is the moon ?",
                 "--out", str(out)]) == 0
    saved = json.loads((out / "words.json").read_text())["explanations"]
    assert [s["tokens"] for r in saved for s in r["segments"]] == [["who", "wrote", "hamlet", "?"],
                                                                  ["how", "far", "is", "the", "moon", "?"]]
    page = (out / "words.html").read_text()
    assert "hamlet</span>" in page and "completeness" in page
    assert all(explanation_html(r) in page for r in saved)     # the service's page colours words alike
    for k in (1, 2):
        assert (out / f"words_{k}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()
    assert main(["explain", "words", str(demo), "--text", "Who wrote Hamlet ?"]) == 0     # no --out: printed
    printed = capsys.readouterr().out
    assert "who(+" in printed and "gap" in printed
    assert main(["explain", "words", str(demo), "--text", "Who ?", "--label", "NOPE"]) == 2
    assert "label 'NOPE' is not one of the run's" in capsys.readouterr().err


def test_the_service_explains(demo, monkeypatch):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from adaptext import serve
    from adaptext.errors import MissingResource
    from adaptext.serve import MAX_EXPLAIN, create_app
    client = TestClient(create_app(demo))
    r = client.post("/explain", json={"inputs": ["Who wrote Hamlet ?"], "label": "HUM"})
    assert r.status_code == 200
    rec = r.json()["explanations"][0]
    assert rec["target"] == "HUM" and rec["segments"][0]["tokens"] == ["who", "wrote", "hamlet", "?"]
    assert rec.pop("html") == explanation_html(rec)           # the words coloured as words.html colours them
    assert client.post("/explain", json={"inputs": ["a"] * (MAX_EXPLAIN + 1)}).status_code == 422
    assert client.post("/explain", json={"inputs": ["a"], "label": "NOPE"}).status_code == 422

    def without_captum(*args):
        raise MissingResource("word attributions need Captum: pip install 'adaptext[explain]'")

    monkeypatch.setattr(serve, "explained", without_captum)
    missing = client.post("/explain", json={"inputs": ["Who wrote Hamlet ?"]})
    assert missing.status_code == 501 and "need Captum" in missing.json()["detail"]
