"""One reader per real dataset format. Each yields typed examples and reports bad
lines as ``file:line: problem`` (raised, or skipped and counted under ``--on-bad-line skip``).

Files are read as bytes and split on ``\\n`` only, so a U+0085 inside a Latin-1 /
cp1252 line (MR, SUBJ) never splits it; ``.gz`` files are read transparently.
"""
from __future__ import annotations

import codecs
import csv
import gzip
import io
import itertools
import json
import re
from pathlib import Path
from typing import Iterator

from .errors import BadLines, DataError, UsageError
from .examples import ContextsExample, PairExample, TextExample, TreeExample, TreePairExample
from .trees import tree_from_brackets, tree_from_parents

ENCODINGS = ("auto", "utf-8", "cp1252", "latin-1")


def open_bytes(path) -> bytes:
    path = Path(path)
    if not path.exists():
        raise DataError(path, None, "no such file")
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.removeprefix(codecs.BOM_UTF8)      # a byte-order mark is not part of the first field


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
    data = open_bytes(path)
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for i, raw in enumerate(lines, 1):
        try:
            yield i, decode_line(raw.rstrip(b"\r"), path, i, encoding)
        except DataError as e:
            if bad is None:
                raise
            bad(path, i, e.problem)


def read_text(path, encoding: str = "utf-8", bad: BadLines | None = None) -> str:
    """The whole file decoded (for formats whose records may span lines). With ``bad``, a line
    that does not decode is reported and, under ``skip``, read as an empty line, so the lines
    after it keep their numbers."""
    data = open_bytes(path)
    if encoding != "auto":
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            pass
    good = dict(iter_lines(path, encoding, bad))
    return "\n".join(good.get(i, "") for i in range(1, data.count(b"\n") + 2))


def _where(path, lineno):
    return f"{path}:{lineno}"


def _check_text(text: str, path, lineno, bad: BadLines) -> bool:
    if not text.strip():
        bad(path, lineno, "empty text")
        return False
    return True


# ------------------------------------------------------------ Kim sentence files
def read_kim(path, bad: BadLines | None = None, encoding: str = "auto", label_names: dict | None = None):
    """``label text`` per line (MR, SUBJ, TREC ``.all``, SST ``stsa.*``)."""
    bad = bad or BadLines()
    out = []
    for i, line in iter_lines(path, encoding, bad):
        if not line.strip():
            continue
        label, _, text = line.strip().partition(" ")
        if not text.strip():
            bad(path, i, "expected 'label text', found no text after the label")
            continue
        if label_names is not None:
            if label not in label_names:
                bad(path, i, f"unknown label {label!r} (expected one of {sorted(label_names)})")
                continue
            label = label_names[label]
        out.append(TextExample(text.strip(), label, _where(path, i)))
    return out


def read_trec_raw(path, bad: BadLines | None = None, fine: bool = False, encoding: str = "auto"):
    """Raw TREC ``COARSE:fine question`` lines; 6 coarse classes or the 50 fine ones."""
    bad = bad or BadLines()
    out = []
    for i, line in iter_lines(path, encoding, bad):
        if not line.strip():
            continue
        label, _, text = line.strip().partition(" ")
        if ":" not in label:
            bad(path, i, f"expected 'COARSE:fine question', found label {label!r}")
            continue
        if not _check_text(text, path, i, bad):
            continue
        out.append(TextExample(text.strip(), label if fine else label.split(":")[0], _where(path, i)))
    return out


# ------------------------------------------------------------ fastText
def read_fasttext(path, bad: BadLines | None = None, encoding: str = "utf-8", prefix: str = "__label__"):
    """``__label__a [__label__b ...] text``; several labels make a multi-label example."""
    bad = bad or BadLines()
    out = []
    for i, line in iter_lines(path, encoding, bad):
        if not line.strip():
            continue
        toks = line.split()
        labels = []
        while toks and toks[0].startswith(prefix):
            labels.append(toks.pop(0)[len(prefix):])
        if not labels:
            bad(path, i, f"no {prefix} label at the start of the line")
            continue
        text = " ".join(toks)
        if not _check_text(text, path, i, bad):
            continue
        label = labels[0] if len(labels) == 1 else tuple(dict.fromkeys(labels))
        out.append(TextExample(text, label, _where(path, i)))
    return out


