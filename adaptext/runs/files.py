"""Files of a run directory (config.json, model.safetensors, vocab.json, labels.json, metrics.json,
log.csv, plots/): every file is written to a temporary name and renamed (atomic), with the same
permissions as any file the user writes; no pickle."""
from __future__ import annotations

import contextlib
import csv
import io
import json
import os
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from ..data.errors import DataError


def write_atomic(path, data) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    if isinstance(data, (dict, list)):
        data = json.dumps(data, indent=2, default=_json_default) + "\n"
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(tmp, mode, **({} if mode == "wb" else {"encoding": "utf-8"})) as f:
        f.write(data)
    os.replace(tmp, path)


def _json_default(o):
    if isinstance(o, (tuple, set)):
        return list(o)
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"cannot write {type(o).__name__} to JSON")


def save_weights(model: torch.nn.Module, path) -> None:
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    state = {k: v.detach().cpu().contiguous().clone() for k, v in model.state_dict().items()}
    save_file(state, str(tmp), metadata={"format": "adaptext"})
    os.chmod(tmp, 0o666 & ~_umask())          # safetensors writes 0600; the run's other files follow the umask
    os.replace(tmp, path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def load_weights(model: torch.nn.Module, path) -> None:
    """The weights of ``path`` into ``model``; a damaged file, or weights of another model or size,
    is a ``DataError`` naming the file."""
    from safetensors import SafetensorError
    from ..data.errors import DataError
    try:
        state = load_file(str(path))
    except (SafetensorError, OSError) as e:
        raise DataError(path, None, f"not a readable safetensors file ({e}): the run directory is damaged") from None
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as e:
        first = next((l.strip() for l in str(e).splitlines()[1:] if l.strip()), str(e))
        raise DataError(path, None, f"weights that do not fit this run's config.json and vocab.json (copied from "
                                    f"another run?): {first}") from None


def write_jsonl(path, rows: list[dict]) -> None:
    write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def write_csv(path, rows: list[dict]) -> None:
    if not rows:
        return
    keys = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys)
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else (round(r[k], 6) if isinstance(r[k], float) else r[k])) for k in keys})
    write_atomic(path, buf.getvalue())


def read_json(path):
    """A run directory's JSON file; a damaged one is a ``DataError`` naming file and line."""
    from ..data.errors import DataError
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(path, None, "missing: not a finished run directory") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        line = getattr(e, "lineno", None)
        raise DataError(path, line, f"not valid JSON ({getattr(e, 'msg', e)}): the run directory is damaged") from None


@contextlib.contextmanager
def writer_lock(folder, what: str = "run"):
    """Held while one process writes ``folder`` (a run, a sweep): a second writer is refused at
    once, before it reads any data, instead of both finishing with one's files over the other's.
    The lock is the kernel's (``flock``), so a killed writer leaves no stale lock behind."""
    import fcntl
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    handle = open(folder / ".lock", "a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise DataError(folder, None, f"another adaptext process ({holder}) is writing this {what} directory; "
                                      "wait for it, or choose another --out") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    try:
        yield
    finally:
        handle.close()
