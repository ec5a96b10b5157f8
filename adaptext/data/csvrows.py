"""CSV rows with recovery: a malformed row costs only itself, never the rows around it or a
made-up row from its pieces. The CSV, TSV and Zhang readers read their rows here."""
from __future__ import annotations

import csv
import re

from ..errors import BadLines


class _Window:
    """The lines of a stream by number, holding only those from the start of the row being read
    (a malformed row makes the reading start again at one of them)."""

    def __init__(self, lines):
        self.source, self.held, self.base, self.ended = iter(lines), [], 0, False

    def get(self, i: int):
        """Line ``i`` (0-based), or None past the end."""
        while i >= self.base + len(self.held) and not self.ended:
            try:
                self.held.append(next(self.source))
            except StopIteration:
                self.ended = True
        k = i - self.base
        return self.held[k] if 0 <= k < len(self.held) else None

    def since(self, i: int):
        while (line := self.get(i)) is not None:
            yield line
            i += 1

    def release(self, i: int) -> None:
        """Lines before ``i`` will not be read again."""
        if i > self.base:
            del self.held[:i - self.base]
            self.base = i

    def at_end(self, i: int) -> bool:
        return self.get(i) is None


def csv_rows(lines, path, bad: BadLines, plain_fallback: bool = False, **fmt):
    """``(line, row)`` for each non-blank row of CSV ``lines`` (an iterable of decoded lines with
    their endings, read as a stream; ``fmt``: ``csv.reader`` options), ``line`` where the row
    starts (a quoted field may span lines).

    A malformed row is reported at the line where it starts, and the reading starts again where
    no good row is lost and none is made of a bad one's pieces:
    - the csv module noticed on the row's own line: on the next line;
    - it noticed on a later line (a quote opened a field that ran on): if that line opens a
      quoted field itself (a quote at its start or after a delimiter), the earlier quote was a
      stray one and the lines it swallowed are rows of their own: on the line after the row's
      first; otherwise the multi-line field was real but malformed: after the line where the
      error showed;
    - a quote never closed (it would swallow the rest of the file): on the next line.
    ``plain_fallback`` (TSV, which rarely quotes): a row that does not parse with quoting is its
    line split at the delimiter, quotes kept as text (``pos<TAB>"Spirited Away" is ...``)."""
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))    # long documents are not malformed
    window = _Window(lines)
    delim = fmt.get("delimiter", ",")
    opens_field = re.compile(f'(^|{re.escape(delim)})"')
    offset = 0
    while not window.at_end(offset):
        reader = csv.reader(window.since(offset), strict=True, **fmt)
        lineno = offset + 1
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                end = offset + reader.line_num          # the line where the csv module noticed
                if plain_fallback:
                    row = window.get(lineno - 1).rstrip("\r\n").split(delim)
                    if any(f.strip() for f in row):
                        yield lineno, row
                    restart = lineno
                elif window.at_end(end) and "end of data" in str(e):
                    bad(path, lineno, "unclosed quote: this row's quoted field runs to the end of the file")
                    restart = lineno
                else:
                    bad(path, lineno, f"malformed CSV row ({e})")
                    restart = lineno if end == lineno or opens_field.search(window.get(end - 1)) else end
                break
            start, lineno = lineno, offset + reader.line_num + 1
            window.release(lineno - 1)
            if row and not (len(row) == 1 and not row[0].strip()):
                yield start, row
        offset = restart                    # 0-based index of the line to read next
