"""One reader per real dataset format, and the formats by name (``read_file``, ``file_format``).
Each reader yields typed examples and reports bad lines as ``file:line: problem`` (raised, or
skipped and counted under ``--on-bad-line skip``); files are read through ``lines``."""
from __future__ import annotations

import codecs
import dataclasses
import functools
import itertools
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from .csvrows import csv_rows
from ..errors import BadLines, DataError, UsageError
from .examples import ContextsExample, PairExample, TextExample
from .lines import iter_lines, location, text_lines
from .tree_readers import read_sst_trees

def streamed(reader):
    """``read_x(...)``: the list of a file's examples; ``read_x.stream(...)``: the same examples
    one by one as the file is read (a corpus larger than memory)."""
    @functools.wraps(reader)
    def read(*args, **kw):
        return list(reader(*args, **kw))
    read.stream = reader
    return read


def _check_text(text: str, path, lineno, bad: BadLines) -> bool:
    if not text.strip():
        bad(path, lineno, "empty text")
        return False
    return True


# ------------------------------------------------------------ Kim sentence files
def _label_and_text(path, encoding, bad: BadLines):
    """(line number, label, text) of each non-blank ``label text`` line."""
    for i, line in iter_lines(path, encoding, bad):
        if line.strip():
            label, _, text = line.strip().partition(" ")
            yield i, label, text


@streamed
def read_kim(path, bad: BadLines | None = None, encoding: str = "auto", label_names: dict | None = None):
    """``label text`` per line (MR, SUBJ, TREC ``.all``, SST ``stsa.*``)."""
    bad = bad or BadLines()
    for i, label, text in _label_and_text(path, encoding, bad):
        if not text.strip():
            bad(path, i, "expected 'label text', found no text after the label")
            continue
        if label_names is not None:
            if label not in label_names:
                bad(path, i, f"unknown label {label!r} (expected one of {sorted(label_names)})")
                continue
            label = label_names[label]
        yield TextExample(text.strip(), label, location(path, i))


@streamed
def read_trec_raw(path, bad: BadLines | None = None, fine: bool = False, encoding: str = "auto"):
    """Raw TREC ``COARSE:fine question`` lines; 6 coarse classes or the 50 fine ones."""
    bad = bad or BadLines()
    for i, label, text in _label_and_text(path, encoding, bad):
        if ":" not in label:
            bad(path, i, f"expected 'COARSE:fine question', found label {label!r}")
            continue
        if not _check_text(text, path, i, bad):
            continue
        yield TextExample(text.strip(), label if fine else label.split(":")[0], location(path, i))


# ------------------------------------------------------------ fastText
@streamed
def read_fasttext(path, bad: BadLines | None = None, encoding: str = "utf-8", prefix: str = "__label__"):
    """``__label__a [__label__b ...] text``; several labels make a multi-label example."""
    bad = bad or BadLines()
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
        yield TextExample(text, label, location(path, i))


# ------------------------------------------------------------ Zhang CSV (AG News, ...)
def unescape_zhang(s: str) -> str:
    # the releases write a line break as "\n" (and, in AG News, often as a lone "\")
    return s.replace("\\n", "\n").replace("\\", " ")


@streamed
def read_zhang_csv(path, bad: BadLines | None = None, encoding: str = "utf-8", class_names: list | None = None):
    """``"class","title","description"`` (1-based class index), ``""`` quotes, ``\\n`` escapes."""
    bad = bad or BadLines()
    path = Path(path)
    if class_names is None and (path.parent / "classes.txt").exists():
        class_names = [l for _, l in iter_lines(path.parent / "classes.txt", "utf-8") if l.strip()]
    for start, row in csv_rows(text_lines(path, encoding, bad), path, bad):
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
        yield TextExample(body, label, location(path, start))


# ------------------------------------------------------------ generic CSV / TSV
def _split_label(value: str, sep: str | None):
    if sep:
        parts = tuple(dict.fromkeys(p.strip() for p in value.split(sep) if p.strip()))
        return parts
    return value.strip()


@streamed
def read_table(path, bad: BadLines | None = None, encoding: str = "utf-8", delimiter: str | None = None,
               header: bool = True, **columns):
    """Generic CSV/TSV with a header row. ``columns``: ``ReadOptions`` by name, columns by name (or
    0-based index without header; ``label_col=None``: no labels); ``label_sep`` splits a label
    column into a label set (multi-label)."""
    bad, o = bad or BadLines(), ReadOptions(**columns)
    path = Path(path)
    if delimiter is None:
        name = path.name.removesuffix(".gz")
        delimiter = "\t" if name.endswith((".tsv", ".txt")) else ","
    # TSV: quoted fields as pandas / csv write them; a line that does not parse so keeps its quotes
    rows = csv_rows(text_lines(path, encoding, bad), path, bad, plain_fallback=delimiter == "\t", delimiter=delimiter)
    first_line, first = next(rows, (None, None))
    if first is None:
        raise DataError(path, 1, "the file is empty")
    ti, pi, li = _table_columns(path, first, header, o.text_col, o.pair_col, o.label_col)
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
        label = _split_label(row[li], o.label_sep) if li is not None else None
        if label is not None and (label == "" or label == ()):
            bad(path, start, "empty label")
            continue
        if pi is not None:
            if not _check_text(row[pi], path, start, bad):
                continue
            yield PairExample(txt, row[pi], label, location(path, start))
        else:
            yield TextExample(txt, label, location(path, start))


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


