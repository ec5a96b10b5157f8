"""Export a trained run to ONNX, to serve it without adaptext or PyTorch (onnxruntime, or any
ONNX runtime), e.g. ``adaptext export runs/trec --out exported/trec``.

The export directory holds ``model.onnx``, the run's ``vocab.json``, ``labels.json`` and
``config.json`` (and a subword run's ``tokenizer.json``, its word pieces), and ``export.json``:
what the graph reads and returns, how to turn text into its inputs, and the check made at export
time. The graph reads token ids and lengths:

    text [batch, length] int64       ids from vocab.json (0 = <pad>, 1 = <unk>), padded with 0
    lengths [batch] int64            tokens per text (at least 1: an empty text is one <unk>)
    pair, pair_lengths               pair models: the second text, the same way (an empty one: length 0)
    contexts [batch, K, length], context_lengths [batch, K]   models with several contexts

and returns ``logits`` and ``probs`` [batch, classes] (softmax; sigmoid for multi-label runs,
whose decision threshold is in labels.json). Every batch must hold at least ``min_length``
positions (the widest filter): pad with 0 up to it, as adaptext does.

The batch size and the lengths stay free in the graph. A few models unroll a loop whose
trip count is the length (QRNN's recurrence, DPCNN's pyramid of poolings): those export with
``--length N``, a graph for exactly N positions (pad or truncate every text to N). Tree models
read a parse per text, which an ONNX graph does not; they are not exported.

After writing the graph, the export runs it with onnxruntime on random batches of other
shapes (another batch size and a longer length; unless the length is fixed, also the shortest
length the graph takes, with an empty pair or context) and compares its outputs with PyTorch's;
the largest difference is kept in export.json.
"""
from __future__ import annotations

import contextlib
import io
import logging
import shutil
import warnings
from pathlib import Path

import torch
from torch import nn

from .data.batching import Batch
from .errors import DataError, MissingResource, UsageError
from .data.examples import ExampleKind
from .runs.files import write_atomic
from .runs.inputs import as_input_list
from .runs.pipeline import logits_of, probabilities
from .runs.spec import PIECES

INPUTS = {ExampleKind.TEXT: ("text", "lengths"), ExampleKind.PAIR: ("text", "lengths", "pair", "pair_lengths"),
          ExampleKind.CONTEXTS: ("text", "lengths", "contexts", "context_lengths")}
TOLERANCE = 1e-4
CHECK_BATCH = 5            # texts of the largest batch the export traces and checks


class ExportCheckFailed(RuntimeError):
    """The exported graph's outputs differ from PyTorch's beyond ``TOLERANCE``; nothing is written."""


class ExportGraph(nn.Module):
    """A model behind plain tensors: (text, lengths[, pair, pair_lengths | contexts,
    context_lengths]) -> (logits, probs)."""

    def __init__(self, model: nn.Module, kind: ExampleKind, multilabel: bool):
        super().__init__()
        if kind not in INPUTS:
            raise UsageError(f"{kind} models cannot be exported to ONNX: they read a parse per text")
        self.model, self.kind, self.multilabel = model.eval(), kind, multilabel

    def forward(self, text, lengths, second=None, second_lengths=None):
        logits = logits_of(self.model(Batch.of_ids(self.kind, text, lengths, second, second_lengths)))
        return logits, probabilities(logits, self.multilabel)


def sample_inputs(kind: ExampleKind, vocab_size: int, min_length: int, length: int | None, batch: int = 4,
                  seed: int = 0, longer: int = 0, contexts: int = 3, shortest: bool = False) -> tuple:
    """Random ids in ``[2, vocab_size)`` with lengths from 1 to the padded length, zero past
    each text's end: the example the graph is traced on (and, ``longer`` positions longer
    and with another batch size, checked with; ``shortest``: padded to ``min_length`` only,
    with the last pair empty). Batch size and lengths differ from each other, so the tracer
    cannot tie them."""
    g = torch.Generator().manual_seed(seed)

    def texts(n: int, t: int):
        lengths = torch.randint(1, t + 1, (n,), generator=g)
        lengths[0] = t
        ids = torch.randint(2, max(vocab_size, 3), (n, t), generator=g)
        return ids.masked_fill(torch.arange(t)[None, :] >= lengths[:, None], 0), lengths

    t = length or (min_length if shortest else max(min_length, 7) + 2 + longer)
    text, lengths = texts(batch, t)
    if kind == ExampleKind.TEXT:
        return text, lengths
    if kind == ExampleKind.PAIR:
        pair, pair_lengths = texts(batch, length or (t if shortest else t + 3))
        if shortest:
            pair_lengths[-1] = 0
            pair[-1] = 0
        return text, lengths, pair, pair_lengths
    k = contexts
    ctx, ctx_lengths = texts(batch * k, length or (t if shortest else t + 3))
    ctx_lengths = ctx_lengths.view(batch, k)
    ctx_lengths[1, -1] = 0                             # a missing context
    ctx_lengths[2, :] = 0                              # a text with no context at all
    ctx = ctx.view(batch, k, -1).masked_fill((ctx_lengths == 0)[..., None], 0)
    return text, lengths, ctx, ctx_lengths


