"""Task-specific distillation (Tang et al. 2019, "Distilling Task-Specific Knowledge from BERT
into Simple Neural Networks"): a fast student learns the logits of a trained teacher run on a
transfer set, the training texts and more, beside the true labels of the texts that have one.

Transfer set (Section 3.2): the training examples; ``augment`` copies of each, rewritten word by
word (with probability 0.1 a word becomes <unk>, the masking rule: the student's unknown word, a
pretrained teacher's mask token; else with probability 0.1 a
word of the same part of speech seen in the training texts; then with probability 0.25 the
copy is cut to an n-gram of 1 to 5 words); ``spans`` contiguous word spans of each text, of
random length (on SST-2 they teach the student what the treebank's phrases do); and the lines of
an ``unlabeled`` file, whose words
the student's vocabulary counts with the training texts' (it learns them from these logits). The
teacher's logits are computed once, in chunks cached on disk, each keyed by the teacher's weights
and its own texts: a killed run resumes from the last chunk, and reruns, other students and a
larger transfer set (the same training texts and copies, plus an unlabelled file) reuse them.

A teacher's logits over a whole transfer set can also be kept as a file (``adaptext logits``, a
safetensors file of a few MB beside the hash of the texts they were computed on, the teacher's
identity and its data options), which a student reads in place of the teacher
(``--teacher-logits FILE``): a student is distilled on a machine that has no teacher, nor the
time to run one.
"""
from __future__ import annotations

import hashlib
import json
import random
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..atomic import written_atomically
from ..data.cache import cache_dir
from ..errors import DataError
from ..data.examples import ExampleKind, TextExample
from ..data.text import Tokenizer
from ..config import RunConfig

P_MASK, P_POS, P_NGRAM, MAX_N = 0.1, 0.1, 0.25, 5     # Tang et al. (2019), Section 3.2
CHUNK = 512                                           # texts per cached chunk of teacher logits
# texts per batch of the teacher's logits: fewer pad positions in a batch of similar lengths. The
# teacher reads SST-2 sentences at 191 a second in batches of 64 against 163 in batches of 256 (2
# threads, 3 interleaved rounds over 2,048 texts; 32 read 201, within the rounds' spread of 64's):
# benchmarks/results/logits_batch.md
LOGITS_BATCH = 64
MASK = "<unk>"
DISTILLED = (ExampleKind.TEXT, ExampleKind.PAIR)     # the kinds a teacher's logits are read on


# ----------------------------------------------------------------------- transfer set
def transfer_set(cfg: RunConfig, train: list, unlabeled: list, log=print) -> list:
    """The training examples, then the augmented copies, the spans and the unlabelled texts (label None)."""
    out = list(train)
    if cfg.augment:
        out += augmented(train, cfg.augment, augment_seed(cfg), cfg.tagger)
    if cfg.spans:
        out += spans(train, cfg.spans, augment_seed(cfg))
    out += unlabeled
    log(f"transfer set: {len(train)} training texts, {len(out) - len(train)} more")
    return out


def augment_seed(cfg: RunConfig) -> int:
    return cfg.seed if cfg.augment_seed is None else cfg.augment_seed


def augmented(examples: list, copies: int, seed: int, tagger_name: str = "nltk") -> list:
    """``copies`` rewritten copies of each text (a pair keeps its second text), unlabelled."""
    from ..data.tags import get_tagger
    words = Tokenizer(lower=False)
    tagger = get_tagger(tagger_name)
    tokens = [words(ex.text) for ex in examples]
    tags = [tagger(t) if t else [] for t in tokens]
    by_tag: dict = {}
    for ts, gs in zip(tokens, tags):
        for w, g in zip(ts, gs):
            by_tag.setdefault(g, set()).add(w)
    pools = {g: sorted(ws) for g, ws in by_tag.items()}
    rng = random.Random(seed)
    out = []
    for ex, ts, gs in zip(examples, tokens, tags):
        for _ in range(copies):
            out.append(unlabelled(ex, " ".join(rewrite(ts, gs, pools, rng)) or ex.text))
    return out


def spans(examples: list, count: int, seed: int) -> list:
    """Up to ``count`` contiguous word spans of each text (a pair keeps its second text), of a
    length drawn from 1 to the text's less one, each distinct from every other span and text."""
    words = Tokenizer(lower=False)
    rng = random.Random(f"spans-{seed}")
    seen = {ex.text for ex in examples}
    out = []
    for ex in examples:
        tokens = words(ex.text)
        for _ in range(count if len(tokens) > 1 else 0):
            n = rng.randint(1, len(tokens) - 1)
            start = rng.randint(0, len(tokens) - n)
            text = " ".join(tokens[start:start + n])
            if text not in seen:
                seen.add(text)
                out.append(unlabelled(ex, text))
    return out