@streamed
def read_jsonl(path, bad: BadLines | None = None, encoding: str = "utf-8", skip_labels=(), unlabelled=False,
               **columns):
    """One JSON object per line; ``columns``: ``ReadOptions`` by name. Pairs with ``pair_col``; a
    text with a list of contexts with ``contexts_col``; a JSON list (or ``label_sep``-joined
    string) as label gives multi-label. Examples whose label is in ``skip_labels`` (SNLI's ``-``)
    are left out and counted in ``bad.filtered``."""
    bad, o = bad or BadLines(), ReadOptions(**columns)
    for i, line in iter_lines(path, encoding, bad):
        obj = _json_object(line, o.text_col, path, i, bad) if line.strip() else None
        if obj is None:
            continue
        label = None
        if not unlabelled:
            label = _jsonl_label(obj, o.label_col, skip_labels, o.label_sep, path, i, bad)
            if label is None:
                continue
        example = _jsonl_example(obj, obj[o.text_col], label, o.pair_col, o.contexts_col, path, i, bad)
        if example is not None:
            yield example


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
    where = location(path, i)
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


@streamed
def read_nli_jsonl(path, bad: BadLines | None = None, encoding: str = "utf-8"):
    """SNLI / MultiNLI / SciTail JSONL: the hypothesis (sentence2) is the text, modelled with
    the premise (sentence1) as context; gold label ``-`` (no consensus) is skipped and counted."""
    yield from read_jsonl.stream(path, bad, encoding, text_col="sentence2", pair_col="sentence1",
                                 label_col="gold_label", skip_labels=("-",))


# ------------------------------------------------------------ SICK
@streamed
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
        where = location(path, i, f[pid] if pid is not None else None)
        yield PairExample(f[b].strip(), f[a].strip(), f[lab].strip(), where)


# ------------------------------------------------------------ formats by name
def _column(default, help: str, aliases: tuple = ()):
    return field(default=default, metadata={"help": help, "aliases": aliases})


@dataclass(frozen=True)
class ReadOptions:
    """What the user said about a file's columns (csv, tsv, jsonl). Declared here once: the run
    options of the same names (``contract``) are these fields, with their help."""
    text_col: str = _column("text", "CSV/TSV/JSONL column or field of the text")
    pair_col: str | None = _column(None, "column or field of the second text (pairs)", aliases=("--text-pair-col",))
    contexts_col: str | None = _column(None, "JSONL field holding a list of context texts")
    label_col: str = _column("label", "column or field of the label")
    label_sep: str | None = _column(None, "split the label column on this string: a label set (multi-label)")

    @property
    def default_columns(self) -> bool:
        return self == ReadOptions(label_sep=self.label_sep)


COLUMNS = tuple(f.name for f in dataclasses.fields(ReadOptions) if f.name.endswith("_col"))   # the options naming a column


@dataclass(frozen=True)
class Format:
    """A file format: its reader ``read(path, bad, encoding, options)``, the file names it is
    recognised by, and the content it is recognised by (``rank``: which content rule is tried
    first). ``encoding``: its default ("auto" for the classic sentence files: utf-8, else cp1252)."""
    name: str
    read: Callable
    by_name: Callable | None = None          # (path, lower-case name without .gz) -> bool
    by_content: Callable | None = None       # (first non-blank lines) -> bool
    rank: int = 0
    encoding: str = "utf-8"
    trees: bool = False                      # its examples are parses (else texts, pairs or contexts)


_FORMATS: dict[str, Format] = {}
SNIFF_LINES = 50          # non-blank lines a format is guessed from


def register_format(name: str, *, by_name=None, by_content=None, rank: int = 0, encoding: str = "utf-8",
                    trees: bool = False):
    """Register ``read(path, bad, encoding, options)``, which yields a file's examples as it reads."""
    def deco(read):
        _FORMATS[name] = Format(name, read, by_name, by_content, rank, encoding, trees)
        return read
    return deco


def _suffix(*ends):
    return lambda path, name: name.endswith(ends)


@register_format("kim", by_content=lambda head: True, rank=9, encoding="auto")
def _kim(path, bad, encoding, o):
    return read_kim.stream(path, bad, encoding)


@register_format("trec", by_content=lambda head: bool(re.fullmatch(r"[A-Z]+:\S+", head[0].split(" ", 1)[0])),
                 rank=3, encoding="auto")