def dynamic_shapes(kind: ExampleKind, min_length: int, fixed: bool) -> tuple:
    """torch.export dims: the batch (and the number of contexts) always free; the lengths free,
    from ``min_length``, unless ``fixed``."""
    from torch.export import Dim
    b = Dim("batch", min=1)

    def ids(*dims, length: str):
        return {0: b, **dict(enumerate(dims, 1)), len(dims) + 1: None if fixed else Dim(length, min=min_length)}
    if kind == ExampleKind.TEXT:
        return ids(length="length"), {0: b}
    if kind == ExampleKind.PAIR:
        return ids(length="length"), {0: b}, ids(length="pair_length"), {0: b}
    k = Dim("contexts", min=1)
    return ids(length="length"), {0: b}, ids(k, length="context_length"), {0: b, 1: k}


def _free_length(value_info) -> bool:
    """Whether a graph input's last dimension (its length) is symbolic, not a fixed number.
    (The exporter falls back to fixed shapes when a model's code fixes them.)"""
    dims = value_info.type.tensor_type.shape.dim
    return len(dims) < 2 or bool(dims[-1].dim_param)


def graph_min_length(model) -> int:
    """The fewest positions a batch of the graph holds: the widest filter, and at least 2
    (the graph is traced for lengths from 2; padding never changes a text's output)."""
    return max(2, model.min_length)


def graph_inputs(clf, inputs, length: int | None = None) -> dict:
    """The exported graph's inputs (name -> int64 numpy array) for raw inputs (strings; dicts
    for pair and context models), encoded as ``clf`` (``adaptext.load(RUN_DIR)``) encodes them;
    ``length``: padded or truncated to the N positions of a ``--length N`` export (texts
    longer than N are cut, as ``max_length`` cuts them in ``predict``)."""
    inputs = as_input_list(inputs)
    if not inputs:
        raise UsageError("no inputs: give a list of one or more")
    batch = clf.collate(clf.pipeline.items(inputs))
    names = INPUTS[clf.kind]          # ids and lengths of the text, then of the pair or contexts: the batch's fields
    out = {}
    for ids_name, lengths_name in zip(names[::2], names[1::2]):
        ids, lengths = getattr(batch, ids_name), getattr(batch, lengths_name)
        n = length if length is not None else max(ids.shape[-1], graph_min_length(clf.model))
        out[ids_name] = torch.nn.functional.pad(ids, (0, max(0, n - ids.shape[-1])))[..., :n].numpy()
        out[lengths_name] = lengths.clamp(max=n).numpy()
    return out


