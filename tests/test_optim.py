"""The row-lazy Adadelta / Adagrad follow torch.optim's to rounding on a model whose batches
use few rows of its embedding matrix, and the work they skip is really skipped."""
import copy

import pytest
import torch
from torch import nn

from adaptext.optim import OPTIMIZERS
from adaptext.optim.rows import Adadelta, Adagrad, param_groups


class Bag(nn.Module):
    def __init__(self, vocab=200, dim=8, classes=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=0)
        self.out = nn.Linear(dim, classes)

    def forward(self, x):
        return self.out(self.embed(x).mean(1))


def batches(n, vocab, seed=0):
    """Batches that each use a small random part of the vocabulary (and the padding row)."""
    g = torch.Generator().manual_seed(seed)
    for _ in range(n):
        words = torch.randint(1, vocab, (12,), generator=g)
        x = words[torch.randint(0, 12, (4, 6), generator=g)]
        x[:, -1] = 0
        yield x, torch.randint(0, 3, (4,), generator=g)


def train(model, opt, n=40):
    for x, y in batches(n, model.embed.num_embeddings):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return model


@pytest.mark.parametrize("ours,ref,kw", [
    (Adadelta, torch.optim.Adadelta, {"lr": 1.0, "rho": 0.95, "eps": 1e-6}),
    (Adadelta, torch.optim.Adadelta, {"lr": 0.5, "rho": 0.5, "eps": 1e-6}),     # strong decay over skipped steps
    (Adagrad, torch.optim.Adagrad, {"lr": 0.05}),
    (Adadelta, torch.optim.Adadelta, {"lr": 1.0, "weight_decay": 0.01}),       # every row has a gradient
])
def test_equals_torch(ours, ref, kw):
    torch.manual_seed(0)
    a = Bag()
    b = copy.deepcopy(a)
    train(a, ours(param_groups(a), **kw))
    train(b, ref(b.parameters(), **kw))
    for (name, pa), pb in zip(a.named_parameters(), b.parameters()):
        assert torch.allclose(pa, pb, atol=1e-6, rtol=1e-4), name
    assert not torch.equal(a.embed.weight, Bag().embed.weight)


def test_rows_path_touches_only_used_rows():
    torch.manual_seed(0)
    model = Bag()
    opt = Adadelta(param_groups(model), lr=1.0, rho=0.95)
    assert [g["rows"] for g in opt.param_groups] == [False, True]
    before = model.embed.weight.detach().clone()
    x, y = next(batches(1, 200))
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    used = torch.zeros(200, dtype=torch.bool)
    used[x.unique()] = True
    used[0] = False                                              # padding_idx has no gradient
    changed = (model.embed.weight != before).any(1)
    assert torch.equal(changed, used)
    state = opt.state[model.embed.weight]
    assert torch.equal(state["last"] == 1, used) and (state["square_avg"][~used] == 0).all()


def test_state_round_trip():
    """A resumed run (optimizer state_dict saved and loaded) continues exactly."""
    torch.manual_seed(0)
    a = Bag()
    opt = Adadelta(param_groups(a), lr=1.0, rho=0.95)
    train(a, opt, 10)
    b = copy.deepcopy(a)
    opt_b = Adadelta(param_groups(b), lr=1.0, rho=0.95)
    opt_b.load_state_dict(copy.deepcopy(opt.state_dict()))
    train(a, opt, 10)
    train(b, opt_b, 10)
    assert torch.equal(a.embed.weight, b.embed.weight)


def test_the_optimizer_choices_are_the_optimisers_that_can_be_built():
    """--optimizer offers exactly the names a run can build, each with the run's lr and weight
    decay on every parameter, the embedding matrix in a group of its own."""
    from adaptext.contract import OPTIONS
    assert OPTIONS["optimizer"].meta["choices"] == tuple(OPTIMIZERS)
    assert OPTIONS["optimizer"].default in OPTIMIZERS
    kinds = {"adam": torch.optim.Adam, "adagrad": Adagrad, "adadelta": Adadelta, "sgd": torch.optim.SGD}
    assert set(kinds) == set(OPTIMIZERS)
    for name, build in OPTIMIZERS.items():
        model = Bag()
        opt = build(model, lr=0.125, weight_decay=0.01)
        assert type(opt) is kinds[name], name
        assert [(g["lr"], g["weight_decay"]) for g in opt.param_groups] == [(0.125, 0.01)] * 2, name
        assert opt.param_groups[1]["params"] == [model.embed.weight], name
        assert sorted(id(p) for g in opt.param_groups for p in g["params"]) == sorted(map(id, model.parameters()))
        before = model.embed.weight.detach().clone()
        train(model, opt, 2)
        assert not torch.equal(model.embed.weight, before), name


def test_the_linear_schedule_warms_up_then_decays_to_zero():
    from adaptext.optim.schedules import lr_factor
    f = lr_factor("linear", 0.1, 100)
    assert [round(f(s), 2) for s in (0, 4, 9, 10, 55, 99, 100)] == [0.1, 0.5, 1.0, 1.0, 0.5, 0.01, 0.0]
    assert [lr_factor("constant", 0.0, 100)(s) for s in (0, 50, 99)] == [1.0, 1.0, 1.0]


def test_a_run_with_the_linear_schedule_ends_its_planned_steps_at_lr_zero(tmp_path):
    from adaptext.cli import main
    out = tmp_path / "run"
    assert main(["train", "--filters", "4", "--embed-dim", "8", "--max-steps", "12", "--lr-schedule", "linear",
                 "--warmup", "0.25", "--keep-checkpoints", "--threads", "1", "--no-progress", "--out", str(out)]) == 0
    from adaptext.training.checkpoint import load_tree
    state = load_tree(out / "checkpoints" / "last.ckpt")
    assert state["lr_schedulers"][0]["last_epoch"] == 12
    assert [g["lr"] for g in state["optimizer_states"][0]["param_groups"]] == [0.0] * len(
        state["optimizer_states"][0]["param_groups"])