def _trec(path, bad, encoding, o):
    return read_trec_raw.stream(path, bad, encoding=encoding)


# fastText, even if line 1 lacks its label
@register_format("fasttext", by_content=lambda head: any(l.startswith("__label__") for l in head), rank=0)
def _fasttext(path, bad, encoding, o):
    return read_fasttext.stream(path, bad, encoding)


@register_format("zhang")
def _zhang(path, bad, encoding, o):
    return read_zhang_csv.stream(path, bad, encoding)


@register_format("csv", by_name=_suffix(".csv"))
def _csv(path, bad, encoding, o):
    return read_table.stream(path, bad, encoding, ",", **asdict(o))


# a tab before any space on the first line: a TSV named .txt
@register_format("tsv", by_name=_suffix(".tsv"), by_content=lambda head: "\t" in head[0].split(" ", 1)[0], rank=1)
def _tsv(path, bad, encoding, o):
    return read_table.stream(path, bad, encoding, "\t", **asdict(o))


@register_format("jsonl", by_name=lambda path, name: name.endswith((".jsonl", ".json")) and not _is_nli(path))
def _jsonl(path, bad, encoding, o):
    return read_jsonl.stream(path, bad, encoding, skip_labels=("-",) if o.label_col == "gold_label" else (),
                             **asdict(o))                                  # SNLI's 'no consensus'


@register_format("nli", by_name=lambda path, name: name.endswith((".jsonl", ".json")) and _is_nli(path))
def _nli(path, bad, encoding, o):
    if not o.default_columns:             # SNLI's fields, but the columns the user named
        return _jsonl(path, bad, encoding, o)
    return read_nli_jsonl.stream(path, bad, encoding)


@register_format("sick", by_name=lambda path, name: name.startswith("sick"))
def _sick(path, bad, encoding, o):
    return read_sick.stream(path, bad, encoding)


# a file of parses: every line sniffed is one bracketed tree (a text file whose first line opens
# with a bracket is still a text file)
@register_format("sst-trees", by_content=lambda head: all(l.strip().startswith("(") and l.strip().endswith(")")
                                                          for l in head), rank=2, trees=True)
def _sst_trees(path, bad, encoding, o):
    return read_sst_trees(path, bad, encoding=encoding)


FORMATS = ("auto", *_FORMATS)


def format_by_name(path) -> str | None:
    """The format ``path``'s name says (``reviews.csv.gz``: csv), or None if it says none."""
    name = Path(path).name.lower().removesuffix(".gz")
    return next((f.name for f in _FORMATS.values() if f.by_name and f.by_name(path, name)), None)


def detect_format(path) -> str:
    """The format of ``path``: by its name, else by its first non-blank lines."""
    named = format_by_name(path)
    if named:
        return named
    head = [line for _, line in itertools.islice(
        ((i, l) for i, l in iter_lines(path, "auto") if l.strip()), SNIFF_LINES)]
    if not head:
        raise DataError(path, None, "the file is empty")
    rules = sorted(_FORMATS.values(), key=lambda f: f.rank)
    return next(f.name for f in rules if f.by_content and f.by_content(head))


def _is_nli(path) -> bool:
    """An SNLI / MultiNLI / SciTail JSONL file (sentence1, sentence2, gold_label), whose gold
    label '-' means 'no consensus' and is skipped."""
    try:
        first = next((line for _, line in iter_lines(path, "utf-8") if line.strip()), "")
        obj = json.loads(first)
    except (DataError, json.JSONDecodeError):
        return False                    # the reader reports it with its line
    return isinstance(obj, dict) and {"sentence1", "sentence2", "gold_label"} <= obj.keys()


def check_encoding(encoding: str | None) -> None:
    """Refuse an encoding Python does not know (None: the reader's default; auto: UTF-8, else cp1252)."""
    if encoding and encoding != "auto":
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise UsageError(f"unknown encoding {encoding!r} (e.g. utf-8, cp1252, latin-1, or auto)") from None


def file_format(path, fmt: str = "auto", encoding: str | None = None) -> Format:
    """The format a file is read in: ``fmt``, or with ``auto`` guessed from its name and content."""
    check_encoding(encoding)
    if fmt != "auto" and fmt not in _FORMATS:
        raise UsageError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    return _FORMATS[detect_format(path) if fmt == "auto" else fmt]


def stream_file(path, fmt: str = "auto", bad: BadLines | None = None, encoding: str | None = None, **columns):
    """A file's examples one by one, as it is read; ``fmt="auto"`` guesses from name and content;
    ``columns``: ``ReadOptions`` by name."""
    f = file_format(path, fmt, encoding)
    return f.read(path, bad or BadLines(), encoding or f.encoding, ReadOptions(**columns))


def read_file(path, fmt: str = "auto", bad: BadLines | None = None, encoding: str | None = None, **columns):
    """Every example of a supported file, as a list; ``fmt="auto"`` guesses from name and content."""
    return list(stream_file(path, fmt, bad, encoding, **columns))
