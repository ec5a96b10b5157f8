"""Where adaptext keeps what it computes once and reuses: token stores, transformer-derived
vectors, teacher logits, parses. ``$ADAPTEXT_CACHE``, else ``~/.cache/adaptext``; ``adaptext cache``
lists it and ``adaptext cache --clear`` empties it."""
from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path


def cache_root() -> Path:
    return Path(os.environ.get("ADAPTEXT_CACHE") or Path.home() / ".cache" / "adaptext")


@contextmanager
def written_atomically(path: Path, suffix: str = ".tmp"):
    """A fresh temporary file beside ``path`` for the block to write, then moved onto ``path``: a
    killed write leaves no half entry, and processes filling the same entry at once (students
    distilled side by side from one teacher, folds sharing a vocabulary) each write their own file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else 0


def entries() -> list[dict]:
    """One row per cached thing: its kind (the cache's subfolder), name and size in bytes."""
    root = cache_root()
    rows = []
    for kind in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
        for item in sorted(kind.iterdir()):
            if item.name == "hashes.json":          # the stores' memo of file hashes, not an entry
                continue
            size = folder_size(item) if item.is_dir() else item.stat().st_size
            rows.append({"kind": kind.name, "name": item.name, "bytes": size, "path": str(item)})
    return rows


def clear(kind: str | None = None) -> int:
    """Remove the cache (or one kind of it: stores, vectors, ...); the bytes freed."""
    root = cache_root() / kind if kind else cache_root()
    freed = folder_size(root)
    shutil.rmtree(root, ignore_errors=True)
    return freed
