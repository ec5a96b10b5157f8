"""Inference, one way for every caller (training's final evaluation, the Python API,
``adaptext predict`` / ``evaluate``, the service, export):

    examples -> items -> batches -> probabilities -> decisions

``Pipeline`` holds a run's spec and model and carries inputs along that line."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

import numpy as np
import torch

from ..data.batching import Batch, Collator, Encoder, Item, StoredItems
from ..data.loading import ItemDataset, Items, inference_batches
from ..data.store import StoredSplit
from ..errors import BadLines, UsageError
from ..data.examples import Example
from ..data.text import LabelMap
from ..registry import TextClassifier, get_entry
from .inputs import InputReader, as_input_list
from ..memory import MemoryGuard
from ..config import RunConfig
from .metrics import decide
from .spec import RunSpec


def collator(model: TextClassifier, labels: LabelMap) -> Collator:
    """Batches padded as the model needs (at least its widest filter, or its fixed length)."""
    return Collator(len(labels), labels.multilabel, model.min_length, model.fixed_length)


def tag(examples: list[Example], config: RunConfig) -> list[Example]:
    """Trees of a tag-guided model get POS tags (leaves) and phrase tags (inner nodes)."""
    if not examples or not get_entry(config.model).needs_tags:
        return examples
    from ..data.tags import PhraseLabeller, get_tagger, tag_examples
    return tag_examples(examples, get_tagger(config.tagger), PhraseLabeller.load_default())


def predict_probs(model: TextClassifier, items: Items, collate: Collator, multilabel: bool,
                  batch_size: int = 256) -> np.ndarray:
    """[len(items), classes] probabilities (softmax; sigmoid for multi-label), in the items' order."""
    return model_outputs(model, items, collate, lambda logits: probabilities(logits, multilabel), batch_size)


@torch.no_grad()
def model_outputs(model: TextClassifier, items: Items, collate: Collator,
                  transform: Callable[[torch.Tensor], torch.Tensor], batch_size: int = 256,
                  representations: HeadInputs | None = None) -> np.ndarray:
    """[len(items), classes] of ``transform(logits)``, batch by batch, in the items' order; with
    ``representations``, what the head read for each item is kept there too."""
    if model.training:                    # a recursive call over every module: not for each small request
        model.eval()
    out = np.zeros((len(items), collate.num_classes), dtype=np.float32)
    data = ItemDataset(items)
    pos = {index: k for k, index in enumerate(data.indices())}
    device, guard = next(model.parameters()).device, MemoryGuard()
    for batch in inference_batches(data, batch_size, collate):
        batch = to_device(batch, device)
        rows = [pos[int(i)] for i in batch.index]
        out[rows] = transform(logits_of(model(batch))).float().cpu().numpy()
        if representations is not None:
            representations.put(rows)
        guard.check()             # batches of every length fragment the heap: 3 GB for 8k reviews untrimmed
    return out


