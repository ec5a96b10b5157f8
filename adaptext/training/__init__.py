"""Training: the Lightning engine behind ``adaptext train`` (``train_run``) and ``adaptext
distill`` (``distill_run``)."""
from .distill import distill_run
from .run import train_run

__all__ = ["distill_run", "train_run"]