def export_model(model: nn.Module, kind: ExampleKind, multilabel: bool, vocab_size: int, path,
                 length: int | None = None, opset: int | None = None) -> dict:
    """Write ``model`` as an ONNX graph to ``path`` and check it in onnxruntime against
    PyTorch on inputs of another batch size (and length, unless ``length`` fixes it);
    returns ``{"min_length", "opset", "check"}``."""
    try:
        import onnx  # noqa: F401
        import onnxruntime as ort
        import onnxscript  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the optional extra
        raise MissingResource(f"export needs onnx, onnxscript and onnxruntime ({e.name} is missing): "
                           f"pip install 'adaptext[export]'") from e
    name = type(model).__name__
    check_opset(opset)
    min_length = graph_min_length(model)
    if length is not None and length < min_length:
        raise UsageError(f"--length {length} is shorter than the model's widest filter ({min_length})")
    if length is not None:
        check_length_fits(model, length)
    graph = ExportGraph(model, kind, multilabel).eval()
    names = INPUTS[kind]
    program = _trace(graph, kind, vocab_size, min_length, length, opset)
    written = _opset_of(program.model_proto)
    if opset is not None and written != opset:
        raise UsageError(f"--opset {opset}: the exporter could not convert {name}'s graph to opset {opset} (it "
                         f"stays at {written}); opsets from {NATIVE_OPSETS[0]} to {NATIVE_OPSETS[1]} need no "
                         f"conversion")
    if length is None and not all(_free_length(i) for i in program.model_proto.graph.input
                                  if not i.name.endswith("lengths")):
        raise UsageError(f"{name} unrolls a loop over the text length, so its graph needs one length: export "
                         f"with --length N (every text padded or truncated to N)")
    path = Path(path)
    unchecked = path.with_name(path.name + ".unchecked")
    program.save(str(unchecked))
    checks = [sample_inputs(kind, vocab_size, min_length, length, batch=5, seed=1, longer=5, contexts=2)]
    if length is None:
        checks.append(sample_inputs(kind, vocab_size, min_length, None, batch=3, seed=2, contexts=4, shortest=True))
    try:
        diff, diff_logits = _compare(graph, ort.InferenceSession(str(unchecked), providers=["CPUExecutionProvider"]),
                                     names, checks)
        if not (diff <= TOLERANCE and diff_logits <= TOLERANCE):
            raise ExportCheckFailed(f"the exported graph differs from PyTorch by {diff:.2e} in probabilities and "
                                    f"{diff_logits:.2e} in logits (relative; more than {TOLERANCE:g}): not written")
        unchecked.replace(path)
    finally:                                   # a graph that failed (or could not run) its check is not kept
        unchecked.unlink(missing_ok=True)
    return {"min_length": min_length, "opset": written,
            "check": {"batches": [list(c[0].shape) for c in checks],
                      "max_abs_diff_probs": diff, "max_rel_diff_logits": diff_logits}}


def _opset_of(model_proto) -> int | None:
    opsets = [o.version for o in model_proto.opset_import if o.domain in ("", "ai.onnx")]
    return opsets[0] if opsets else None


def opset_range() -> tuple[int, int]:
    """The opsets an export may ask for: from the oldest torch's exporter knows to the newest
    the installed onnx defines (a graph cannot be written in an opset onnx does not know)."""
    from torch.onnx import _constants
    try:
        import onnx
    except ImportError:                        # the export itself says what to install
        return getattr(_constants, "ONNX_MIN_OPSET", 7), NATIVE_OPSETS[1]
    return getattr(_constants, "ONNX_MIN_OPSET", 7), onnx.defs.onnx_opset_version()


# the exporter writes these itself (its version converter's range); others go through onnx's
# converter, which some graphs do not survive
NATIVE_OPSETS = (18, 25)


def check_opset(opset: int | None) -> None:
    """An opset outside ``opset_range`` is refused before anything is exported (the exporter
    would print a traceback and write its default opset)."""
    if opset is None:
        return
    low, high = opset_range()
    if isinstance(opset, bool) or not isinstance(opset, int) or not low <= opset <= high:
        raise UsageError(f"--opset must be from {low} to {high} (ONNX opsets this exporter can write; "
                         f"{NATIVE_OPSETS[0]} to {NATIVE_OPSETS[1]} without conversion), not {opset!r}")


def check_length_fits(model, length: int) -> None:
    """Refuses a ``--length`` whose check could not fit in memory: its batches hold at least
    ``CHECK_BATCH`` texts of ``length`` ids (int64) and their word vectors (float32)."""
    from .memory import human_bytes, total_memory
    width = _vector_width(model)
    need = CHECK_BATCH * (length + 5) * (8 + 4 * width)
    have = total_memory()
    if have and need > have:
        raise UsageError(f"--length {length:,} needs at least {human_bytes(need)} to trace and check the graph "
                         f"({CHECK_BATCH} texts of that many positions with {width}-wide word vectors), more than "
                         f"this machine's {human_bytes(have)} of memory")


def _vector_width(model) -> int:
    """The size of the model's word vectors (1 when it looks up none)."""
    try:
        module, _, _ = model.word_vectors()
        with torch.no_grad():
            return int(module(torch.zeros(1, 1, dtype=torch.long)).shape[-1])
    except Exception:                          # a model without one lookup: ids alone are the floor
        return 1


# loggers that print the exporter's own notices (a graph listing of a model with data-dependent
# shapes, attributes it defaults, opset conversions): nothing the user can act on
QUIET = ("torch.onnx", "torch.export", "torch._export", "torch.fx.experimental.symbolic_shapes",
         "torch._dynamo", "onnxscript", "onnx_ir")


