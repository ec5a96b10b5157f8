"""Where adaptext keeps what it computes once and reuses: token stores, transformer-derived
vectors, teacher logits, parses. ``$ADAPTEXT_CACHE``, else ``~/.cache/adaptext``; ``adaptext cache``
lists it and ``adaptext cache --clear`` empties it.

The cache root may be a folder the user shares with other things (``$ADAPTEXT_CACHE=~/data``),
so only the cache's own kinds, each a fixed folder name directly under the root, are ever listed
or removed: a kind is never a path, and a kind folder that is a link loses the link, not what it
points to."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..errors import UsageError

KINDS = ("stores", "vectors", "teacher_logits", "parses")


def cache_root() -> Path:
    return Path(os.environ.get("ADAPTEXT_CACHE") or Path.home() / ".cache" / "adaptext")


def cache_dir(kind: str) -> Path:
    """The folder of one kind of cached thing; the only way a path into the cache is made."""
    if kind not in KINDS:
        raise UsageError(f"{kind!r} is not a kind of the cache (choose from {', '.join(KINDS)})")
    return cache_root() / kind


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else 0


def entries() -> list[dict]:
    """One row per cached thing: its kind (the cache's subfolder), name and size in bytes."""
    rows = []
    for kind in KINDS:
        folder = cache_dir(kind)
        if folder.is_symlink() or not folder.is_dir():
            continue
        for item in sorted(folder.iterdir()):
            if item.name == "hashes.json":          # the stores' memo of file hashes, not an entry
                continue
            size = folder_size(item) if item.is_dir() else item.stat().st_size
            rows.append({"kind": kind, "name": item.name, "bytes": size, "path": str(item)})
    return rows


def clear(kind: str | None = None) -> int:
    """Remove every kind of the cache, or one (stores, vectors, ...); the bytes freed. Nothing
    else under the cache root is touched."""
    freed = 0
    for folder in [cache_dir(k) for k in (KINDS if kind is None else (kind,))]:
        if folder.is_symlink():
            folder.unlink()
        elif folder.is_dir():
            freed += folder_size(folder)
            shutil.rmtree(folder)
    return freed