def unlabelled(ex, text: str):
    """``ex`` with ``text`` in place of its (first) text and no label; a tree example as a plain text."""
    return replace(ex, text=text, label=None) if ex.kind in DISTILLED else TextExample(text, None, ex.where)


def rewrite(tokens: list[str], tags: list[str], pools: dict, rng: random.Random) -> list[str]:
    """One augmented copy: masking and POS-guided replacement word by word, then n-gram sampling."""
    out = []
    for w, g in zip(tokens, tags):
        r = rng.random()
        if r < P_MASK:
            out.append(MASK)
        elif r < P_MASK + P_POS and len(pools.get(g, ())) > 1:
            out.append(rng.choice(pools[g]))
        else:
            out.append(w)
    if out and rng.random() < P_NGRAM:
        n = rng.randint(1, min(MAX_N, len(out)))
        start = rng.randint(0, len(out) - n)
        out = out[start:start + n]
    return out


def unlabeled_texts(path) -> list:
    from ..data.lines import iter_lines, location
    # read as UTF-8, else cp1252, else Latin-1 (no --encoding reaches this file)
    texts = [TextExample(line.strip(), None, location(path, i)) for i, line in iter_lines(path, "auto")
             if line.strip()]
    if not texts:
        raise DataError(path, None, "no texts in the file of unlabelled texts")
    return texts


def unlabeled_of(cfg: RunConfig) -> list:
    """The run's unlabelled transfer texts: the ``unlabeled`` file's, or ``unlabeled_sample`` of them
    drawn with the copies' seed, in the file's order (a file sorted by source gives a sample of every
    source)."""
    if not cfg.unlabeled:
        return []
    texts = unlabeled_texts(cfg.unlabeled)
    if 0 < cfg.unlabeled_sample < len(texts):
        keep = sorted(random.Random(augment_seed(cfg)).sample(range(len(texts)), cfg.unlabeled_sample))
        texts = [texts[i] for i in keep]
    return texts


# ----------------------------------------------------------------------- teacher logits
def teachers_of(teacher) -> list[str]:
    """The run directories of ``--teacher``: one, or several separated by commas (an ensemble)."""
    return [t for t in str(teacher).split(",") if t]


def teacher_logits(teacher: str, examples: list, student_labels: list[str], log=print,
                   device: str = "cpu") -> np.ndarray:
    """[len(examples), classes] logits of the teacher run (on ``device``), in the student's class
    order; of an ensemble (several runs), the mean of its teachers' logits, each cached alone."""
    import torch
    runs = teachers_of(teacher)
    if len(runs) > 1:
        log(f"teacher ensemble of {len(runs)} runs: their logits averaged")
    # building a teacher draws its initial weights: the student, seeded before, starts as it would
    # from a file of the same logits
    with torch.random.fork_rng(devices=[]):
        return np.mean([one_teacher_logits(t, examples, student_labels, log, device) for t in runs], axis=0)


def one_teacher_logits(teacher_dir, examples: list, student_labels: list[str], log=print,
                       device: str = "cpu") -> np.ndarray:
    return one_teacher_outputs(teacher_dir, examples, student_labels, log, device)[0]


