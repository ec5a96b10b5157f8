"""The token store: a data file read once, as a stream, tokenised in worker processes and kept
on disk as flat numpy arrays that later runs read back. A corpus larger than memory trains with
memory that does not grow with it, and a second run on the same file (another model, other
options, the next fold) starts at once.

A store belongs to a file's content, its format and column options, and a tokenizer; it holds
token ids of its own (strings in first-seen order), so any vocabulary a run chooses later
(``--min-freq``, ``--max-vocab``, counted on the training rows only) is a lookup table over
them. One folder per store under ``$ADAPTEXT_CACHE/stores`` (else ``~/.cache/adaptext``):

    tokens.i32          the token ids of every text, one text after another
    segments.npy        [S+1] where each text starts in ``tokens``
    examples.npy        [N+1] where each example's texts start in ``segments``: a text example
                        has one, a pair two (text, pair), a text with contexts 1 + K
    labels.npy          label ids (into ``meta.json``'s names) of every example, one after another
    label_offsets.npy   [N+1] where each example's labels start
    label_kinds.npy     [N] 0 unlabelled, 1 one label, 2 a label set (multi-label)
    lines.npy           [N] the line each example starts at, for errors and predictions
    strings.json        the token strings by id
    counts.npy          how often each token occurs in the whole file
    meta.json           source file, size and content hash, format, reader options, tokenizer,
                        example kind, bad lines skipped and lines left out by design
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..atomic import write_atomic
from .cache import cache_dir
from ..errors import BadLines, DataError
from .examples import ExampleKind, Location
from .readers import ReadOptions, file_format
from .text import Tokenizer, TokenizerConfig

VERSION = 3                   # 3: the word tokenizer keeps <unk> whole
CHUNK = 2000                  # examples per task handed to a worker
PARALLEL_FROM = 64 << 20      # files this large (bytes) are tokenised in worker processes by default
PROGRESS_FROM = 16 << 20      # and files this large show a progress bar


def stores_dir() -> Path:
    return cache_dir("stores")


# ------------------------------------------------------------------ the store, read
class TokenStore:
    """A built store. Its offsets and labels (a few bytes per example) are read into memory; its
    tokens are read from the file as a batch asks for them: never mapped into the process, so
    its memory does not grow over an epoch as the pages of a mapped file would (the operating
    system's page cache keeps the file, and gives that memory back when it is needed)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.meta = json.loads((self.folder / "meta.json").read_text(encoding="utf-8"))
        self._tokens = open(self.folder / "tokens.i32", "rb", buffering=0)
        load = lambda name: np.load(self.folder / f"{name}.npy")
        self.segments, self.examples, self.lines = load("segments"), load("examples"), load("lines")
        self.labels, self.label_offsets, self.label_kinds = load("labels"), load("label_offsets"), load("label_kinds")
        self._strings: list[str] | None = None

    @property
    def kind(self) -> ExampleKind:
        return ExampleKind(self.meta["kind"])

    @property
    def source(self) -> str:
        return self.meta["source"]

    @property
    def label_names(self) -> list:
        return self.meta["label_names"]

    @property
    def strings(self) -> list:
        if self._strings is None:
            self._strings = json.loads((self.folder / "strings.json").read_text(encoding="utf-8"))
        return self._strings

    def __len__(self) -> int:
        return len(self.lines)

    def where(self, row: int) -> Location:
        return Location(self.source, int(self.lines[row]))

    def texts(self, row: int) -> list:
        """The token ids (the store's) of each text of example ``row``: text, then pair or contexts."""
        a, b = self.examples[row], self.examples[row + 1]
        bounds = self.segments[a:b + 1]
        ids = self.read_tokens(int(bounds[0]), int(bounds[-1]))
        return [ids[bounds[k] - bounds[0]:bounds[k + 1] - bounds[0]] for k in range(b - a)]

    def read_tokens(self, lo: int, hi: int) -> np.ndarray:
        """Token ids ``lo`` to ``hi`` of the file."""
        if hi <= lo:
            return np.zeros(0, np.int32)
        if hasattr(os, "pread"):
            raw = os.pread(self._tokens.fileno(), (hi - lo) * 4, lo * 4)
        else:                                 # no pread (Windows): one reader at a time is enough here
            self._tokens.seek(lo * 4)
            raw = self._tokens.read((hi - lo) * 4)
        return np.frombuffer(raw, dtype=np.int32)

    def text_lengths(self, rows: np.ndarray, which: int = 0) -> np.ndarray:
        """Token counts of text ``which`` (0 the text, 1 the pair or first context) of each row."""
        seg = self.examples[:-1][rows] + which
        return (self.segments[seg + 1] - self.segments[seg]).astype(np.int64)

    def segment_lengths(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lengths of every text of the rows, the row each text belongs to)."""
        first, last = self.examples[:-1][rows], self.examples[1:][rows]
        counts = (last - first).astype(np.int64)
        seg = np.repeat(first, counts) + _ranks(counts)
        return (self.segments[seg + 1] - self.segments[seg]).astype(np.int64), np.repeat(np.arange(len(rows)), counts)

    def example_labels(self, row: int) -> np.ndarray:
        return self.labels[self.label_offsets[row]:self.label_offsets[row + 1]]

    def label_keys(self, rows: np.ndarray) -> list:
        """The label each row is stratified by (the last of a label set), as a name; None unlabelled."""
        names = self.label_names
        ends = self.label_offsets[1:][rows]
        labelled = self.label_kinds[rows] > 0
        ids = np.where(labelled, self.labels[np.maximum(ends - 1, 0)] if len(self.labels) else 0, -1)
        return [names[i] if i >= 0 else None for i in ids.tolist()]

    def token_counts(self, rows: np.ndarray) -> np.ndarray:
        """How often each store token occurs in ``rows`` (all their texts): the whole file's counts
        (kept with the store), less those of the rows left out when they are the fewer."""
        everything = np.load(self.folder / "counts.npy")
        if len(rows) == len(self):
            return everything
        if len(rows) > len(self) / 2:
            return everything - self._counts_of(np.setdiff1d(np.arange(len(self)), rows))
        return self._counts_of(rows)

    def _counts_of(self, rows: np.ndarray, chunk: int = 100_000) -> np.ndarray:
        counts = np.zeros(len(self.strings), dtype=np.int64)
        chosen = np.zeros(len(self), dtype=bool)
        chosen[rows] = True
        seg_rows = np.repeat(np.arange(len(self)), np.diff(self.examples))
        for a in range(0, len(seg_rows), chunk):
            b = min(a + chunk, len(seg_rows))
            lo, hi = self.segments[a], self.segments[b]
            keep = np.repeat(chosen[seg_rows[a:b]], np.diff(self.segments[a:b + 1]))
            counts += np.bincount(self.read_tokens(int(lo), int(hi))[keep], minlength=len(counts))
        return counts

    def replay_bad_lines(self, bad: BadLines) -> None:
        """The bad lines met when the store was built, reported again to this run's ``bad``."""
        for path, line, problem in self.meta["bad_lines"]:
            bad(path, line, problem)
        for reason, n in self.meta["filtered"].items():
            bad.filtered[reason] = bad.filtered.get(reason, 0) + n


def _ranks(counts: np.ndarray) -> np.ndarray:
    """0, 1, ..., c-1 for each count c, concatenated."""
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    return np.arange(int(counts.sum())) - starts


# ------------------------------------------------------------------ finding a store
def content_hash(path: Path) -> str:
    """blake2b of the file's bytes, remembered by (path, size, modification time) so an unchanged
    file is hashed once."""
    st = path.stat()
    memo_file = stores_dir() / "hashes.json"
    stamp = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    memo = json.loads(memo_file.read_text()) if memo_file.exists() else {}
    if stamp not in memo:
        h = hashlib.blake2b(digest_size=16)
        with open(path, "rb") as f:
            while block := f.read(8 << 20):
                h.update(block)
        memo[stamp] = h.hexdigest()
        write_atomic(memo_file, json.dumps(memo))
    return memo[stamp]


def store_key(path: Path, fmt: str, encoding: str, options: ReadOptions, tokenizer: TokenizerConfig) -> str:
    ident = {"version": VERSION, "content": content_hash(path), "format": fmt, "encoding": encoding,
             "options": asdict(options), "tokenizer": asdict(tokenizer)}
    return hashlib.blake2b(json.dumps(ident, sort_keys=True).encode(), digest_size=12).hexdigest()


def open_store(path, tokenizer: TokenizerConfig, fmt: str = "auto", bad: BadLines | None = None,
               encoding: str | None = None, workers: int = 0, progress: bool = False, log=print,
               **columns) -> TokenStore:
    """The store of ``path`` read with these options and tokenised by ``tokenizer``: built (once)
    if no store of it exists yet. The bad lines of the file are reported to ``bad`` either way."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, None, "a directory, not a file" if path.is_dir() else "no such file")
    f = file_format(path, fmt, encoding)
    if f.trees:
        raise DataError(path, None, "a file of parses is read whole, not into a token store")
    options, encoding = ReadOptions(**columns), encoding or f.encoding
    bad = bad or BadLines()
    folder = stores_dir() / store_key(path, f.name, encoding, options, tokenizer)
    if (folder / "meta.json").exists():
        store = TokenStore(folder)
        store.replay_bad_lines(bad)
        return store
    started = time.perf_counter()
    store = _Builder(path, f, encoding, options, tokenizer, workers, progress).build(folder, bad)
    mb, seconds = path.stat().st_size / 1e6, time.perf_counter() - started
    if mb >= 1:        # a small file is read before the user could wonder; a rule of size, not of a clock
        log(f"{path}: {len(store):,} examples encoded in {seconds:.1f} s ({mb / max(seconds, 1e-9):.1f} MB/s), "
            f"kept in {folder}")
    return store


# ------------------------------------------------------------------ building a store
class _Tokens:
    """Text -> token ids of one process's own, with the strings it added since it last reported:
    a worker sends ids and a few new strings, never the tokens of a whole chunk."""

    def __init__(self, config: dict):
        self.tokenize = Tokenizer(TokenizerConfig(**config))
        self.ids: dict = {}

    def encode(self, texts: list) -> tuple:
        start = len(self.ids)
        ids: list[int] = []
        lengths = np.empty(len(texts), dtype=np.int64)
        get = self.ids.setdefault
        for k, text in enumerate(texts):
            toks = self.tokenize(text)
            lengths[k] = len(toks)
            ids.extend(get(t, len(self.ids)) for t in toks)
        new = list(self.ids)[start:] if len(self.ids) > start else []
        return os.getpid(), start, np.asarray(ids, dtype=np.int32), lengths, new


_WORKER: _Tokens | None = None


def _start_worker(config: dict) -> None:
    global _WORKER
    _WORKER = _Tokens(config)


def _encode_in_worker(texts: list) -> tuple:
    assert _WORKER is not None, "runs in a pool whose initializer made the worker's tokens"
    return _WORKER.encode(texts)


class _Builder:
    """Reads a file as a stream, has its texts tokenised (in worker processes for a large file,
    a bounded number of chunks in flight), and writes the arrays of a store."""

    def __init__(self, path: Path, fmt, encoding: str, options: ReadOptions, tokenizer: TokenizerConfig,
                 workers: int, progress: bool):
        self.path, self.fmt, self.encoding, self.options = path, fmt, encoding, options
        self.tokenizer = asdict(tokenizer)
        size = path.stat().st_size
        self.workers = workers or ((os.cpu_count() or 1) if size >= PARALLEL_FROM else 1)
        self.progress = progress and size >= PROGRESS_FROM
        self.index: dict = {}              # token string -> store id
        self.maps: dict = {}               # worker pid -> its ids -> store ids
        self.label_index: dict = {}
        self.counts = np.zeros(0, np.int64)     # how often each token occurs in the whole file
        self.parts: dict[str, list] = {name: [] for name in ("segments", "examples", "labels", "label_counts", "label_kinds",
                                            "lines")}
        self.kind = None

    def build(self, folder: Path, bad: BadLines) -> TokenStore:
        tmp = folder.with_name(f"{folder.name}.partial-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        recorded = _Recording(bad)
        try:
            with open(tmp / "tokens.i32", "wb") as out:
                self._encode_all(self.fmt.read(self.path, recorded, self.encoding, self.options), out)
            self._finish(tmp, recorded)
            try:
                os.replace(tmp, folder)
            except OSError:                # another process built the same store meanwhile
                shutil.rmtree(tmp, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return TokenStore(folder)

    def _encode_all(self, examples, out) -> None:
        bar = _progress_bar(self.progress, self.path)
        if self.workers <= 1:
            local = _Tokens(self.tokenizer)
            for chunk in _chunks(examples):
                self._write(chunk, local.encode(self._texts(chunk)), out, bar)
            if bar:
                bar.close()
            return
        pending: deque[tuple[list, Future[tuple]]] = deque()
        with ProcessPoolExecutor(self.workers, initializer=_start_worker, initargs=(self.tokenizer,)) as pool:
            for chunk in _chunks(examples):
                pending.append((chunk, pool.submit(_encode_in_worker, self._texts(chunk))))
                if len(pending) >= 3 * self.workers:      # read ahead, but not the whole file
                    done, future = pending.popleft()
                    self._write(done, future.result(), out, bar)
            while pending:
                done, future = pending.popleft()
                self._write(done, future.result(), out, bar)
        if bar:
            bar.close()

    def _texts(self, chunk: list) -> list:
        texts = []
        for ex in chunk:
            if self.kind is None:
                self.kind = ex.kind
            texts.extend(ex.texts())
        return texts

    def _write(self, chunk: list, encoded: tuple, out, bar) -> None:
        pid, start, ids, lengths, new = encoded
        known = self.maps.setdefault(pid, np.zeros(0, np.int32))
        if start != len(known):
            raise RuntimeError(f"worker {pid} reported tokens from {start}, {len(known)} known")
        add = np.fromiter((self.index.setdefault(s, len(self.index)) for s in new), np.int32, len(new))
        self.maps[pid] = known = np.concatenate([known, add])
        ids = known[ids]
        ids.tofile(out)
        self.counts = _add_counts(self.counts, np.bincount(ids, minlength=len(self.index)))
        p = self.parts
        p["segments"].append(lengths)
        p["examples"].append(np.fromiter((_texts_of(ex) for ex in chunk), np.int64, len(chunk)))
        p["lines"].append(np.fromiter((_line_of(ex) for ex in chunk), np.int64, len(chunk)))
        for ex in chunk:
            names = ex.label if isinstance(ex.label, tuple) else (() if ex.label is None else (ex.label,))
            p["labels"].extend(self.label_index.setdefault(n, len(self.label_index)) for n in names)
            p["label_counts"].append(len(names))
            p["label_kinds"].append(2 if isinstance(ex.label, tuple) else int(ex.label is not None))
        if bar:
            bar.update(sum(len(ex.text) for ex in chunk))

    def _finish(self, tmp: Path, recorded: "_Recording") -> None:
        p = self.parts
        offsets = lambda parts: np.concatenate([[0], np.cumsum(np.concatenate(parts) if parts else [])]).astype(np.int64)
        np.save(tmp / "segments.npy", offsets(p["segments"]))
        np.save(tmp / "examples.npy", offsets(p["examples"]))
        np.save(tmp / "lines.npy", np.concatenate(p["lines"]) if p["lines"] else np.zeros(0, np.int64))
        np.save(tmp / "labels.npy", np.asarray(p["labels"], dtype=np.int32))
        np.save(tmp / "label_offsets.npy", offsets([np.asarray(p["label_counts"], np.int64)]))
        np.save(tmp / "label_kinds.npy", np.asarray(p["label_kinds"], dtype=np.int8))
        np.save(tmp / "counts.npy", _add_counts(self.counts, np.zeros(len(self.index), np.int64)))
        (tmp / "strings.json").write_text(json.dumps(list(self.index), ensure_ascii=False), encoding="utf-8")
        st = self.path.stat()
        meta = {"version": VERSION, "source": str(self.path), "size": st.st_size, "content": content_hash(self.path),
                "format": self.fmt.name, "encoding": self.encoding, "options": asdict(self.options),
                "tokenizer": self.tokenizer, "kind": self.kind or ExampleKind.TEXT, "examples": len(p["label_kinds"]),
                "tokens": int(sum(int(s.sum()) for s in p["segments"])),
                "label_names": list(self.label_index), "bad_lines": recorded.problems,
                "filtered": recorded.filtered}
        (tmp / "meta.json").write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")


class _Recording(BadLines):
    """Reports to the run's ``bad`` and remembers each problem, so a later run on the same store
    hears of the same bad lines."""

    def __init__(self, bad: BadLines):
        super().__init__(bad.policy)
        self.bad = bad
        self.problems: list[tuple[str, int | None, str]] = []

    def __call__(self, path, line, problem) -> None:
        self.problems.append((str(path), line, problem))
        self.bad(path, line, problem)

    def filter(self, reason: str) -> None:
        super().filter(reason)
        self.bad.filter(reason)


def _add_counts(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a + b`` where the longer (more tokens known) decides the length."""
    if len(a) < len(b):
        a, b = b, a
    a = a.copy()
    a[:len(b)] += b
    return a


def _texts_of(ex) -> int:
    return len(ex.texts())


def _line_of(ex) -> int:
    return ex.where.line or 0


def _chunks(examples):
    chunk = []
    for ex in examples:
        chunk.append(ex)
        if len(chunk) == CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _progress_bar(show: bool, path: Path):
    if not show:
        return None
    from tqdm import tqdm
    return tqdm(desc=f"encoding {path.name}", unit="B", unit_scale=True, unit_divisor=1000, mininterval=1.0)


# ------------------------------------------------------------------ a split of a store
class StoredSplit:
    """Some rows of a store (a training file less its held-out dev, a fold): what a list of
    examples is to a run read into memory, without the examples."""

    def __init__(self, store: TokenStore, rows=None):
        self.store = store
        self.rows = np.arange(len(store), dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)

    @property
    def kind(self) -> ExampleKind:
        return self.store.kind

    def __len__(self) -> int:
        return len(self.rows)

    def __bool__(self) -> bool:
        return len(self.rows) > 0

    def subset(self, positions) -> "StoredSplit":
        return StoredSplit(self.store, self.rows[np.asarray(positions, dtype=np.int64)])

    def where(self, k: int) -> Location:
        return self.store.where(self.rows[k])

    def label_keys(self) -> list:
        return self.store.label_keys(self.rows)

    def multilabel(self) -> bool:
        return bool((self.store.label_kinds[self.rows] == 2).any())

    def label_names(self) -> set:
        """The label names that occur in these rows."""
        starts, ends = self.store.label_offsets[:-1][self.rows], self.store.label_offsets[1:][self.rows]
        counts = (ends - starts).astype(np.int64)
        ids = self.store.labels[np.repeat(starts, counts) + _ranks(counts)] if counts.sum() else []
        return {self.store.label_names[i] for i in np.unique(ids)}


@dataclass
class StoreOptions:
    """How a run reads its files into stores: its tokenizer, worker processes, a progress bar."""
    tokenizer: TokenizerConfig
    workers: int = 0
    progress: bool = False
    log: Callable = print

    def split(self, path, fmt: str, bad: BadLines, encoding: str | None = None, **columns) -> StoredSplit:
        """All rows of the store of ``path``."""
        return StoredSplit(open_store(path, self.tokenizer, fmt, bad, encoding, self.workers, self.progress,
                                      self.log, **columns))