# ------------------------------------------------------------ CSV rows
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


# ------------------------------------------------------------ Zhang CSV (AG News, ...)
def unescape_zhang(s: str) -> str:
    # the releases write a line break as "\n" (and, in AG News, often as a lone "\")
    return s.replace("\\n", "\n").replace("\\", " ")


def read_zhang_csv(path, bad: BadLines | None = None, encoding: str = "utf-8", class_names: list | None = None):
    """``"class","title","description"`` (1-based class index), ``""`` quotes, ``\\n`` escapes."""
    bad = bad or BadLines()
    path = Path(path)
    if class_names is None and (path.parent / "classes.txt").exists():
        class_names = [l for _, l in iter_lines(path.parent / "classes.txt", "utf-8") if l.strip()]
    text = read_text(path, encoding, bad)
    out = []
    for start, row in csv_rows(text, path, bad):
        if len(row) < 2:
            bad(path, start, f"expected class,title[,description...], found {len(row)} field(s)")
            continue
        cls = row[0].strip()
        if not cls.isdigit() or int(cls) < 1 or (class_names and int(cls) > len(class_names)):
            bad(path, start, f"class index {cls!r} is not a number in 1..{len(class_names) if class_names else 'N'}")
            continue
        body = " ".join(unescape_zhang(f).strip() for f in row[1:])
        if not _check_text(body, path, start, bad):
            continue
        label = class_names[int(cls) - 1] if class_names else cls
        out.append(TextExample(body, label, _where(path, start)))
    return out


# ------------------------------------------------------------ generic CSV / TSV
def _split_label(value: str, sep: str | None):
    if sep:
        parts = tuple(dict.fromkeys(p.strip() for p in value.split(sep) if p.strip()))
        return parts
    return value.strip()


def read_table(path, bad: BadLines | None = None, encoding: str = "utf-8", delimiter: str | None = None,
               text_col="text", pair_col=None, label_col="label", label_sep: str | None = None,
               header: bool = True):
    """Generic CSV/TSV with a header row. Columns by name (or 0-based index without header).
    ``label_sep`` splits a label column into a label set (multi-label)."""
    bad = bad or BadLines()
    path = Path(path)
    if delimiter is None:
        name = path.name.removesuffix(".gz")
        delimiter = "\t" if name.endswith((".tsv", ".txt")) else ","
    # TSV: quoted fields as pandas / csv write them; a line that does not parse so keeps its quotes
    rows = csv_rows(read_text(path, encoding, bad), path, bad, plain_fallback=delimiter == "\t", delimiter=delimiter)
    out = []
    first_line, first = next(rows, (None, None))
    if first is None:
        raise DataError(path, 1, "the file is empty")
    ti, pi, li = _table_columns(path, first, header, text_col, pair_col, label_col)
    width = len(first)                          # the header's (or first row's) fields
    need = max(x for x in (ti, pi, li) if x is not None) + 1
    if need > width:
        raise DataError(path, first_line, f"column index out of range: the first row has {width} field(s)")
    for start, row in (rows if header else itertools.chain([(first_line, first)], rows)):
        while len(row) > width and not row[-1].strip():   # trailing empty fields ("text,pos,")
            row = row[:-1]
        if len(row) > width:                      # never shift a text into the label column
            bad(path, start, f"expected {width} fields{' (as the header)' if header else ''}, found {len(row)} "
                             "(an unquoted delimiter inside a field?)")
            continue
        if len(row) < need:                       # a short row missing only unused columns is fine
            bad(path, start, f"expected at least {need} fields, found {len(row)}")
            continue
        txt = row[ti]
        if not _check_text(txt, path, start, bad):
            continue
        label = _split_label(row[li], label_sep) if li is not None else None
        if label is not None and (label == "" or label == ()):
            bad(path, start, "empty label")
            continue
        if pi is not None:
            if not _check_text(row[pi], path, start, bad):
                continue
            out.append(PairExample(txt, row[pi], label, _where(path, start)))
        else:
            out.append(TextExample(txt, label, _where(path, start)))
    return out


