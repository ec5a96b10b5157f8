"""Which words a prediction rests on, for any model: integrated gradients over the word vectors
(Sundararajan, Taly & Yan 2017), computed by Captum.

A word's attribution is (x - x') . the mean gradient of the explained logit along the straight
path from the baseline x' (every word vector zero: the padding vector) to the text's vectors x.
By completeness, the attributions of an input sum to logit(x) - logit(x'); what is left over
(the integral's approximation error) is reported as the gap, and the number of steps doubles
until the gap is under the tolerance.

Every model turns word ids into vectors through one module (``TextClassifier.word_vectors``).
While explaining, each real token of the batch (texts, pairs, contexts, tree leaves) gets an id
of its own past that module's rows, and the module answers those ids with rows of the tensor
Captum differentiates. So a position's gradient reaches it through whatever slicing, joining or
gathering the model does with its ids, and no model needs code of its own for this. A model
that reads the ids for more than the lookup reads the words' own ids through the module's
``source_ids``: fastText's hashed bigram vectors are the text's own along the whole path, so they
belong to the baseline and the words share only what their own vectors add.
"""
from __future__ import annotations

import dataclasses
import threading
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import MissingResource, UsageError
from ..runs.pipeline import logits_of

TOLERANCE = 0.01       # the gap as a share of |logit(x) - logit(x')|
NOISE = 1e-4           # a gap this small (in logits) is float rounding, whatever the share
MAX_STEPS = 800


@dataclass
class Field:
    """The real tokens of one id tensor of a batch: where they are, whose they are."""
    name: str                  # text | pair | contexts | tree | pair_tree
    mask: torch.Tensor         # bool, the shape of the ids
    example: torch.Tensor      # [n] the batch row of each real token, in the tensor's order
    part: torch.Tensor         # [n] the context a token belongs to (0 outside contexts)


def _fields(batch) -> list[Field]:
    out = []
    for name, lens_name in (("text", "lengths"), ("pair", "pair_lengths")):
        ids = getattr(batch, name)
        if ids is not None:
            lens = getattr(batch, lens_name)
            mask = torch.arange(ids.shape[1])[None, :] < lens[:, None]
            out.append(Field(name, mask, mask.nonzero()[:, 0], torch.zeros(int(mask.sum()), dtype=torch.long)))
    if batch.contexts is not None:
        mask = torch.arange(batch.contexts.shape[2])[None, None, :] < batch.context_lengths[:, :, None]
        where = mask.nonzero()
        out.append(Field("contexts", mask, where[:, 0], where[:, 1]))
    for name in ("tree", "pair_tree"):
        tree = getattr(batch, name)
        if tree is not None:
            mask = tree.left < 0
            out.append(Field(name, mask, tree.tree_of[mask], torch.zeros(int(mask.sum()), dtype=torch.long)))
    return out


def _ids_of(batch, name: str) -> torch.Tensor:
    return getattr(batch, name).words if name in ("tree", "pair_tree") else getattr(batch, name)


def _coded(batch, fields: list[Field], first: int):
    """A copy of ``batch`` whose real tokens carry the ids first, first + 1, ... in field order."""
    new, start = dataclasses.replace(batch), first
    for f in fields:
        ids = _ids_of(batch, f.name).clone()
        n = int(f.mask.sum())
        ids[f.mask] = torch.arange(start, start + n, dtype=ids.dtype)
        start += n
        if f.name in ("tree", "pair_tree"):
            setattr(new, f.name, dataclasses.replace(getattr(batch, f.name), words=ids))
        else:
            setattr(new, f.name, ids)
    return new


# The replaced lookup is the model's own module, shared by every thread of the process (the
# service explains in a thread pool): one explanation at a time replaces it. Predictions read
# by other threads meanwhile are unchanged, since their ids all fall below the replaced rows.
_REPLACING = threading.Lock()


@contextmanager
def _looked_up(module: torch.nn.Module, rows: int, vectors: dict, ids: torch.Tensor):
    """While inside, ``module`` answers an id ``rows + p`` with ``vectors["now"][p]`` (the other
    ids as before), and its ``source_ids`` (where it has one) gives back ``ids[p]``, the word's
    own id."""
    with _REPLACING:
        plain = module.forward
        module.forward = _lookup_with(plain, rows, vectors)
        sourced = hasattr(module, "source_ids")
        if sourced:
            # an instance attribute over the method; deleted on the way out
            setattr(module, "source_ids", lambda coded: torch.where(
                coded >= rows, ids[(coded - rows).clamp(0, len(ids) - 1)], coded))
        try:
            yield
        finally:
            del module.forward
            if sourced:
                del module.source_ids


def _lookup_with(plain, rows: int, vectors: dict):
    """``plain``'s lookup, with ids from ``rows`` on answered by rows of ``vectors["now"]``."""
    def forward(ids):
        real = ids >= rows
        out = plain(ids.masked_fill(real, 0))
        table = vectors["now"]
        picked = table[(ids - rows).clamp(0, table.shape[0] - 1)]
        return torch.where(real[..., None], picked.to(out.dtype), out)
    return forward