class HeadInputs:
    """What a model's classifier head reads (its sentence representation), item by item, kept
    while ``model_outputs`` runs with it (``with HeadInputs(model, len(items)) as kept``; then
    ``kept.array``): the second target of a student (--feature-weight)."""

    def __init__(self, model: TextClassifier, count: int):
        self.head = getattr(model, "head", None)
        if not isinstance(self.head, torch.nn.Module):
            raise UsageError(f"{type(model).__name__} has no classifier head whose input could be read")
        self.count, self.array = count, np.zeros((0, 0), dtype=np.float32)
        self.last: torch.Tensor | None = None

    def __enter__(self) -> HeadInputs:
        assert self.head is not None, "checked in __init__"
        self.hook = self.head.register_forward_pre_hook(self.keep)
        return self

    def __exit__(self, *exc: object) -> None:
        self.hook.remove()

    def keep(self, module: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> None:
        self.last = args[0]

    def put(self, rows: list[int]) -> None:
        assert self.last is not None, "the head ran on the batch"
        if not self.array.size:
            self.array = np.zeros((self.count, self.last.shape[-1]), dtype=np.float32)
        self.array[rows] = self.last.float().cpu().numpy()
        self.last = None


def logits_of(out: torch.Tensor | dict[str, torch.Tensor]) -> torch.Tensor:
    return out["logits"] if isinstance(out, dict) else out


def probabilities(logits: torch.Tensor, multilabel: bool) -> torch.Tensor:
    return torch.sigmoid(logits) if multilabel else torch.softmax(logits, dim=-1)


def to_device(batch: Batch, device: torch.device) -> Batch:
    if device.type == "cpu":
        return batch
    from lightning_utilities.core.apply_func import apply_to_collection
    moved: Batch = apply_to_collection(batch, torch.Tensor, lambda t: t.to(device))
    return moved


def gold(items: Items, labels: LabelMap) -> np.ndarray:
    """Class ids [N] (multi-hot [N, C] for multi-label) of labelled items."""
    found = ItemDataset(items).labels()
    if labels.multilabel:
        y = np.zeros((len(items), len(labels)), dtype=np.int64)
        for k, label in enumerate(found):
            y[k, label] = 1
        return y
    return np.asarray(found, dtype=np.int64)


def length_limit(max_length: int, fixed_length: int) -> int:
    """Where texts are cut: a model that reads a fixed number of positions (DenseCNN's 300) cuts
    there whatever the run's max_length, so such a cut is flagged like any other."""
    if max_length and fixed_length:
        return min(max_length, fixed_length)
    return max_length or fixed_length


class Pipeline:
    """A trained run's model with everything that turns raw input into predictions."""

    def __init__(self, spec: RunSpec, model: TextClassifier) -> None:
        self.spec, self.model = spec, model.eval()
        self.labels, self.kind = spec.labels, spec.kind
        limit = length_limit(spec.config.max_length, model.fixed_length)
        self.encoder = Encoder(spec.tokenizer, spec.vocab, spec.labels, spec.tag_vocab, limit)
        self.collate = collator(model, spec.labels)
        self.reader = InputReader(spec.kind, spec.config, self.encoder.tokens, limit)

    def examples(self, inputs: Iterable[Any], start: int = 0) -> list[Example]:
        return tag(self.reader.examples(inputs, start=start), self.spec.config)

    def items(self, inputs: Iterable[Any], start: int = 0) -> list[Item]:
        """Encoded inputs, unlabelled; a text empty after tokenisation is read as one unknown word."""
        return self.items_of(self.examples(inputs, start))

    def items_of(self, examples: list[Example]) -> list[Item]:
        """``items`` of examples already read (and tagged)."""
        items = self.encoder.encode(examples, with_labels=False)
        for k, it in enumerate(items):
            it.index = k
            if it.text is not None and len(it.text) == 0:
                it.text = np.asarray([1], dtype=np.int64)
        return items

    def labelled_items(self, examples: list[Example] | StoredSplit, bad: BadLines | None = None) -> Items:
        """Items of labelled examples (a list, or a split of a token store) the run can score."""
        if isinstance(examples, StoredSplit):
            return StoredItems(examples, self.spec.vocab, self.labels, self.encoder.max_length, bad)
        return self.encoder.encode(tag(examples, self.spec.config), bad)

    def probabilities(self, items: Items, batch_size: int = 256) -> np.ndarray:
        return predict_probs(self.model, items, self.collate, self.labels.multilabel, batch_size)

    def logits(self, items: Items, batch_size: int = 256, representations: HeadInputs | None = None) -> np.ndarray:
        return model_outputs(self.model, items, self.collate, lambda logits: logits, batch_size, representations)

    def predict(self, inputs: Iterable[Any], batch_size: int = 64, start: int = 0) -> list[dict[str, Any]]:
        items = self.items(as_input_list(inputs), start)
        probs = self.probabilities(items, batch_size)
        return [self.decision(p, pred, it.truncated)
                for p, pred, it in zip(probs, decide(probs, self.labels.multilabel, self.labels.threshold), items)]

    def predict_stream(self, inputs: Iterable[Any], batch_size: int = 64,
                       chunk: int = 2048) -> Iterator[dict[str, Any]]:
        """Decisions for an iterable of inputs of any length, in order, ``chunk`` inputs at a time:
        memory holds one chunk, whatever the length of the stream."""
        start, pending = 0, list[Any]()
        for x in inputs:
            pending.append(x)
            if len(pending) == chunk:
                yield from self.predict(pending, batch_size, start)
                start, pending = start + chunk, []
        if pending:
            yield from self.predict(pending, batch_size, start)

    def decision(self, p: np.ndarray, pred: np.ndarray, truncated: bool) -> dict[str, Any]:
        """{"label", "probs"} (multi-label: also "labels", most probable first); "truncated": true
        where only the beginning of a text was read."""
        names = self.labels.labels
        d: dict[str, Any] = {"probs": {l: round(float(v), 6) for l, v in zip(names, p)}}
        if self.labels.multilabel:
            d["labels"] = [names[j] for j in sorted(np.flatnonzero(pred), key=lambda j: -p[j])]
            d["label"] = d["labels"][0] if d["labels"] else None
        else:
            d["label"] = names[int(pred)]
        if truncated:
            d["truncated"] = True
        return d
