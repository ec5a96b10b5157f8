"""Learning-rate schedules, as the factor of ``--lr`` at each training step: ``constant``, or
``linear`` decay to zero at the last planned step, the schedule BERT-style fine-tuning uses
(Devlin et al. 2019), which also lets a distilled student settle instead of ending on Adam's
full step. ``warmup``: the share of the steps over which the rate first rises from zero."""
from __future__ import annotations

from typing import Callable

SCHEDULES = ("constant", "linear")


def lr_factor(schedule: str, warmup: float, total_steps: int) -> Callable[[int], float]:
    """step -> the factor of the base learning rate, over ``total_steps`` planned steps."""
    total = max(1, total_steps)
    rise = int(warmup * total)

    def factor(step: int) -> float:
        if step < rise:
            return (step + 1) / rise
        if schedule == "constant":
            return 1.0
        return max(0.0, (total - step) / max(1, total - rise))
    return factor
