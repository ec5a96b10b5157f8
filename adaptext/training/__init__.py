"""Training: the Lightning engine behind ``adaptext train`` (``train_run``), ``adaptext
distill`` (``distill_run``), ``adaptext logits`` (``logits_run``), ``adaptext sweep``
(``sweep_run``) and ``adaptext.fit`` (``fit_examples``)."""
from .run import distill_run, fit_examples, logits_run, train_run
from .sweep import sweep_run

__all__ = ["distill_run", "fit_examples", "logits_run", "sweep_run", "train_run"]
