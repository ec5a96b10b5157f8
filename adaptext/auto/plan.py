"""The plan of ``adaptext auto``: which candidates to train, in what order, for how many epochs,
and how long each should take on this data, within a time budget.

Candidates come in three roles: fast baselines first (a bag of vectors, Kim's CNN with random
vectors, Kim's CNN with vectors derived from the pretrained encoder), then the transformer
teacher, then students distilled from it (the recommended BiLSTM, Kim's CNN). Each is an ordinary
run (its options are ``adaptext train`` options); a candidate that the data, the installed extras
or the budget rule out stays in the plan, skipped, with the reason the report gives.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from ..data.errors import MissingResource, UsageError
from ..data.examples import ExampleKind
from ..registry import get_entry

# ---------------------------------------------------------------- cost coefficients
# Seconds per 1,000 training tokens (whitespace words of the training texts) per epoch at one
# torch thread on this 2-core machine (x86_64, torch CPU), measured once (2026-11-28) by timing
# ``train_run`` from a script on 4,000 TREC questions (40,688 tokens; 500 dev, 500 test
# questions), mostly while another 1-thread job held the other core, as it often does here. Each
# candidate trained 1 and then 3 epochs; an epoch's cost is the difference of the two wall times
# over 2: bov 0.9 s, kim_cnn 2.55 s (2.4 s again on a quieter machine), the BiLSTM student shape
# 2.1 s, attconv (light) 3.4 s; kim_cnn over derived vectors 13.4 s for 3 epochs with the vectors
# cached. The transformer teacher (lr 5e-5, batch 32): 105 s for its single epoch under load
# (2.6 s per 1,000 tokens), 78 s on a quieter machine (1.9), 63 s for the second epoch of a
# 2-epoch run; the plan takes the loaded figure, erring long. Distilled students (alpha 0, 10
# augmented copies: 381,298 transfer tokens, teacher logits cached) took 27 s (kim_cnn) and
# 18.5 s (BiLSTM) an epoch: 0.071 and 0.049 s per 1,000 tokens, as undistilled.
EPOCH_S_PER_KTOKEN = {"bov": 0.022, "kim_cnn": 0.065, "kim_cnn-vectors": 0.093, "lstm": 0.052,
                      "attconv": 0.084, "transformer": 2.6}
# The encoder reading texts without training: the teacher's logits over the transfer set took
# 0.72 s per 1,000 tokens (its first 8,000 texts) and 0.78 (the 36,000 after them); vectors
# derived over the training texts 1.0 (41 s for the 40,688 tokens, the encoder's load included).
ENCODER_S_PER_KTOKEN = 0.78
VECTORS_S_PER_KTOKEN = 1.0
AUGMENT_S_PER_KTOKEN = 0.005        # POS tags and rewrites: 1.8 s for 10 copies of 40,688 tokens
COPY_LENGTH = 0.84                  # an augmented copy's tokens over its text's (n-gram cuts), measured
# What a run costs besides its epochs: reading and encoding the data, building the model,
# evaluating dev and test, writing the run (1-2 s on the 4,000 questions), and loading the
# pretrained encoder (about 5 s) for the transformer and the derived vectors.
RUN_S, READ_S_PER_KTOKEN, ENCODER_LOAD_S = 1.5, 0.02, 5.0
START_S = 8.0                       # the first run of a process imports the training engine
FINISH_S = 5.0                      # the report, the plot and OUT/best after the last step
# Throughput is measured predicting up to 1,000 dev texts: a warm-up and 3 timed passes. The
# teacher predicts as it computes logits (147 TREC questions/s at one thread, measured); the
# fast models 10,000-40,000 a second: what the default allows for, at most a second or two.
SPEED_TEXTS, SPEED_PASSES = 1000, 4
PREDICT_S_PER_KTOKEN = {"transformer": ENCODER_S_PER_KTOKEN}
MIN_EXAMPLES = 20_000               # the least training a candidate gets: this many examples ...
MIN_FRACTION = 0.25                 # ... or one epoch, whichever is less, and never under a quarter epoch

TEACHER = {"model": "transformer", "epochs": 3, "lr": 5e-5, "batch_size": 32}   # benchmarks/distill_table.py
BILSTM = {"model": "lstm", "layers": 1, "bidirectional": True, "hidden": 64, "batch_size": 64}  # the README's student
DISTILL = {"alpha": 0.0, "augment": 10}          # the teacher's logits only, over 10 copies of each text


@dataclass
class DataSummary:
    """What the plan needs to know of the data: sizes, mean length in words, the example kind."""
    train: int
    dev: int
    test: int
    mean_length: float
    kind: ExampleKind = ExampleKind.TEXT
    multilabel: bool = False
    classes: int = 0

    def __post_init__(self):
        self.kind = ExampleKind(self.kind)          # auto.json holds the kind's name

    @property
    def ktokens(self) -> float:
        return self.train * self.mean_length / 1000


@dataclass
class Candidate:
    """One run of the plan. ``options``: its ``adaptext train`` options (the CLI's keys, as
    ``train_run`` takes them; the data, seed and output are the runner's); ``teacher``: the name
    of the candidate whose run teaches it; ``estimate_s``: its planned seconds (training,
    evaluation and the throughput measurement); ``skip``: why it is not trained."""
    name: str
    options: dict
    teacher: str | None = None
    estimate_s: float = 0.0
    role: str = "baseline"
    skip: str | None = None
    fixed_s: float = 0.0            # the part of the estimate that does not grow with epochs
    epoch_s: float = 0.0            # one epoch
    steps_per_epoch: int = 1
    min_work: float = 1.0           # the fewest epochs (a fraction: max_steps) worth training
    work: float = 0.0               # the epochs planned
    for_time: bool = False          # skipped for the budget (not the data or extras): tried again when it is its turn
    notes: list = field(default_factory=list)

    def cost(self, work: float) -> float:
        return self.fixed_s + self.epoch_s * work

    def fit_to(self, seconds: float) -> bool:
        """Cap its epochs (below one epoch: ``max_steps``) to what ``seconds`` allow, never
        below ``min_work`` nor above the epochs it was planned with; False when even its
        minimum does not fit."""
        if self.cost(self.min_work) > seconds:
            return False
        affordable = (seconds - self.fixed_s) / self.epoch_s if self.epoch_s else math.inf
        self.set_work(min(self.work, affordable))
        return True

    def set_work(self, work: float) -> None:
        self.options.pop("max_steps", None)
        if work >= 1:
            self.work = float(math.floor(work))
            self.options["epochs"] = int(self.work)
        else:
            steps = max(1, int(work * self.steps_per_epoch))
            self.work = steps / self.steps_per_epoch
            self.options.update(epochs=1, max_steps=steps)
        self.estimate_s = round(self.cost(self.work), 1)

    def as_dict(self) -> dict:
        return asdict(self)


def encoder_available() -> str | None:
    """None when the transformers extra and the packaged encoder import; else what to install."""
    try:
        from ..pretrained import DEFAULT, require_transformers, resolve
        require_transformers()
        resolve(DEFAULT)
    except MissingResource as e:
        return str(e)
    return None


def pool(kind: ExampleKind) -> list[Candidate]:
    """Every candidate auto knows, in plan order, with the epochs it gets when the budget allows
    (the fast ones 10, Kim's own 25 cut to 10 so that the baselines leave the budget to the
    teacher, early stopping deciding within that; the teacher the 3 of the distillation tables;
    the BiLSTM student the README's 5). Pair and context data add attconv (light), the one fast
    model that reads them, undistilled and distilled."""
    text = kind == ExampleKind.TEXT
    found = [Candidate("bov", {"model": "bov", "epochs": 10}),
             Candidate("kim_cnn", {"model": "kim_cnn", "epochs": 10}),
             Candidate("kim_cnn-vectors", {"model": "kim_cnn", "embeddings": "transformer", "epochs": 10})]
    if not text:
        found.append(Candidate("attconv", {"model": "attconv", "variant": "light", "epochs": 10}))
    found += [Candidate("transformer", dict(TEACHER), role="teacher"),
              Candidate("bilstm-distilled", {**BILSTM, **DISTILL, "epochs": 5}, "transformer", role="student"),
              Candidate("kim_cnn-distilled", {"model": "kim_cnn", **DISTILL, "epochs": 10}, "transformer",
                        role="student")]
    if not text:
        found.append(Candidate("attconv-distilled", {"model": "attconv", "variant": "light", **DISTILL,
                                                     "epochs": 10}, "transformer", role="student"))
    for c in found:
        c.work = float(c.options["epochs"])
    return found


def multilabel_capable(name: str) -> bool:
    """The registry has no multi-label flag: training reads a label set the same way for every
    model (one sigmoid per class, binary cross-entropy on its logits), except the tree models
    trained on every labelled node, whose node loss is single-label."""
    return not all(kind.is_tree for kind in get_entry(name).inputs)


def why_not(c: Candidate, kinds, multilabel: bool, missing: str | None) -> str | None:
    """Why the data or the installed extras rule the candidate out (None: they do not)."""
    entry = get_entry(c.options["model"])
    kind = next((k for k in kinds if k not in entry.inputs), None)
    if kind:
        return f"{entry.name} reads {'/'.join(entry.inputs)} examples, not {kind}"
    if multilabel and not multilabel_capable(entry.name):
        return f"{entry.name} trains on single labels only"
    if multilabel and c.teacher:
        # distillation refuses a multi-label teacher (adaptext.training.distill.one_teacher_logits)
        return "distillation learns a single-label teacher's logits; these data are multi-label"
    if missing and (entry.name == "transformer" or c.options.get("embeddings")):
        return f"needs the pretrained encoder: {missing}"
    return None


def threads_speedup(threads: int) -> float:
    """How much faster than at one thread a run trains with ``threads``: the plan counts on none.
    Measured here (kim_cnn on the 4,000 questions, twice each): 2 threads took 3.6 and 4.2 s an
    epoch against one thread's 2.9 and 3.5 s while another job held the other core, as one usually
    does on this machine; the coefficients err long on an idle machine, not short on a busy one."""
    return 1.0


def cost_candidate(c: Candidate, s: DataSummary, threads: int) -> float:
    """Set the candidate's per-epoch and fixed seconds on these data; the seconds of the teacher
    logits a student needs (paid by the first student of a teacher: the others reuse them)."""
    model, opts, speedup = c.options["model"], c.options, threads_speedup(threads)
    copies = 1 + opts.get("augment", 0) * COPY_LENGTH if c.teacher else 1.0
    key = "kim_cnn-vectors" if opts.get("embeddings") else model
    c.epoch_s = EPOCH_S_PER_KTOKEN[key] * s.ktokens * copies / speedup
    all_ktokens = (s.train + s.dev + s.test) * s.mean_length / 1000
    c.fixed_s = RUN_S + READ_S_PER_KTOKEN * all_ktokens + speed_seconds(model, s, speedup)
    if model == "transformer" or opts.get("embeddings"):
        c.fixed_s += ENCODER_LOAD_S
    if opts.get("embeddings"):
        c.fixed_s += VECTORS_S_PER_KTOKEN * s.ktokens / speedup
    if c.teacher:
        c.fixed_s += AUGMENT_S_PER_KTOKEN * s.ktokens * opts.get("augment", 0)
    examples = s.train * (1 + opts.get("augment", 0) if c.teacher else 1)
    batch = opts.get("batch_size") or get_entry(model).train_defaults.get("batch_size", 50)
    c.steps_per_epoch = max(1, math.ceil(examples / batch))
    c.min_work = max(MIN_FRACTION, min(1.0, MIN_EXAMPLES / max(examples, 1)))
    c.min_work = max(c.min_work, 1 / c.steps_per_epoch)
    return ENCODER_S_PER_KTOKEN * s.ktokens * copies / speedup if c.teacher else 0.0


def speed_seconds(model: str, s: DataSummary, speedup: float) -> float:
    """The throughput measurement: a warm-up and 3 passes over up to 1,000 dev texts."""
    ktokens = SPEED_PASSES * min(s.dev, SPEED_TEXTS) * s.mean_length / 1000
    return 1.0 + PREDICT_S_PER_KTOKEN.get(model, 0.01) * ktokens / speedup


def human(seconds: float) -> str:
    """90 -> '1.5 min', 40 -> '40 s'."""
    return f"{seconds:.0f} s" if seconds < 60 else f"{seconds / 60:.1f} min"


def make_plan(summary: DataSummary, budget_s: float, multilabel: bool = False, kinds=(ExampleKind.TEXT,),
              threads: int = 1, encoder: bool | None = None) -> list[Candidate]:
    """The candidates for these data within ``budget_s`` seconds, each costed and its epochs
    capped so that the plan fits; those the data, extras or budget rule out marked skipped.
    ``encoder``: whether the pretrained encoder is installed (None: look). A budget too short
    for even the first candidate's minimum is a ``UsageError`` naming the time it needs."""
    missing = encoder_available() if encoder is None else (None if encoder else "not installed")
    found = pool(kinds[0] if kinds else summary.kind)
    logits = {}
    for c in found:
        c.skip = why_not(c, kinds, multilabel, missing)
        logits[c.name] = cost_candidate(c, summary, threads)
        c.estimate_s = round(c.cost(c.work), 1)
    usable = [c for c in found if not c.skip]
    if not usable:
        raise UsageError(f"auto has no candidate model for {'/'.join(kinds)} examples; train one with adaptext train")
    first, overhead = usable[0], START_S + FINISH_S
    if first.cost(first.min_work) + overhead > budget_s:
        need = math.ceil((first.cost(first.min_work) + overhead) / 10) * 10
        raise UsageError(f"--time {human(budget_s)} is too short for even the first candidate ({first.name}, "
                         f"{first.min_work:g} epoch: about {human(need)} on these data); give --time {need}s or more")
    allocate(found, budget_s - overhead, logits)
    return found


def allocate(found: list[Candidate], seconds: float, logits: dict) -> None:
    """First every candidate at its minimum, in plan order, while the budget lasts (a student
    only with its teacher; the first student of a teacher also pays for its logits); then what
    is left raises each kept candidate, in order, toward the epochs it was planned with."""
    kept, left, paid = [], seconds, set()
    for c in found:
        if c.skip:
            continue
        if c.teacher and c.teacher not in {k.name for k in kept}:
            c.skip, c.for_time = f"its teacher, {c.teacher}, is not trained", True
            continue
        extra = logits[c.name] if c.teacher and c.teacher not in paid else 0.0
        need = c.cost(c.min_work) + extra
        if need > left:
            c.skip, c.for_time = f"needs {human(need)} at least; the budget leaves {human(max(left, 0))} for it", True
            continue
        if extra:
            c.fixed_s += extra
            paid.add(c.teacher)
        left -= need
        kept.append(c)
    for c in kept:
        planned = c.work
        c.fit_to(c.cost(c.min_work) + left)
        left -= c.estimate_s - c.cost(c.min_work)
        if c.work < planned:
            c.notes.append(f"{_work(c)} of the {planned:g} planned, to fit the budget")


def _work(c: Candidate) -> str:
    steps = c.options.get("max_steps")
    return f"{steps} steps ({c.work:.2f} epoch)" if steps else f"{c.work:g} epochs"
