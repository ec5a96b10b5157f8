"""Training: the Lightning engine behind ``adaptext train`` (``train_run``)."""
from .run import train_run

__all__ = ["train_run"]
