"""A run's configuration as ``runs.options.resolve`` returns it and every layer below reads it:
each run option an attribute (``cfg.lr``, ``cfg.data``), typed and defaulted where
``contract`` declares it, and the model's own options in ``model_options`` (the fields of
the model's config dataclass, checked by it). Frozen: a changed configuration is a new one
(``dataclasses.replace``), so what a run wrote to config.json is what it ran with.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .data.readers import ReadOptions
from .contract import (DEFAULT_MODEL, OPTIONS, DataOptions, DistillationOptions, EngineOptions, OptimisationOptions,
                       OutputOptions, TextOptions)


@dataclass(frozen=True)
class RunConfig(OutputOptions, DistillationOptions, EngineOptions, OptimisationOptions, TextOptions, ReadOptions,
                DataOptions):
    model: str = DEFAULT_MODEL
    model_options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_flat(cls, flat: dict[str, Any]) -> RunConfig:
        """From one flat mapping (option name -> value): the run options by name, every other key
        but ``model`` one of the model's options."""
        run = {k: v for k, v in flat.items() if k in OPTIONS or k == "model"}
        return cls(**run, model_options={k: v for k, v in flat.items() if k not in run})

    def flat(self) -> dict[str, Any]:
        """The flat mapping again: ``model``, every run option, the model's options."""
        return {"model": self.model, **{k: getattr(self, k) for k in OPTIONS}, **self.model_options}

    def replace(self, **changes: Any) -> RunConfig:
        """This configuration with some run options changed."""
        return dataclasses.replace(self, **changes)

    @property
    def columns(self) -> dict[str, Any]:
        """The options the file readers take (columns, encoding), by name."""
        from .contract import READER_KEYS
        return {k: getattr(self, k) for k in READER_KEYS}
