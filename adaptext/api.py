"""Load a run directory and predict: ``clf = adaptext.load(RUN_DIR); clf.predict(["..."])``."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np
import torch

from .data.batching import Batch, Item
from .errors import UsageError
from .data.examples import Example
from .runs.inputs import as_input_list
from .runs.pipeline import Pipeline
from .runs.spec import RunSpec


class Classifier:
    """A trained model with everything needed to turn raw input into predictions."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self.model, self.encoder, self.collate = pipeline.model, pipeline.encoder, pipeline.collate
        self.labels, self.kind, self.config = pipeline.labels, pipeline.kind, pipeline.spec.config
        self.entry = pipeline.spec.entry

    @classmethod
    def load(cls, run_dir: str | Path, device: str | torch.device = "cpu") -> "Classifier":
        spec = RunSpec.load(run_dir)
        model = spec.load_model(run_dir)
        try:
            model.to(device)
        except (RuntimeError, AssertionError) as e:     # "gpu", or cuda on a machine without one
            raise UsageError(f"device {device!r}: {str(e).splitlines()[0]}") from None
        if spec.entry.needs_tags:              # a missing tagger is said now, not at the first prediction
            from .data.tags import PhraseLabeller, get_tagger
            get_tagger(spec.config.tagger)
            PhraseLabeller.load_default()
        return cls(Pipeline(spec, model))

    def as_examples(self, inputs: Iterable[Any]) -> list[Example]:
        """Strings, dicts ({"text", "pair"} / {"text", "contexts"} / {"tree"}, or the fields the run
        was trained with: its --text-col / --pair-col / --contexts-col) or examples."""
        return self.pipeline.examples(inputs)

    def tokens(self, text: str) -> list[str]:
        """The tokens of ``text`` the model reads (cut where the run cuts texts)."""
        toks = self.encoder.tokens(text)
        return toks[: self.encoder.max_length] if self.encoder.max_length else toks

    def batch(self, inputs: Iterable[Any]) -> tuple[Batch, list[Item]]:
        """The model's batch of ``inputs``, encoded as ``predict`` encodes them."""
        items = self.pipeline.items(inputs)
        return self.collate(items), items

    def predict_proba(self, inputs: Iterable[Any], batch_size: int = 64) -> np.ndarray:
        _check_batch_size(batch_size)
        return self.pipeline.probabilities(self.pipeline.items(as_input_list(inputs)), batch_size)

    def predict(self, inputs: Iterable[Any], batch_size: int = 64) -> list[dict[str, Any]]:
        """[{"label": ..., "probs": {label: p}}] (multi-label: also "labels": [...], most probable
        first, and "label" the most probable);
        "truncated": true where a text was longer than the run's max_length (or than the
        model's fixed length, e.g. DenseCNN's 300 positions), so only its beginning was read."""
        _check_batch_size(batch_size)
        return self.pipeline.predict(inputs, batch_size)

    def explain(self, inputs: Iterable[Any], label: str | None = None, steps: int = 50) -> list[dict[str, Any]]:
        """Which words each prediction rests on: integrated gradients over the word vectors,
        toward ``label`` (default: the predicted one). One record per input: "label", "target",
        "segments" [{"name", "tokens", "scores"}], and the completeness check ("logit",
        "baseline_logit", "attribution_sum", "gap", "steps"); see ``adaptext.explain.word_report``."""
        from .explain.word_report import explain_inputs
        return explain_inputs(self, inputs, label, steps)

    def predict_stream(self, inputs: Iterable[Any], batch_size: int = 64) -> Iterator[dict[str, Any]]:
        """``predict`` over an iterable of any length (the lines of a file larger than memory),
        yielding one decision per input as it goes."""
        _check_batch_size(batch_size)
        return self.pipeline.predict_stream(inputs, batch_size)


def _check_batch_size(batch_size: object) -> None:
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise UsageError(f"batch_size must be a whole number of at least 1, not {batch_size!r}")

