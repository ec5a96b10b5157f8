"""One run from its splits: prepare the data -> build the model -> train it (best dev epoch) ->
evaluate it on dev and test -> save the run directory."""
from __future__ import annotations

import shutil
import time
from pathlib import Path


from ..data.datasets import Splits
from ..errors import DataError
from ..runs.files import read_weights
from ..runs.threads import use_threads
from .engine import fit, quiet_engine
from .outputs import evaluate, run_info, save
from .prepare import prepare
from ..config import RunConfig


def fit_one(cfg: RunConfig, splits: Splits, out: Path, resume: bool = False, log=print, extra=()) -> dict:
    """Train, evaluate and save one run on ``splits`` (train, dev, test); its metrics. Empty on
    the processes of a distributed run other than rank 0. ``extra``: more Lightning callbacks."""
    import lightning as L
    quiet_engine()
    started = time.perf_counter()
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    use_threads(cfg.threads)
    prepared = prepare(cfg, splits.train, splits.dev, splits.test, splits.kind, splits.multilabel, log)
    model = prepared.spec.build_model(prepared.vectors)
    if cfg.init and not resume:           # a resumed run's checkpoint holds every weight
        start_from(model, cfg.init, log)
    fitted = fit(cfg, model, prepared, out, resume, started, extra)
    if fitted is None:
        return {}
    model.to(fitted.device)     # the engine's teardown leaves it on the CPU: a GPU run tests on the GPU
    metrics, labels, predictions = evaluate(model, prepared)
    model.cpu()
    prepared.spec.labels = labels
    metrics["info"] = run_info(cfg, model, prepared, fitted, splits.bad.count, splits.bad.filtered)
    save(out, prepared.spec, model, metrics, fitted, predictions)
    if not cfg.keep_checkpoints:      # resume state of a finished run: its weights are in model.safetensors
        shutil.rmtree(out / "checkpoints", ignore_errors=True)
    return metrics


def start_from(model, init: str, log=print) -> None:
    """``--init``: the tensors of a weights file (or of a run directory's) in place of the model's
    own, each of the same name and shape; the model's other tensors stay as it built them."""
    path = Path(init) / "model.safetensors" if Path(init).is_dir() else Path(init)
    state = read_weights(path, "--init needs a model's weights (a safetensors file)")
    own = model.state_dict()
    foreign = next((name for name in state if name not in own), None)
    if foreign is not None:
        raise DataError(path, None, f"--init: {foreign!r} is not a tensor of this {type(model).__name__} "
                                    f"(weights of another model or of other options?)")
    resized = next((name for name in own if name in state and state[name].shape != own[name].shape), None)
    if resized is not None:
        raise DataError(path, None, f"--init: {resized!r} is {list(state[resized].shape)} there, "
                                    f"{list(own[resized].shape)} in this {type(model).__name__} (another size, "
                                    f"vocabulary or label set?)")
    model.load_state_dict(state, strict=False)
    log(f"init: {len(state)} of the model's {len(own)} tensors from {path}")