def one_teacher_outputs(teacher_dir, examples: list, student_labels: list[str], log=print, device: str = "cpu",
                        representations: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """The teacher's logits over ``examples`` (columns in ``student_labels``' order) and, with
    ``representations``, what its classifier head read for each (float16: a few hundred numbers a
    text), both cached by chunk: a chunk whose logits are cached is read again for its representations."""
    from ..api import Classifier
    from ..runs.pipeline import HeadInputs
    teacher = Classifier.load(teacher_dir, device)
    if sorted(teacher.labels.labels) != sorted(student_labels) or teacher.labels.multilabel:
        raise DataError(teacher_dir, None, f"the teacher's classes ({', '.join(teacher.labels.labels)}) are not the "
                                           f"training data's ({', '.join(student_labels)}), or it is multi-label")
    examples = as_the_teacher_reads(teacher, examples)
    folder = _cache(teacher_dir)
    folder.mkdir(parents=True, exist_ok=True)
    chunks, kept = [], []
    for start in range(0, len(examples), CHUNK):
        part = examples[start:start + CHUNK]
        key = _key(part)                        # one hash names both of the chunk's files
        path, heads = folder / f"{key}.npy", folder / f"{key}.head.npy"
        if not path.is_file() or (representations and not heads.is_file()):
            if start % (CHUNK * 20) == 0:
                log(f"teacher logits: {start}/{len(examples)} texts ({Path(teacher_dir).name})")
            items = teacher.pipeline.items([ex.as_input() for ex in part])
            with HeadInputs(teacher.pipeline.model, len(items)) if representations else nullcontext() as read:
                _save(path, teacher.pipeline.logits(items, LOGITS_BATCH, read))
            if read is not None:
                _save(heads, read.array, np.float16)
        chunks.append(np.load(path))
        if representations:
            kept.append(np.load(heads))
    order = [teacher.labels.labels.index(l) for l in student_labels]
    return np.concatenate(chunks)[:, order], np.concatenate(kept) if representations else None


def as_the_teacher_reads(teacher, examples: list) -> list:
    """The transfer set with each masked word spelled as the teacher's mask: a pretrained encoder's
    own mask token (``[MASK]``, the word it was trained to fill in: MiniLM reads the text ``<unk>``
    as an abbreviation and labels "What is <unk> ?" ABBR), <unk> for a word-level teacher."""
    mask = MASK
    tokenizer = teacher.encoder.tokenizer.config
    if tokenizer.level == "subword":
        from ..pretrained import tokenizer as pieces
        mask = pieces(tokenizer.pretrained).mask_token or MASK
    if mask == MASK:
        return examples
    return [replace(ex, text=ex.text.replace(MASK, mask)) if MASK in ex.text else ex for ex in examples]


def _cache(teacher_dir) -> Path:
    weights = Path(teacher_dir) / "model.safetensors"
    h = hashlib.sha256(f"teacher-logits/v2\n{Path(teacher_dir).resolve()}\n{weights.stat().st_size}\n"
                       f"{weights.stat().st_mtime_ns}\n".encode())
    return cache_dir("teacher_logits") / h.hexdigest()[:32]


def _key(examples: list) -> str:
    return transfer_hash(examples)[:32]


def _save(path: Path, array: np.ndarray, dtype=np.float32) -> None:
    with written_atomically(path, suffix=".npy") as tmp:         # np.save adds .npy to other names
        np.save(tmp, array.astype(dtype))


# ----------------------------------------------------------------------- logits kept as a file
LOGITS_FORMAT = "adaptext-teacher-logits/1"


def transfer_hash(examples: list) -> str:
    """The identity of a transfer set: its texts, in order."""
    h = hashlib.sha256()
    for ex in examples:
        h.update(("\t".join(ex.texts()) + "\n").encode("utf-8"))
    return h.hexdigest()


def teacher_identity(teacher_dir) -> dict:
    """A teacher run by its folder's name and the hash of its weights (they outlive the folder)."""
    h = hashlib.sha256()
    with open(Path(teacher_dir) / "model.safetensors", "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return {"run": Path(teacher_dir).name, "weights_sha256": h.hexdigest()}


def write_logits_file(path, logits: np.ndarray, labels: list[str], transfer: list, teachers: list[str],
                      data_options: dict) -> Path:
    from safetensors.numpy import save_file
    meta = {"format": LOGITS_FORMAT, "labels": json.dumps(labels), "texts_sha256": transfer_hash(transfer),
            "count": str(len(transfer)), "teachers": json.dumps([teacher_identity(t) for t in teachers]),
            "data_options": json.dumps(data_options)}
    with written_atomically(Path(path), suffix=".safetensors") as tmp:
        save_file({"logits": np.ascontiguousarray(logits, dtype=np.float32)}, str(tmp), metadata=meta)
    return Path(path)


def logits_file_meta(path) -> dict:
    """The metadata of a logits file, checked to be one; a one-line error naming the file if not."""
    from safetensors import SafetensorError, safe_open
    if not Path(path).is_file():
        raise DataError(path, None, "no such file of teacher logits (--teacher-logits)")
    try:
        with safe_open(str(path), framework="numpy") as f:
            meta = f.metadata() or {}
    except (SafetensorError, OSError) as e:
        raise DataError(path, None, f"not a file of teacher logits ({e})") from None
    if meta.get("format") != LOGITS_FORMAT:
        raise DataError(path, None, "not a file of teacher logits (adaptext logits writes them)")
    return meta


def read_logits_file(path, transfer: list, student_labels: list[str]) -> np.ndarray:
    """The logits kept in ``path``, in the student's class order, if they were computed on exactly
    this transfer set."""
    from safetensors.numpy import load_file
    meta = logits_file_meta(path)
    if meta["texts_sha256"] != transfer_hash(transfer):
        raise DataError(path, None, f"logits of another transfer set ({meta['count']} texts) than this run's "
                                    f"({len(transfer)} texts, or other texts): make them with the same data, "
                                    f"--augment, --augment-seed, --spans, --unlabeled and --unlabeled-sample")
    labels = json.loads(meta["labels"])
    if sorted(labels) != sorted(student_labels):
        raise DataError(path, None, f"logits over the classes {', '.join(labels)}, not the training data's "
                                    f"({', '.join(student_labels)})")
    return load_file(str(path))["logits"][:, [labels.index(l) for l in student_labels]]


def soft_items(cfg: RunConfig, train: list, unlabeled: list, encoder, bad, log=print, device: str = "cpu") -> list:
    """The transfer set (``unlabeled``: the texts of the ``unlabeled`` file) encoded for the
    student, each item with the teacher's logits (``soft``): computed by the teacher runs, or read
    from a file of them."""
    source = cfg.teacher or cfg.teacher_logits
    if train and train[0].kind not in DISTILLED:
        raise DataError(source, None, f"distillation reads text or pair examples, not {train[0].kind}")
    transfer = transfer_set(cfg, train, unlabeled, log)
    # first: a teacher's pass fills the cache of its logits with its representations
    heads = representations(cfg, transfer, encoder.labels.labels, log, device) if cfg.feature_weight else None
    if cfg.teacher_logits:
        logits = read_logits_file(cfg.teacher_logits, transfer, encoder.labels.labels)
    else:
        assert cfg.teacher, "soft_items is called for a run with a teacher or a file of its logits"
        logits = teacher_logits(cfg.teacher, transfer, encoder.labels.labels, log, device=device)
    items = encoder.encode(transfer, bad)
    for it in items:
        it.soft = logits[it.index]
        if heads is not None:
            it.features = heads[it.index]
    return items


def representations(cfg: RunConfig, transfer: list, labels: list[str], log=print, device: str = "cpu") -> np.ndarray:
    """The first teacher run's sentence representations over the transfer set, each dimension
    standardised over it (float16): a target on one scale whatever the encoder (an ensemble's
    teachers were each fine-tuned apart; their representations are not averaged)."""
    assert cfg.teacher, "prepare refuses --feature-weight without a teacher run"
    import torch
    with torch.random.fork_rng(devices=[]):    # as teacher_logits: the student starts as it would without
        heads = one_teacher_outputs(teachers_of(cfg.teacher)[0], transfer, labels, log, device, True)[1]
    assert heads is not None, "asked for"
    return standardised(heads)


def standardised(heads: np.ndarray, block: int = 1 << 16) -> np.ndarray:
    """Each column to mean 0 and deviation 1, in place, a block of rows at a time: a float copy of
    40 copies of SST-2 at 384 numbers a text would take GBs."""
    rows = [slice(i, i + block) for i in range(0, len(heads), block)]
    mean = sum(heads[r].astype(np.float64).sum(0) for r in rows) / len(heads)
    scale = np.sqrt(sum(((heads[r] - mean) ** 2).sum(0) for r in rows) / len(heads)) + 1e-6
    for r in rows:
        heads[r] = (heads[r] - mean) / scale
    return heads


def teacher_data_options(teacher_dir) -> dict:
    """The teacher run's data options (its training file or dataset, splits, columns): a student
    distilled from it reads the same data unless told otherwise (an ensemble: its first run's)."""
    from ..runs.files import read_json
    from ..contract import OPTIONS
    from ..runs.options import flatten
    config = Path(teacher_dir) / "config.json"
    if not config.is_file():
        raise DataError(teacher_dir, None, "not a run directory (no config.json): the teacher must be a trained run")
    saved = flatten(read_json(config))
    return {k: v for k, v in saved.items() if k in OPTIONS and OPTIONS[k].section == "data"}


def logits_data_options(path) -> dict:
    """The data options of the teacher whose logits a file keeps."""
    return json.loads(logits_file_meta(path)["data_options"])