def token_ids(model, batch, fields) -> torch.Tensor:
    """[P] the lookup's ids of the batch's P real tokens, in field order."""
    _, _, to_rows = model.word_vectors()
    return to_rows(torch.cat([_ids_of(batch, f.name)[f.mask] for f in fields]))


def word_vectors_of(model, batch, fields) -> torch.Tensor:
    """[P, D] the vectors the model gives the batch's P real tokens, in field order."""
    module, _, _ = model.word_vectors()
    return module(token_ids(model, batch, fields)).detach()


def _targets(model, batch, target) -> tuple[torch.Tensor, torch.Tensor]:
    """(the class explained, the class predicted) per example."""
    with torch.no_grad():
        predicted = logits_of(model(batch)).argmax(1)
    if target is None:
        return predicted, predicted
    return torch.as_tensor(target, dtype=torch.long).expand(predicted.shape[0]), predicted


def integrated_gradients(model, batch, target=None, steps: int = 50, tolerance: float = TOLERANCE,
                         max_steps: int = MAX_STEPS) -> dict:
    """Attributions of the real tokens of ``batch`` to the logit of ``target`` (a class id, one
    per example, or None: each example's predicted class).

    Returns {"fields", "scores" [P], "target" [B], "predicted" [B], "logit" [B], "baseline_logit"
    [B], "gap" [B] (|sum of an example's scores - (logit - baseline_logit)| / |logit -
    baseline_logit|), "steps"}:
    steps double from ``steps`` until every example's gap is within ``tolerance`` (or under
    ``NOISE`` logits), or ``max_steps`` is reached."""
    try:
        from captum.attr import IntegratedGradients
    except ImportError as e:  # pragma: no cover - depends on the optional extra
        raise MissingResource("word attributions need Captum: pip install 'adaptext[explain]'") from e
    model.eval()
    module, rows, to_rows = model.word_vectors()
    shift = rows - int(to_rows(torch.tensor([rows]))[0])       # ids the model renumbers before the lookup
    fields = _fields(batch)
    coded = _coded(batch, fields, rows + shift)
    x = word_vectors_of(model, batch, fields)
    example = torch.cat([f.example for f in fields])
    target, predicted = _targets(model, batch, target)
    state = {"now": x}

    def forward(vectors):
        state["now"] = vectors
        logits = logits_of(model(coded))
        return logits.gather(1, target[:, None]).sum().reshape(1)

    def logit_at(vectors):
        # with gradients on, as the attributions are computed: without them a model may take an
        # inference shortcut that skips the word vectors replaced here (Kim CNN's projection table)
        state["now"] = vectors
        return logits_of(model(coded)).gather(1, target[:, None])[:, 0].detach()

    with _looked_up(module, rows, state, token_ids(model, batch, fields)):
        end, start = logit_at(x), logit_at(torch.zeros_like(x))
        ig = IntegratedGradients(forward)
        while True:
            attr = ig.attribute(x, baselines=torch.zeros_like(x), n_steps=steps, internal_batch_size=x.shape[0])
            scores = attr.sum(-1).detach()
            total = torch.zeros_like(end).index_add_(0, example, scores)
            missing = (total - (end - start)).abs()
            gap = missing / (end - start).abs().clamp_min(1e-12)
            if bool(((gap <= tolerance) | (missing <= NOISE)).all()) or steps * 2 > max_steps:
                break
            steps *= 2
    return {"fields": fields, "scores": scores.numpy(), "target": target.numpy(), "predicted": predicted.numpy(),
            "logit": end.numpy(),
            "baseline_logit": start.numpy(), "gap": gap.numpy(), "steps": steps}


def per_example(result: dict, b: int) -> list[tuple[str, np.ndarray]]:
    """The scores of example ``b`` of a batch: (segment, scores) for its text, pair, each
    context (context1, context2, ...) or tree(s), in reading order."""
    out, start = [], 0
    for f in result["fields"]:
        n = len(f.example)
        own = (f.example == b).numpy()
        scores, parts = result["scores"][start:start + n][own], f.part.numpy()[own]
        start += n
        if f.name == "contexts":
            out += [(f"context{k + 1}", scores[parts == k]) for k in sorted(set(parts.tolist()))]
        else:
            out.append((f.name, scores))
    return out


def check_steps(steps: int) -> None:
    """Integration steps from 1 to ``MAX_STEPS``: the steps are a forward and a backward pass
    each, and Captum's buffers grow with them (a million steps asked for terabytes)."""
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS:
        raise UsageError(f"--steps must be a whole number from 1 to {MAX_STEPS}, not {steps!r}")


def check_explainable(model) -> None:
    try:
        model.word_vectors()
    except NotImplementedError as e:
        raise UsageError(str(e)) from None