def _table_columns(path, first: list, header: bool, text_col, pair_col, label_col) -> tuple:
    """Field indices of the text, pair and label columns: by name in the header row ``first``,
    or as 0-based indices in a file without a header."""
    if not header:
        return (int(text_col), int(pair_col) if pair_col is not None else None,
                int(label_col) if label_col is not None else None)
    cols = {c.strip(): k for k, c in enumerate(first)}

    def idx(name, role):
        if name is None:
            return None
        if name not in cols:
            hint = ("; a file without a header, like AG News and the other Zhang et al. sets: --format zhang"
                    if first and first[0].strip().isdigit() else "")
            raise DataError(path, 1, f"no {role} column {name!r} in the header (columns: "
                                     f"{shorten(', '.join(cols))}){hint}")
        fields = [k + 1 for k, c in enumerate(first) if c.strip() == name]
        if len(fields) > 1:
            raise DataError(path, 1, f"the {role} column {name!r} appears {len(fields)} times in the header "
                                     f"(fields {', '.join(map(str, fields))}): rename all but one")
        return cols[name]
    return idx(text_col, "text"), idx(pair_col, "pair"), idx(label_col, "label") if label_col else None


def shorten(text: str, limit: int = 200) -> str:
    """A piece of the user's file quoted in an error, cut to ``limit`` characters."""
    return text if len(text) <= limit else text[:limit] + f"... ({len(text):,} characters)"


# ------------------------------------------------------------ JSONL
def _json_label(value, path, i, bad, name_of=None):
    if isinstance(value, list):
        if not value:
            bad(path, i, "empty label list")
            return None
        return tuple(dict.fromkeys(str(v) for v in value))
    if value is None or value == "":
        bad(path, i, "missing label")
        return None
    value = str(value)
    return name_of(value) if name_of else value


def read_jsonl(path, bad: BadLines | None = None, encoding: str = "utf-8", text_col="text", pair_col=None,
               contexts_col=None, label_col="label", skip_labels=(), label_sep=None, unlabelled=False):
    """One JSON object per line. Pairs with ``pair_col``; a text with a list of contexts with
    ``contexts_col``; a JSON list (or ``label_sep``-joined string) as label gives multi-label.
    Examples whose label is in ``skip_labels`` (SNLI's ``-``) are left out and counted in
    ``bad.filtered``."""
    bad = bad or BadLines()
    out = []
    for i, line in iter_lines(path, encoding, bad):
        obj = _json_object(line, text_col, path, i, bad) if line.strip() else None
        if obj is None:
            continue
        label = None
        if not unlabelled:
            label = _jsonl_label(obj, label_col, skip_labels, label_sep, path, i, bad)
            if label is None:
                continue
        example = _jsonl_example(obj, obj[text_col], label, pair_col, contexts_col, path, i, bad)
        if example is not None:
            out.append(example)
    return out


