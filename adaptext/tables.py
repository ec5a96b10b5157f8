"""Markdown tables, written one way for every report (a sweep's trials, auto's report, the
benchmarks' results): a cell's ``|`` is escaped, and an empty cell is blank."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def markdown_table(header: Sequence[Any], rows: Iterable[Sequence[Any]]) -> str:
    """The table's lines, ending in a newline."""
    cells = [list(header), ["---"] * len(header), *rows]
    return "\n".join("| " + " | ".join(_cell(c) for c in row) + " |" for row in cells) + "\n"


def _cell(value: Any) -> str:
    return "" if value is None else str(value).replace("|", "\\|")
