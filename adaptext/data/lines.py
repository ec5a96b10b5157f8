"""The lines of a data file: read as bytes and split on ``\\n`` only, so a U+0085 inside a
Latin-1 / cp1252 line (MR, SUBJ) never splits it; ``.gz`` read transparently; a line that does
not decode reported at its number. Every reader, of rows or of trees, reads files through here."""
from __future__ import annotations

import codecs
import gzip
from pathlib import Path
from typing import Iterator

from ..errors import BadLines, DataError
from .examples import Location


def raw_lines(path) -> Iterator[bytes]:
    """The lines of a file as bytes, without their line endings, read as a stream (a file larger
    than memory is never held whole); ``.gz`` is read transparently, a byte-order mark dropped."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, None, "no such file")
    if path.is_dir():
        raise DataError(path, None, "a directory, not a file")
    with open(path, "rb") as probe:
        gz = probe.read(2) == b"\x1f\x8b"
    with (gzip.open(path, "rb") if gz else open(path, "rb", buffering=1 << 20)) as f:
        first = True
        for raw in f:                    # binary lines end at b"\n" only
            if first:
                raw, first = raw.removeprefix(codecs.BOM_UTF8), False
            yield raw.rstrip(b"\n").rstrip(b"\r")


def decode_line(raw: bytes, path, lineno: int, encoding: str) -> str:
    """``auto``: UTF-8, else cp1252, else Latin-1 (which never fails)."""
    if encoding == "auto":
        for enc in ("utf-8", "cp1252", "latin-1"):
            try:
                return raw.decode(enc)
            except UnicodeDecodeError:
                continue
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as e:
        raise DataError(path, lineno, f"byte 0x{raw[e.start]:02x} at column {e.start + 1} is not valid "
                        f"{encoding} (try --encoding cp1252 or latin-1)") from None


def iter_lines(path, encoding: str = "auto", bad: BadLines | None = None) -> Iterator[tuple[int, str]]:
    """(line number, text without its line ending) for every line of a file. A line that does not
    decode raises, or with ``bad`` is reported to it (and, under ``skip``, left out)."""
    for i, raw in enumerate(raw_lines(path), 1):
        try:
            yield i, decode_line(raw, path, i, encoding)
        except DataError as e:
            if bad is None:
                raise
            bad(path, i, e.problem)


def text_lines(path, encoding: str = "utf-8", bad: BadLines | None = None) -> Iterator[str]:
    """Every line decoded, with a line ending (for formats whose records may span lines). With
    ``bad``, a line that does not decode is reported and, under ``skip``, read as an empty line,
    so the lines after it keep their numbers."""
    expected = 1
    for i, line in iter_lines(path, encoding, bad):
        yield from ["\n"] * (i - expected)
        expected = i + 1
        yield line + "\n"


def read_text(path, encoding: str = "utf-8", bad: BadLines | None = None) -> str:
    """The whole file decoded (small files whose records may span lines: treebanks)."""
    return "".join(text_lines(path, encoding, bad))


def location(path, lineno: int, pair_id: str | None = None) -> Location:
    """The Location of line ``lineno`` of the file at ``path`` (a str or a Path)."""
    return Location(str(path), lineno, pair_id)