def _trace(graph: ExportGraph, kind: ExampleKind, vocab_size: int, min_length: int, length: int | None, opset):
    """The ONNX program of ``graph`` (dynamo exporter), its notices kept out of the user's terminal."""
    loggers = [logging.getLogger(name) for name in QUIET]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    # the exporter swaps in a while-loop GRU / LSTM (free lengths) by editing the ops' kernels,
    # which a dispatch cache filled by an earlier export in this process hides: clear it
    for op in (torch.ops.aten.gru.input, torch.ops.aten.lstm.input):
        op._dispatch_cache.clear()
    try:
        # torch.export prints the partial graph of each capture strategy that fails before one
        # succeeds to stderr itself; a failed export still raises its error
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")            # the exporter's own notices, not the user's concern
            return torch.onnx.export(graph, sample_inputs(kind, vocab_size, min_length, length), dynamo=True,
                                     input_names=list(INPUTS[kind]), output_names=["logits", "probs"],
                                     opset_version=opset,
                                     dynamic_shapes=dynamic_shapes(kind, min_length, length is not None))
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _compare(graph: ExportGraph, session, names, checks) -> tuple[float, float]:
    """The largest difference between onnxruntime's and PyTorch's outputs over ``checks``: in
    probabilities, and in logits relative to their size (probabilities near 0 or 1 hide logit errors)."""
    diff = diff_logits = 0.0
    for check in checks:
        got = session.run(["logits", "probs"], {n: a.numpy() for n, a in zip(names, check)})
        with torch.no_grad():
            want = graph(*check)
        diff = max(diff, float((torch.from_numpy(got[1]) - want[1]).abs().max()))
        diff_logits = max(diff_logits, float(((torch.from_numpy(got[0]) - want[0]).abs()
                                              / want[0].abs().clamp_min(1.0)).max()))
    return diff, diff_logits


def export_run(run_dir, out_dir, length: int | None = None, opset: int | None = None, log=print) -> dict:
    """Export the run in ``run_dir`` to ``out_dir`` (see the module docstring); its manifest."""
    from .api import Classifier
    check_opset(opset)
    run, out = Path(run_dir), Path(out_dir)
    clf = Classifier.load(run)
    if clf.kind not in INPUTS:
        raise DataError(run, None, f"a {clf.kind} model ({clf.config.model}) reads a parse per text, which an "
                                   f"ONNX graph cannot; export supports text, pair and contexts models")
    if out.resolve() == run.resolve():
        raise DataError(out, None, "--out is the run directory itself: export into another directory")
    if out.exists() and not out.is_dir():
        raise DataError(out, None, "--out is a file, not a directory")
    if length is not None:                     # before an earlier export in --out is removed
        check_length_fits(clf.model, length)
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("export.json", "model.onnx", PIECES):     # nothing of an earlier export survives a failed one
        (out / stale).unlink(missing_ok=True)
    onnx_path = out / "model.onnx"
    done = export_model(clf.model, clf.kind, clf.labels.multilabel, len(clf.encoder.vocab), onnx_path, length, opset)
    pieces = (run / PIECES).is_file()                       # a subword run: text is split by its word pieces
    for name in ["vocab.json", "labels.json", "config.json"] + ([PIECES] if pieces else []):
        shutil.copyfile(run / name, out / name)
    tokenise = f"{PIECES} (the tokenizers library's file; no special tokens)" if pieces else \
        "vocab.json's tokenizer settings"
    manifest = {
        "format": "onnx", "model": clf.config.model, "kind": clf.kind, "file": onnx_path.name,
        "inputs": list(INPUTS[clf.kind]), "outputs": ["logits", "probs"],
        "probabilities": "sigmoid" if clf.labels.multilabel else "softmax",
        "length": length, "max_length": clf.config.max_length,
        "fixed_length": clf.model.fixed_length or None,
        "encoding": f"tokenise with {tokenise}; ids from vocab.json's tokens (else 1, <unk>); cut at "
                    "max_length (and fixed_length, length when set); an empty text is one <unk> (an empty pair or context has length 0); pad with 0 to the "
                    "batch's longest text and at least min_length positions (exactly length when set)",
        "labels": clf.labels.labels,
        **done, "source": str(run.resolve()),
    }
    write_atomic(out / "export.json", manifest)
    log(f"exported {clf.config.model} to {onnx_path} ({onnx_path.stat().st_size / 2 ** 20:.1f} MiB); "
        f"onnxruntime against PyTorch on {len(done['check']['batches'])} random batches: largest probability "
        f"difference {done['check']['max_abs_diff_probs']:.1e}")
    return manifest
