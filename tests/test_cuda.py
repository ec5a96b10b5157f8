"""The CUDA path: every model gives on the GPU the logits it gives on the CPU, the fast paths
that take a CUDA-only branch equal their references there, the row-lazy optimisers follow
torch.optim on CUDA tensors, and a run trained on the GPU predicts the same on the CPU.
Skipped where no GPU is visible (CI); run on a GPU machine with ``pytest tests/test_cuda.py``."""
import copy

import pytest
import torch
from lightning_utilities.core.apply_func import apply_to_collection

from adaptext.nn.adaptive import AdaptiveConv1d
from adaptext.nn.qrnn import linear_scan
from adaptext.optim.rows import Adadelta, Adagrad, param_groups

from conftest import collate_for, distil_small, registered_case
from test_adaptive import C_IN, C_OUT, G, naive_forward, padded_batch
from test_encoders import scan_reference
from test_optim import Bag, batches, train
from test_registry import CASES

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device visible")
CUDA = torch.device("cuda")


@pytest.fixture(autouse=True)
def exact_float32():
    """TF32 matmuls would differ from the CPU by 1e-3; compare true float32."""
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def to_cuda(batch):
    return apply_to_collection(batch, torch.Tensor, lambda t: t.to(CUDA))


def logits_of(out):
    return out["logits"] if isinstance(out, dict) else out


@pytest.mark.parametrize("name,kind", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_model_on_cuda_equals_cpu(name, kind):
    torch.manual_seed(0)
    model, items, num_classes = registered_case(name, kind)
    batch = collate_for(items, num_classes, model)
    model.eval()
    with torch.no_grad():
        cpu = logits_of(model(batch))
        gpu_model = copy.deepcopy(model).to(CUDA)
        gpu = logits_of(gpu_model(to_cuda(batch)))
    assert gpu.device.type == "cuda"
    assert torch.allclose(gpu.cpu(), cpu, atol=1e-4, rtol=1e-3), (gpu.cpu() - cpu).abs().max()
    gpu_model.train()
    loss = torch.nn.functional.cross_entropy(logits_of(gpu_model(to_cuda(batch))),
                                             batch.labels.to(CUDA))
    loss.backward()
    grads = [p.grad for p in gpu_model.parameters() if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)


@pytest.mark.parametrize("generation", ["full", "hashed"])
@pytest.mark.parametrize("k,padding", [(3, 1), (4, 3), (5, 0)])
def test_adaptive_fast_path_equals_naive_on_cuda(generation, k, padding):
    torch.manual_seed(0)
    conv = AdaptiveConv1d(C_IN, C_OUT, k, padding, generation=generation, context_dim=G,
                          pool_size=7, num_importance=3).to(CUDA)
    x, lengths, mask = padded_batch([11, 8, 5, 9])
    naive = naive_forward(copy.deepcopy(conv).cpu(), x, lengths)      # the reference runs on the CPU
    fast = conv(x.to(CUDA), mask.to(CUDA))
    assert torch.allclose(fast.cpu(), naive, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("T", [5, 37, 300])
def test_parallel_scan_on_cuda_matches_loop(T):
    """QRNN takes the parallel scan on CUDA for texts longer than 32 tokens."""
    torch.manual_seed(T)
    a = torch.rand(3, T, 4, dtype=torch.float64, device=CUDA, requires_grad=True)
    b = torch.randn(3, T, 4, dtype=torch.float64, device=CUDA, requires_grad=True)
    ref = scan_reference(a, b)
    got = linear_scan(a, b, "parallel")
    assert torch.allclose(got, ref, rtol=1e-10, atol=1e-10)
    g = torch.randn_like(got)
    for x, y in zip(torch.autograd.grad((got * g).sum(), (a, b)), torch.autograd.grad((ref * g).sum(), (a, b))):
        assert torch.allclose(x, y, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("ours,ref,kw", [(Adadelta, torch.optim.Adadelta, {"lr": 1.0, "rho": 0.95, "eps": 1e-6}),
                                         (Adagrad, torch.optim.Adagrad, {"lr": 0.05})])
def test_row_lazy_optimisers_on_cuda(ours, ref, kw):
    torch.manual_seed(0)
    a = Bag()
    b = copy.deepcopy(a)
    a_gpu = copy.deepcopy(a).to(CUDA)
    train(b, ref(b.parameters(), **kw))
    opt = ours(param_groups(a_gpu), **kw)
    for x, y in batches(40, a.embed.num_embeddings):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(a_gpu(x.to(CUDA)), y.to(CUDA)).backward()
        opt.step()
    for (name, pa), pb in zip(a_gpu.named_parameters(), b.parameters()):
        assert torch.allclose(pa.cpu(), pb, atol=1e-5, rtol=1e-4), name


def test_run_trained_on_gpu_predicts_the_same_on_cpu(tmp_path, monkeypatch):
    import adaptext
    from adaptext.training import fit, run
    evaluated_on, evaluate = [], fit.evaluate

    def evaluate_and_note(model, p):
        evaluated_on.append(next(model.parameters()).device.type)
        return evaluate(model, p)
    monkeypatch.setattr(fit, "evaluate", evaluate_and_note)
    out = tmp_path / "gpu-run"
    m = run.train_run({"out": str(out), "epochs": 2, "seed": 3, "filters": 16, "embed_dim": 32, "progress": False,
                       "accelerator": "gpu"})
    assert m["test"]["accuracy"] > 50                        # 6 TREC classes
    assert evaluated_on == ["cuda"]          # not on the CPU where the engine's teardown leaves the model
    cpu = adaptext.load(out, device="cpu")
    gpu = adaptext.load(out, device="cuda")
    texts = ["What is the capital of France ?", "Who wrote Hamlet ?", "How many feet are in a mile ?"]
    a, b = cpu.predict(texts), gpu.predict(texts)
    assert [x["label"] for x in a] == [x["label"] for x in b]
    for x, y in zip(a, b):
        assert all(abs(x["probs"][k] - y["probs"][k]) < 1e-4 for k in x["probs"])


def test_a_student_trained_on_the_gpu_gets_its_teachers_logits_from_the_gpu(tmp_path, monkeypatch):
    from adaptext import load
    from adaptext.data.examples import TextExample
    from adaptext.training.distill import teacher_logits
    devices, teacher, m = distil_small(tmp_path, monkeypatch, "gpu", augment=1)
    assert devices == ["cuda"] and m["test"]["accuracy"] > 30
    texts = ("What is the capital of France ?", "Who wrote Hamlet ?", "How many feet are in a mile ?")
    examples = [TextExample(t) for t in texts]
    labels = load(teacher).labels.labels
    on_gpu = teacher_logits(teacher, examples, labels, log=lambda *_: None, device="cuda")
    monkeypatch.setenv("ADAPTEXT_CACHE", str(tmp_path / "cpu-cache"))      # computed again, not read back
    on_cpu = teacher_logits(teacher, examples, labels, log=lambda *_: None, device="cpu")
    assert abs(on_gpu - on_cpu).max() < 1e-4
