"""A second distillation target (``--feature-weight``): the teacher's sentence representation, what
its classifier head reads, matched through a linear map of the student's; the map is trained with
the student and never saved with it."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file

from adaptext.api import Classifier
from adaptext.cli import main
from adaptext.config import RunConfig
from adaptext.data.batching import Batch
from adaptext.data.text import LabelMap
from adaptext.nn.head import ClassifierHead
from adaptext.training.distill import one_teacher_outputs
from adaptext.training.module import ClassifierModule, feature_map

from conftest import bundled_examples
from test_hardening import one_line_error, questions  # noqa: F401  (fixtures)
from test_teacher_logits import STUDENT, teacher  # noqa: F401  (the same teacher and student)


def test_the_representations_are_what_the_teachers_head_reads(teacher, tmp_path, monkeypatch):
    """Through the head's linear layer the representations give the teacher's own logits back, text
    by text over several batches of texts of every length (the batches go by length, not in order),
    also where the logits were cached before."""
    monkeypatch.setenv("ADAPTEXT_CACHE", str(tmp_path / "cache"))
    clf = Classifier.load(teacher)
    examples = clf.pipeline.examples([q.text for q in bundled_examples("text", 150)])
    labels = clf.labels.labels
    logits, none = one_teacher_outputs(teacher, examples, labels, log=lambda m: None)
    assert none is None
    again, heads = one_teacher_outputs(teacher, examples, labels, log=lambda m: None, representations=True)
    assert np.array_equal(again, logits)
    assert heads is not None and heads.dtype == np.float16 and heads.shape == (150, 30)   # 3 widths x 10 filters
    linear = clf.pipeline.model.head.linear
    through = torch.from_numpy(heads.astype(np.float32)) @ linear.weight.detach().T + linear.bias.detach()
    assert np.allclose(through.numpy(), logits, atol=5e-2) and logits.std() > 0.1


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.head = ClassifierHead(3, 2, dropout=0.0)

    def forward(self, batch):
        return self.head(batch.text.float())


def test_the_loss_adds_the_weighted_distance_of_the_mapped_representation():
    cfg = RunConfig(alpha=0.0, feature_weight=2.0)
    module = ClassifierModule(Tiny(), cfg, LabelMap(["a", "b"]), None, None, teacher_dim=4)
    assert module.feature_map is not None and module.feature_map.weight.shape == (4, 3)
    text = torch.tensor([[1.0, 0.0, 2.0], [0.5, -1.0, 0.0]])
    features = torch.randn(2, 4)
    batch = Batch(index=torch.arange(2), labels=torch.tensor([-100, -100]), text=text, soft=torch.zeros(2, 2),
                  features=features)
    logits = module(batch)
    want = torch.nn.functional.mse_loss(logits, batch.soft) + \
        2.0 * torch.nn.functional.mse_loss(module.feature_map(text), features)
    assert float(module.distillation_loss(logits, batch).detach()) == pytest.approx(float(want.detach()))
    model = Tiny()                   # the map is drawn apart from the run's random numbers: they go on as without it
    torch.manual_seed(3)
    feature_map(model, 4)
    after = torch.rand(3)
    torch.manual_seed(3)
    assert torch.equal(torch.rand(3), after)
    optimiser = module.configure_optimizers()                        # a constant rate: the optimiser alone
    trained = {id(p) for group in optimiser.param_groups for p in group["params"]}
    assert {id(p) for p in [*module.feature_map.parameters(), *module.model.parameters()]} == trained


def test_a_student_of_the_representations_trains_and_keeps_only_its_own_weights(teacher, tmp_path, capsys):
    assert main(["distill", str(teacher), *STUDENT, "--out", str(tmp_path / "plain")]) == 0
    assert main(["distill", str(teacher), *STUDENT, "--feature-weight", "1", "--out", str(tmp_path / "both")]) == 0
    capsys.readouterr()
    plain, both = (load_file(str(tmp_path / r / "model.safetensors")) for r in ("plain", "both"))
    assert plain.keys() == both.keys()                               # the map is not part of the run
    assert any(not np.array_equal(plain[k], both[k]) for k in plain)  # the second target moved the weights
    config = json.loads((tmp_path / "both" / "config.json").read_text())
    assert config["distillation"]["feature_weight"] == 1.0
    assert Classifier.load(tmp_path / "both").predict(["Who wrote Hamlet ?"])[0]["label"]


def test_the_representations_need_the_teacher_run_not_a_file_of_its_logits(teacher, tmp_path, capsys):
    path = tmp_path / "teacher.safetensors"
    assert main(["logits", str(teacher), "--augment", "1", "--seed", "1", "--out", str(path)]) == 0
    capsys.readouterr()
    assert main(["distill", "--teacher-logits", str(path), *STUDENT, "--feature-weight", "1",
                 "--out", str(tmp_path / "s")]) != 0
    one_line_error(capsys, "--feature-weight needs the teacher run (--teacher)")
