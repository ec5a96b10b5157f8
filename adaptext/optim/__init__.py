"""The optimisers a run may choose, by name (``OPTIMIZERS``: the ``--optimizer`` choices are its
keys). Each factory builds ``(model, lr, weight_decay) -> optimizer``; embedding matrices go in a
group apart (``rows.param_groups``), so Adadelta and Adagrad update only the rows a batch uses.
torch is imported when an optimiser is built, not here: the command line checks ``--optimizer``
without it."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    import torch


def _adam(model: torch.nn.Module, lr: float, weight_decay: float) -> torch.optim.Optimizer:
    import torch
    from .rows import param_groups
    return torch.optim.Adam(param_groups(model), lr=lr, weight_decay=weight_decay)


def _adagrad(model: torch.nn.Module, lr: float, weight_decay: float) -> torch.optim.Optimizer:
    from .rows import Adagrad, param_groups
    return Adagrad(param_groups(model), lr=lr, weight_decay=weight_decay)


def _adadelta(model: torch.nn.Module, lr: float, weight_decay: float) -> torch.optim.Optimizer:
    from .rows import Adadelta, param_groups
    return Adadelta(param_groups(model), lr=lr, rho=0.95, eps=1e-6, weight_decay=weight_decay)   # Kim 2014


def _sgd(model: torch.nn.Module, lr: float, weight_decay: float) -> torch.optim.Optimizer:
    import torch
    from .rows import param_groups
    return torch.optim.SGD(param_groups(model), lr=lr, momentum=0.9, weight_decay=weight_decay)


OPTIMIZERS: dict[str, Callable[..., torch.optim.Optimizer]] = {
    "adam": _adam, "adagrad": _adagrad, "adadelta": _adadelta, "sgd": _sgd}
