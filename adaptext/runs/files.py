"""Files of a run directory (config.json, model.safetensors, vocab.json, labels.json, metrics.json,
log.csv, plots/): every file is written to a temporary name and renamed (atomic), with the same
permissions as any file the user writes; no pickle."""
from __future__ import annotations

import contextlib
import csv
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..atomic import write_atomic, written_atomically
from ..errors import DataError

__all__ = ["write_atomic", "read_json", "save_weights", "load_weights", "write_jsonl", "write_csv", "writer_lock"]

if TYPE_CHECKING:
    import torch


def save_weights(model: torch.nn.Module, path: str | os.PathLike[str]) -> None:
    from safetensors.torch import save_file
    state = {k: v.detach().cpu().contiguous().clone() for k, v in model.state_dict().items()}
    with written_atomically(path, suffix=".safetensors") as tmp:
        save_file(state, str(tmp), metadata={"format": "adaptext"})


def read_weights(path: str | os.PathLike[str],
                 damaged: str = "the run directory is damaged") -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file; an unreadable file, or weights that are not finite, is a
    ``DataError`` naming the file (``damaged``: what that says to the user)."""
    import torch
    from safetensors import SafetensorError
    from safetensors.torch import load_file
    try:
        state = load_file(str(path))
    except (SafetensorError, OSError) as e:
        raise DataError(path, None, f"not a readable safetensors file ({e}): {damaged}") from None
    bad = next((k for k, v in state.items() if v.is_floating_point() and not torch.isfinite(v).all()), None)
    if bad is not None:        # a model with such weights predicts NaN for every text, not an answer
        raise DataError(path, None, f"weights that are not finite (NaN or inf) in {bad!r}: {damaged}")
    return state


def load_weights(model: torch.nn.Module, path: str | os.PathLike[str]) -> None:
    """The weights of ``path`` into ``model``; a damaged file, or weights of another model or size,
    is a ``DataError`` naming the file."""
    state = read_weights(path, "the run directory is damaged; train it again or restore the file")
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as e:
        first = next((l.strip() for l in str(e).splitlines()[1:] if l.strip()), str(e))
        raise DataError(path, None, f"weights that do not fit this run's config.json and vocab.json (copied from "
                                    f"another run?): {first}") from None


def write_jsonl(path: str | os.PathLike[str], rows: list[dict[str, Any]]) -> None:
    write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def write_csv(path: str | os.PathLike[str], rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    keys = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys)
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else (round(r[k], 6) if isinstance(r[k], float) else r[k])) for k in keys})
    write_atomic(path, buf.getvalue())


def read_json(path: str | os.PathLike[str]) -> Any:
    """A run directory's JSON file; a damaged one is a ``DataError`` naming file and line."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(path, None, "missing: not a finished run directory") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        line = getattr(e, "lineno", None)
        raise DataError(path, line, f"not valid JSON ({getattr(e, 'msg', e)}): the run directory is damaged") from None


@contextlib.contextmanager
def writer_lock(folder: str | os.PathLike[str], what: str = "run") -> Iterator[None]:
    """Held while one process writes ``folder`` (a run, a sweep): a second writer is refused at
    once, before it reads any data, instead of both finishing with one's files over the other's.
    The lock is the kernel's (``flock``), so a killed writer leaves no stale lock behind."""
    import fcntl
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    handle = open(path / ".lock", "a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        from .rundir import describe
        handle.seek(0)
        holder = describe(handle.read().strip())
        handle.close()
        raise DataError(path, None, f"{holder} is writing this {what} directory now; wait for it to finish, "
                                      "or choose another --out") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    try:
        yield
    finally:
        handle.close()
