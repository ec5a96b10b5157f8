"""Files written whole or not at all: each is written to a fresh temporary name beside it and
renamed onto its path, so a killed write leaves no half file, and processes writing the same path
at once (students distilled side by side from one teacher, folds sharing a vocabulary) each write
their own. Files get the permissions of any file the user writes (the umask's), not mkstemp's 0600."""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def written_atomically(path: str | os.PathLike[str], suffix: str = ".tmp") -> Iterator[Path]:
    """A temporary file beside ``path`` for the block to write, then moved onto ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_atomic(path: str | os.PathLike[str], data: str | bytes | dict[str, Any] | list[Any]) -> None:
    """Text, bytes, or a dict or list as indented JSON (tuples as lists, numbers of numpy or torch
    as numbers), written atomically."""
    if isinstance(data, (dict, list)):
        data = json.dumps(data, indent=2, default=_json_default) + "\n"
    with written_atomically(path) as tmp:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data, encoding="utf-8")


def _json_default(o: object) -> Any:
    if isinstance(o, (tuple, set)):
        return list(o)
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"cannot write {type(o).__name__} to JSON")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
