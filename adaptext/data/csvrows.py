"""CSV rows with recovery: a malformed row costs only itself, never the rows around it or a
made-up row from its pieces. The CSV, TSV and Zhang readers read their rows here."""
from __future__ import annotations

import csv
import io
import re

from .errors import BadLines


def csv_rows(text: str, path, bad: BadLines, plain_fallback: bool = False, **fmt):
    """``(line, row)`` for each non-blank row of CSV ``text`` (``fmt``: ``csv.reader`` options),
    ``line`` where the row starts (a quoted field may span lines).

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
    lines = io.StringIO(text, newline="").readlines()
    delim = fmt.get("delimiter", ",")
    opens_field = re.compile(f'(^|{re.escape(delim)})"')
    n, offset = len(lines), 0
    while offset < n:
        reader = csv.reader(map(lines.__getitem__, range(offset, n)), strict=True, **fmt)   # no copy per restart
        lineno = offset + 1
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                end = offset + reader.line_num          # the line where the csv module noticed
                if plain_fallback:
                    row = lines[lineno - 1].rstrip("\r\n").split(delim)
                    if any(f.strip() for f in row):
                        yield lineno, row
                    restart = lineno
                elif end >= n and "end of data" in str(e):
                    bad(path, lineno, "unclosed quote: this row's quoted field runs to the end of the file")
                    restart = lineno
                else:
                    bad(path, lineno, f"malformed CSV row ({e})")
                    restart = lineno if end == lineno or opens_field.search(lines[end - 1]) else end
                break
            start, lineno = lineno, offset + reader.line_num + 1
            if row and not (len(row) == 1 and not row[0].strip()):
                yield start, row
        offset = restart                    # 0-based index of the line to read next
