"""Training: the Lightning engine behind ``adaptext train`` (``train_run``), ``adaptext
distill`` (``distill_run``) and ``adaptext sweep`` (``sweep_run``)."""
from .distill import distill_run
from .run import train_run
from .sweep import sweep_run

__all__ = ["distill_run", "sweep_run", "train_run"]