def _json_object(line: str, text_col: str, path, i: int, bad: BadLines):
    """The line's JSON object, if it is one with a non-empty text; else the problem is reported."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        return bad(path, i, f"invalid JSON ({e.msg} at column {e.colno})")
    if not isinstance(obj, dict):
        return bad(path, i, "expected a JSON object")
    if text_col not in obj:
        return bad(path, i, f"no {text_col!r} field")
    if not isinstance(obj[text_col], str):
        return bad(path, i, f"{text_col!r} must be a string, found {type(obj[text_col]).__name__}")
    return obj if _check_text(obj[text_col], path, i, bad) else None


def _jsonl_label(obj: dict, label_col: str, skip_labels, label_sep, path, i: int, bad: BadLines):
    if label_col not in obj:
        return bad(path, i, f"no {label_col!r} field")
    raw = obj[label_col]
    if isinstance(raw, str) and raw in skip_labels:
        return bad.filter(f"label {raw!r}")
    if isinstance(raw, str) and label_sep:
        raw = [p.strip() for p in raw.split(label_sep) if p.strip()]
    return _json_label(raw, path, i, bad)


def _jsonl_example(obj: dict, txt: str, label, pair_col, contexts_col, path, i: int, bad: BadLines):
    where = _where(path, i)
    if contexts_col:
        ctx = obj.get(contexts_col)
        ctx = [ctx] if isinstance(ctx, str) else ctx
        if not isinstance(ctx, list) or not ctx or not all(isinstance(c, str) and c.strip() for c in ctx):
            return bad(path, i, f"{contexts_col!r} must be a non-empty list of non-empty texts")
        return ContextsExample(txt, tuple(ctx), label, where)
    if pair_col:
        p = obj.get(pair_col)
        if not isinstance(p, str):
            return bad(path, i, f"no {pair_col!r} text")
        return PairExample(txt, p, label, where) if _check_text(p, path, i, bad) else None
    return TextExample(txt, label, where)


def read_nli_jsonl(path, bad: BadLines | None = None, encoding: str = "utf-8"):
    """SNLI / MultiNLI / SciTail JSONL: the hypothesis (sentence2) is the text, modelled with
    the premise (sentence1) as context; gold label ``-`` (no consensus) is skipped and counted."""
    return read_jsonl(path, bad, encoding, text_col="sentence2", pair_col="sentence1", label_col="gold_label",
                      skip_labels=("-",))


# ------------------------------------------------------------ SICK
def read_sick(path, bad: BadLines | None = None, encoding: str = "utf-8"):
    """SICK tab-separated files with a header (SemEval split files or the full SICK.txt).
    The hypothesis (sentence_B) is the text; the premise (sentence_A) its context."""
    bad = bad or BadLines()
    lines = iter_lines(path, encoding, bad)
    try:
        _, head = next(lines)
    except StopIteration:
        raise DataError(path, 1, "the file is empty") from None
    cols = {c.strip(): k for k, c in enumerate(head.split("\t"))}
    label_col = "entailment_judgment" if "entailment_judgment" in cols else "entailment_label"
    for need in ("sentence_A", "sentence_B", label_col):
        if need not in cols:
            raise DataError(path, 1, f"no {need!r} column in the header (columns: {shorten(', '.join(cols))})")
    a, b, lab = cols["sentence_A"], cols["sentence_B"], cols[label_col]
    pid = cols.get("pair_ID")
    out = []
    for i, line in lines:
        if not line.strip():
            continue
        f = line.split("\t")
        if len(f) < len(cols):
            bad(path, i, f"expected {len(cols)} tab-separated fields, found {len(f)}")
            continue
        if not f[a].strip() or not f[b].strip():
            bad(path, i, "empty sentence")
            continue
        where = _where(path, i) + (f"#pair_ID={f[pid]}" if pid is not None else "")
        out.append(PairExample(f[b].strip(), f[a].strip(), f[lab].strip(), where))
    return out


def read_sick_ids(path, encoding: str = "utf-8") -> dict:
    """pair_ID -> (label, premise, hypothesis) from a SICK file, for joining parsed trees."""
    out = {}
    for ex in read_sick(path, encoding=encoding):
        out[ex.where.split("#pair_ID=")[-1]] = ex
    return out


def read_sick_trees(folder, sick_file, bad: BadLines | None = None):
    """``parsed/{split}/{a,b}.toks`` + ``{a,b}.cparents`` joined on ``id.txt`` with a SICK file's
    labels: tree pairs (hypothesis tree first, premise tree as its pair)."""
    bad = bad or BadLines()
    folder = Path(folder)
    labels = read_sick_ids(sick_file)
    ids = [l.strip() for _, l in iter_lines(folder / "id.txt", "utf-8")]
    cols = {}
    for name in ("a.toks", "a.cparents", "b.toks", "b.cparents"):
        cols[name] = [l for _, l in iter_lines(folder / name, "utf-8")]
        if len(cols[name]) != len(ids):
            raise DataError(folder / name, None, f"{len(cols[name])} lines, but id.txt has {len(ids)}")
    out = []
    for k, pid in enumerate(ids):
        trees = []
        for side in "ab":
            try:
                parents = [int(x) for x in cols[f"{side}.cparents"][k].split()]
                trees.append(tree_from_parents(cols[f"{side}.toks"][k].split(" "), parents))
            except ValueError as e:
                bad(folder / f"{side}.cparents", k + 1, str(e))
                break
        if len(trees) < 2:
            continue
        if pid not in labels:
            bad(folder / "id.txt", k + 1, f"pair_ID {pid} not found in {sick_file}")
            continue
        out.append(TreePairExample(trees[1], trees[0], labels[pid].label, _where(folder / "id.txt", k + 1)))
    return out


# ------------------------------------------------------------ PTB trees (SST)
SST_FINE = {"0": "very negative", "1": "negative", "2": "neutral", "3": "positive", "4": "very positive"}
SST_BINARY = {"0": "negative", "1": "negative", "3": "positive", "4": "positive"}


def read_sst_trees(path, bad: BadLines | None = None, binary: bool = False, encoding: str = "utf-8"):
    """SST PTB trees: one ``TreeExample`` per sentence, every node labelled (the binary view
    maps 0/1 to negative, 3/4 to positive, and leaves neutral nodes unlabelled; sentences
    whose root is neutral are dropped)."""
    bad = bad or BadLines()
    names = SST_BINARY if binary else SST_FINE
    out = []
    for i, line in iter_lines(path, encoding, bad):
        if not line.strip():
            continue
        try:
            t = tree_from_brackets(line, labels_are="labels")
        except ValueError as e:
            bad(path, i, f"bad tree: {e}")
            continue
        unknown = [l for l in t.labels if l not in SST_FINE]
        if unknown:
            bad(path, i, f"node label {unknown[0]!r} is not an SST label 0-4")
            continue
        t = t.with_labels(names.get(l) for l in t.labels)
        if t.labels[t.root] is None:
            continue
        out.append(TreeExample(t, t.labels[t.root], _where(path, i)))
    return out


def subtree_words(t, i) -> list[str]:
    if t.left[i] < 0:
        return [t.words[i]]
    return subtree_words(t, t.left[i]) + subtree_words(t, t.right[i])


def sst_phrases(trees, dedupe: bool = True):
    """Every labelled node of SST trees as a text example (Kim 2014's phrase-level training).
    Repeated phrases (same lower-cased words) are kept once."""
    out, seen = [], set()
    for ex in trees:
        t = ex.tree
        spans = _spans(t)
        for i, lab in enumerate(t.labels):
            if lab is None:
                continue
            words = spans[i]
            key = " ".join(words).lower()
            if dedupe:
                if key in seen:
                    continue
                seen.add(key)
            out.append(TextExample(" ".join(words), lab, ex.where))
    return out


def _spans(t) -> list[list[str]]:
    spans: list = [None] * len(t)
    for i in range(len(t)):       # post-order: children first
        spans[i] = [t.words[i]] if t.left[i] < 0 else spans[t.left[i]] + spans[t.right[i]]
    return spans


def trees_as_text(trees):
    return [TextExample(" ".join(ex.tree.leaves()), ex.label, ex.where) for ex in trees]


def read_ptb_file(path, bad: BadLines | None = None, encoding: str = "utf-8"):
    """A treebank ``.mrg`` file (trees may span lines): trees with POS tags at the leaves and
    phrase tags inside, -NONE- elements and function tags removed, binarised."""
    bad = bad or BadLines()
    text = read_text(path, encoding, bad)
    out, depth, start, buf, line = [], 0, 1, [], 1
    for ch in text:
        if ch == "\n":
            line += 1
        if ch == "(":
            if depth == 0:
                start, buf = line, []
            depth += 1
        if depth > 0:
            buf.append(ch)
        if ch == ")":
            depth -= 1
            if depth == 0:
                try:
                    out.append(TreeExample(tree_from_brackets("".join(buf), labels_are="tags", clean=True),
                                           None, _where(path, start)))
                except ValueError as e:
                    bad(path, start, f"bad tree: {e}")
            elif depth < 0:
                bad(path, line, "unbalanced brackets: ')' without '('")
                depth = 0
    if depth > 0:
        bad(path, start, "unbalanced brackets: missing ')'")
    return out


# ------------------------------------------------------------ format dispatch
FORMATS = ("auto", "kim", "trec", "fasttext", "zhang", "csv", "tsv", "jsonl", "nli", "sick", "sst-trees")


def detect_format(path) -> str:
    name = Path(path).name.lower().removesuffix(".gz")
    if name.endswith((".jsonl", ".json")):
        return "nli" if _is_nli(path) else "jsonl"
    if name.endswith(".tsv"):
        return "tsv"
    if name.endswith(".csv"):
        return "csv"
    if name.startswith("sick"):
        return "sick"
    head = [line for _, line in itertools.islice(
        ((i, l) for i, l in iter_lines(path, "auto") if l.strip()), SNIFF_LINES)]
    if not head:
        raise DataError(path, None, "the file is empty")
    if any(line.startswith("__label__") for line in head):    # fastText, even if line 1 lacks its label
        return "fasttext"
    line = head[0]
    if "\t" in line.split(" ", 1)[0]:              # a tab before any space: a TSV named .txt
        return "tsv"
    if line.startswith("("):
        return "sst-trees"
    if re.fullmatch(r"[A-Z]+:\S+", line.split(" ", 1)[0]):
        return "trec"
    return "kim"


SNIFF_LINES = 50          # non-blank lines a format is guessed from


def _is_nli(path) -> bool:
    """An SNLI / MultiNLI / SciTail JSONL file (sentence1, sentence2, gold_label), whose gold
    label '-' means 'no consensus' and is skipped."""
    try:
        first = next((line for _, line in iter_lines(path, "utf-8") if line.strip()), "")
        obj = json.loads(first)
    except (DataError, json.JSONDecodeError):
        return False                    # the reader reports it with its line
    return isinstance(obj, dict) and {"sentence1", "sentence2", "gold_label"} <= obj.keys()


def read_file(path, fmt: str = "auto", bad: BadLines | None = None, encoding: str | None = None,
              text_col="text", pair_col=None, contexts_col=None, label_col="label", label_sep=None, **kw):
    """Read any supported file into examples; ``fmt="auto"`` guesses from name and content."""
    bad = bad or BadLines()
    if encoding and encoding != "auto":
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise UsageError(f"unknown encoding {encoding!r} (e.g. utf-8, cp1252, latin-1, or auto)") from None
    auto, fmt = fmt == "auto", detect_format(path) if fmt == "auto" else fmt
    if auto and fmt == "nli" and (text_col, pair_col, contexts_col, label_col) != ("text", None, None, "label"):
        fmt = "jsonl"                     # SNLI's fields, but the columns the user named

    enc = encoding or ("auto" if fmt in ("kim", "trec") else "utf-8")
    if fmt == "kim":
        return read_kim(path, bad, enc)
    if fmt == "trec":
        return read_trec_raw(path, bad, fine=kw.get("fine", False), encoding=enc)
    if fmt == "fasttext":
        return read_fasttext(path, bad, enc)
    if fmt == "zhang":
        return read_zhang_csv(path, bad, enc)
    if fmt in ("csv", "tsv"):
        return read_table(path, bad, enc, delimiter="\t" if fmt == "tsv" else ",", text_col=text_col,
                          pair_col=pair_col, label_col=label_col, label_sep=label_sep)
    if fmt == "jsonl":
        return read_jsonl(path, bad, enc, text_col=text_col, pair_col=pair_col, contexts_col=contexts_col,
                          label_col=label_col, label_sep=label_sep,
                          skip_labels=("-",) if label_col == "gold_label" else ())   # SNLI's 'no consensus'
    if fmt == "nli":
        return read_nli_jsonl(path, bad, enc)
    if fmt == "sick":
        return read_sick(path, bad, enc)
    if fmt == "sst-trees":
        return read_sst_trees(path, bad, binary=kw.get("binary", False), encoding=enc)
    raise UsageError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
