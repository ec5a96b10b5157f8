"""The plan of ``adaptext auto``: which candidates to train, in what order, for how many epochs,
and how long each should take on this data, within a time budget.

Candidates come in three roles: fast baselines first (the linear fastText model over words and
bigrams, always first: the floor no winner falls under; a bag of vectors, Kim's CNN with random
vectors, Kim's CNN with vectors derived from the pretrained encoder), then the transformer
teacher, then students distilled from it (the BiLSTM over the encoder's word pieces, the same
over words, Kim's CNN, a wider BiLSTM). Each is an ordinary
run (its options are ``adaptext train`` options); a candidate that the data, the installed extras
or the budget rule out stays in the plan, skipped, with the reason the report gives.

The budget is spent where the accuracy is: every candidate gets its minimum; then the teacher its
epochs and the students the richest recipe the budget affords whole (``RECIPES``: the unlabelled
texts, more augmented copies and epochs, a teacher ensemble of 2 and 3 seeds, a wider BiLSTM);
then the fallbacks what is left: the baselines but the linear one, and the word and CNN students,
faster models for a floor the recipe's first student misses. Once the teacher has trained, the
recipe is chosen again on the time left at the speed measured so far (``replan``). Nothing caps
a larger budget below the richest recipe, and the plan says what it leaves unspent.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from ..errors import MissingResource, UsageError
from ..data.examples import ExampleKind
from ..registry import get_entry
from .speed import ROUNDS, SPEED_TEXTS

# ---------------------------------------------------------------- cost coefficients
# Seconds per 1,000 training tokens (whitespace words of the training texts) per epoch on this
# 2-core machine (x86_64, torch CPU) at 2 threads, the machine otherwise quiet. Each key was first
# timed alone (2026-11-28: ``train_run`` from a script on 4,000 TREC questions, 40,688 tokens, at
# one thread, mostly while another job held the other core; the epoch is the difference of a
# 1-epoch and a 3-epoch run over 2: bov 0.9 s, kim_cnn 2.55 s, attconv (light) 3.4 s, the
# transformer teacher 105 s; the BiLSTM students later, at 2 threads on a quiet machine), then
# rebased on the median factor (first epoch measured over planned) that six 30-minute auto runs
# found for it: SST-2 twice, MR, TREC, SUBJ twice, 2026-11-29/30 (``benchmarks/auto_calibration.py``,
# benchmarks/results/auto_calibration.md). Timed under different loads and threads, the keys had
# drifted apart (the transformer's factor 0.37, the BiLSTMs' 1.02), so the median of the factors
# measured before the students (how a candidate not yet measured is costed) was 0.44-0.51 and
# every student was planned at about half the time it took. Rebased, each key's factor is near 1
# here; a busier or slower machine moves them together, as the median assumes. attconv, not in
# those runs, takes kim_cnn's factor (it was timed beside it).
EPOCH_S_PER_KTOKEN = {"fasttext": 0.022, "bov": 0.027, "kim_cnn": 0.043, "kim_cnn-vectors": 0.045, "lstm": 0.053,
                      "lstm-pieces": 0.031, "attconv": 0.056, "transformer": 0.96}
# The encoder reading texts without training, at 2 threads: the teacher's logits over the transfer
# set, 0.78 s per 1,000 tokens as first timed, times 0.32, the median factor of the three runs made
# since the logits are read in batches of 64 (the three before, in batches of 256, read 0.44-0.52).
# Vectors derived over the training texts: 1.0 (41 s for the 40,688 tokens at one thread, the
# encoder's load included; cached after a data set's first run, so those runs did not measure it).
ENCODER_S_PER_KTOKEN = 0.25
VECTORS_S_PER_KTOKEN = 1.0
AUGMENT_S_PER_KTOKEN = 0.005        # POS tags and rewrites: 1.8 s for 10 copies of 40,688 tokens
COPY_LENGTH = 0.84                  # an augmented copy's tokens over its text's (n-gram cuts), measured
# What a run costs besides its epochs: reading and encoding the data, building the model,
# evaluating dev and test, writing the run (1-2 s on the 4,000 questions), and loading the
# pretrained encoder (about 5 s) for the transformer and the derived vectors.
RUN_S, READ_S_PER_KTOKEN, ENCODER_LOAD_S = 1.5, 0.02, 5.0
START_S = 8.0                       # the first run of a process imports the training engine
FINISH_S = 5.0                      # the report, the plot and OUT/best after the last step
# Throughput is measured at the end, in one pass over every finished candidate: each predicts up
# to 1,000 dev texts once per round (ROUNDS) at one thread, after a warm-up batch. The teacher
# predicts as it computes logits (147 TREC questions/s at one thread, measured); the fast models
# 10,000-40,000 a second: what the default allows for, at most a second or two.
SPEED_PASSES = ROUNDS + 1
PREDICT_S_PER_KTOKEN = {"transformer": 0.78}      # at the pass's one thread: the logits' first timing
MIN_EXAMPLES = 20_000               # the least training a candidate gets: this many examples ...
MIN_FRACTION = 0.25                 # ... or one epoch, whichever is less, and never under a quarter epoch

TEACHER = {"model": "transformer", "epochs": 3, "lr": 5e-5, "batch_size": 32}   # benchmarks/cells.py
TEACHER_NAME = "transformer"                     # the candidate every student learns from
BILSTM = {"model": "lstm", "layers": 1, "bidirectional": True, "hidden": 64, "batch_size": 64}  # the README's student
# The same student reading the encoder's word pieces through the encoder's own input vectors, kept
# fixed: no word of a test text is unknown to it. Over 10 copies from auto's 30-minute teachers
# it read SST-2 at 87.6 against the word student's 85.2 (dev 86.4 / 84.6) and MR at 81.1 against
# 79.8 (dev 81.9 / 80.4); SUBJ alike (92.7 / 92.8, dev 94.1 / 93.7). The word student stays beside
# it: on TREC (40 copies, 8 epochs), where an unseen word is mostly a name, pieces read 94.6 against
# words' 95.6, though 93.4 against 92.5 on dev: dev decides between them.
PIECES = {"tokenizer": "subword", "embeddings": "transformer", "embedding_mode": "static"}
ALPHA = 0.0                                      # students learn the teacher's logits only
LINEAR = "fasttext"                              # the candidate no winner may fall under on dev
NARROW = "bilstm-pieces-distilled"               # the recipe's first student, the one the wide rung widens
WIDE = "bilstm-pieces-wide-distilled"            # the recipe's wider student, planned only where the floor allows
WIDE_HIDDEN = 128
# The piece student of 128 units a direction predicts 0.59 of the 64-unit one's sentences/s (each
# trained one step on SST-2, its 872 dev texts, adaptext.auto.speed's pass of 7 rounds; the word
# students 0.54): once the teacher has trained, the runner plans the wider student only when the
# narrow one's architecture, measured against the teacher, over this still meets the floor.
WIDE_SLOWDOWN = 1.7


@dataclass(frozen=True)
class Recipe:
    """What the students are given: augmented ``copies`` of each text, the BiLSTM students'
    ``epochs``, the ``teachers`` whose logits they average (seeds of the teacher), the file of
    unlabelled texts, and a wider BiLSTM student beside the narrow one."""
    copies: int = 10
    epochs: int = 5
    teachers: int = 1
    unlabeled: bool = False
    wide: bool = False

    def describe(self, unlabeled: int = 1, wide: bool = True, sample: int = 0) -> str:
        """'40 copies, 8 epochs, 1 teacher, the unlabelled texts, a wide BiLSTM' (``unlabeled``: the
        unlabelled texts auto was given; ``wide``: whether the floor left the wide student in;
        ``sample``: how many of the unlabelled texts the students take, 0: all)."""
        parts = [f"{self.copies} copies", f"{self.epochs} epochs",
                 f"{self.teachers} teacher{'s' if self.teachers > 1 else ''}"]
        texts = f"{sample:,} of the {unlabeled:,} unlabelled texts" if sample else "the unlabelled texts"
        parts += [texts] * bool(self.unlabeled and unlabeled) + ["a wide BiLSTM"] * (self.wide and wide)
        return ", ".join(parts)


# From the poorest to the richest; the plan takes the richest whose every candidate fits whole,
# the fallbacks at their minimum (none: the poorest, its epochs cut), and takes it again once the
# teacher's run has measured how fast this machine trains. The two poorest keep a short budget on
# a larger set from cutting the student below an epoch (SST-2 at 30 minutes planned 0.37 of an
# epoch over 10 copies: the teacher's logits over them took half the students' time). The copies
# come first: on TREC 40 copies gave the BiLSTM 1.6 points over 10 (5 epochs each) and 1.0 more
# than the same 40 cut to 2 epochs; on a few thousand product-review sentences 20 copies and 8
# epochs gave it 1.0 over 10 and 5. Then width: on SST-2 the 128-unit student read 0.36 over the
# 64-unit one (3 seeds each, same logits). An ensemble's teachers come last: each costs a
# teacher's training and its logits, and on SST-2 the 3-teacher ensemble's logits over the
# augmented copies gave its students nothing (87.63 against one teacher's 87.72, 3 seeds each;
# benchmarks/results/distill_phrases.md). From 5 copies on, each rung costs the students at most
# half as much again as the one before: with 5, 10 and 20 copies alone, SUBJ at 30 minutes could
# not afford 10 and left 6.5 minutes unspent. The unlabelled texts join after 10 copies, and as
# many of them as fit are taken before a richer rung (``richest``): beside SST-2's phrases and 10
# copies, 50,000 IMDB sentences lifted the piece student 0.96 on dev (three seeds each).
RECIPES = (Recipe(2), Recipe(5), Recipe(7), Recipe(), Recipe(unlabeled=True), Recipe(15, 5, unlabeled=True),
           Recipe(20, 5, unlabeled=True), Recipe(30, 5, unlabeled=True), Recipe(40, 5, unlabeled=True),
           Recipe(40, 8, unlabeled=True), Recipe(40, 8, 1, True, True), Recipe(40, 8, 2, True, True),
           Recipe(40, 10, 3, True, True))
NOT_IN_RECIPE = "not in the recipe the budget affords"


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
    unlabeled: int = 0                  # texts of the --unlabeled file
    unlabeled_length: float = 0.0       # their mean length in words

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
    optional: bool = False          # trained only when the recipe asks for it (an ensemble's teacher, a wide student)
    seed_offset: int = 0            # added to --seed: an ensemble's teachers differ by their seed
    ensemble: int = 1               # the teachers a student learns from (their logits averaged)
    recipe: int = 0                 # a student's or an ensemble teacher's recipe (its number in RECIPES, from 1)
    key: str = ""                   # its cost coefficient's name (EPOCH_S_PER_KTOKEN), what recalibration scales
    base_epoch_s: float = 0.0       # one epoch as planned, before recalibration
    fallback: bool = False          # for a floor the students miss: given what the teacher and the recipe leave

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


def pool(kind: ExampleKind, recipe: Recipe = Recipe(), unlabeled: str | None = None,
         sample: int = 0) -> list[Candidate]:
    """Every candidate auto knows, in plan order, with the epochs it gets when the budget allows
    (fastText 5, the other fast ones 10, Kim's own 25 cut to 10 so that the baselines leave the
    budget to the teacher, early stopping deciding within that; the teacher the 3 of the
    distillation tables; the students what ``recipe`` gives them). Pair and context data add
    attconv (light), the one fast model that reads them, undistilled and distilled. ``sample``: how
    many of the ``unlabeled`` file's texts the recipe's students take (0: all)."""
    text = kind == ExampleKind.TEXT
    found = [Candidate(LINEAR, {"model": "fasttext", "epochs": 5}),
             Candidate("bov", {"model": "bov", "epochs": 10}, fallback=True),
             Candidate("kim_cnn", {"model": "kim_cnn", "epochs": 10}, fallback=True),
             Candidate("kim_cnn-vectors", {"model": "kim_cnn", "embeddings": "transformer", "epochs": 10},
                       fallback=True)]
    if not text:
        found.append(Candidate("attconv", {"model": "attconv", "variant": "light", "epochs": 10}, fallback=True))
    found.append(Candidate(TEACHER_NAME, dict(TEACHER), role="teacher"))
    found += [Candidate(f"transformer-seed{k + 1}", dict(TEACHER), role="ensemble", optional=k >= recipe.teachers,
                        seed_offset=k) for k in (1, 2)]
    found += students(text, recipe, unlabeled, sample)
    for c in found:
        c.work = float(c.options["epochs"])
        if c.role in ("ensemble", "student"):
            c.recipe = RECIPES.index(recipe) + 1
    return found


def students(text: bool, recipe: Recipe, unlabeled: str | None, sample: int = 0) -> list[Candidate]:
    """The students of ``recipe``, each taught by the transformer (and its ensemble's seeds)."""
    # The recipe is the first student's (and the wide one's): over the encoder's word pieces it won
    # on dev in every 30-minute cell (benchmarks/results/auto_table.md). The word student and Kim's
    # CNN are fallbacks, faster (on SUBJ 58x and 52x the teacher against its 39x) for a floor it
    # misses, as the baselines are: they get what the recipe leaves, at least their minimum.
    # train options: the numbers of the distillation, and the path of the unlabelled texts
    distill: dict[str, float | str] = {"alpha": ALPHA, "augment": recipe.copies}
    if recipe.unlabeled and unlabeled:
        distill["unlabeled"] = unlabeled
        if sample:
            distill["unlabeled_sample"] = sample
    found = [Candidate(NARROW, {**BILSTM, **PIECES, **distill, "epochs": recipe.epochs}),
             Candidate("bilstm-distilled", {**BILSTM, **distill, "epochs": recipe.epochs}, fallback=text),
             Candidate("kim_cnn-distilled", {"model": "kim_cnn", **distill, "epochs": recipe.epochs}, fallback=text),
             Candidate(WIDE, {**BILSTM, **PIECES, "hidden": WIDE_HIDDEN, **distill, "epochs": recipe.epochs},
                       optional=not recipe.wide)]
    if not text:
        found.append(Candidate("attconv-distilled", {"model": "attconv", "variant": "light", **distill,
                                                     "epochs": recipe.epochs}))
    for c in found:
        c.teacher, c.role, c.ensemble = TEACHER_NAME, "student", recipe.teachers
    return found


def sample_of(found) -> int:
    """How many of the unlabelled texts the students of the plan ``found`` take (0: all, or none)."""
    return next((c.options.get("unlabeled_sample", 0) for c in found if c.role == "student"), 0)


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
    if multilabel and (c.teacher or c.role == "ensemble"):
        # distillation refuses a multi-label teacher (adaptext.training.distill.one_teacher_logits)
        return "distillation learns a single-label teacher's logits; these data are multi-label"
    if missing and (entry.name == "transformer" or c.options.get("embeddings")):
        return f"needs the pretrained encoder: {missing}"
    return None


def threads_speedup(threads: int) -> float:
    """How much faster than the coefficients' 2 threads a run trains with ``threads``. One thread
    is slower: on a quiet machine the teacher's epoch took 1.9 s per 1,000 tokens at one thread
    against 0.96 at two, kim_cnn's 0.059 against 0.043; the plan takes 0.6, between them, and the
    first measured epochs correct it. More threads are not counted on: the plan errs long there."""
    return 1.0 if threads >= 2 else 0.6


def cost_candidate(c: Candidate, s: DataSummary, threads: int, calibration: dict | None = None) -> float:
    """Set the candidate's per-epoch and fixed seconds on these data (its epochs scaled by the
    ``calibration`` measured so far: its cost key's, else the median of the others); the seconds
    of the teacher logits a student needs (paid by the first student of a teacher: the others
    reuse them from the cache), scaled as the teacher's epochs: the same encoder reads them."""
    model, opts, speedup = c.options["model"], c.options, threads_speedup(threads)
    unlabeled = (opts.get("unlabeled_sample") or s.unlabeled) if opts.get("unlabeled") else 0
    transfer = s.ktokens * (1 + opts.get("augment", 0) * COPY_LENGTH) if c.teacher else s.ktokens
    transfer += unlabeled * s.unlabeled_length / 1000
    c.key = cost_key(opts)
    width = WIDE_SLOWDOWN if model == "lstm" and opts.get("hidden", 0) > BILSTM["hidden"] else 1.0
    c.base_epoch_s = EPOCH_S_PER_KTOKEN[c.key] * transfer * width / speedup
    c.epoch_s = c.base_epoch_s * calibrated(c.key, calibration)
    all_ktokens = (s.train + s.dev + s.test) * s.mean_length / 1000
    c.fixed_s = RUN_S + READ_S_PER_KTOKEN * all_ktokens + speed_seconds(model, s)
    if model == "transformer" or opts.get("embeddings"):
        c.fixed_s += ENCODER_LOAD_S
    if c.key == "kim_cnn-vectors":             # a word's vector is read from the encoder; a piece's is its input row
        c.fixed_s += VECTORS_S_PER_KTOKEN * s.ktokens / speedup
    if c.teacher:
        c.fixed_s += AUGMENT_S_PER_KTOKEN * s.ktokens * opts.get("augment", 0)
    examples = s.train * (1 + opts.get("augment", 0)) + unlabeled if c.teacher else s.train
    batch = opts.get("batch_size") or get_entry(model).train_defaults.get("batch_size", 50)
    c.steps_per_epoch = max(1, math.ceil(examples / batch))
    c.min_work = max(MIN_FRACTION, min(1.0, MIN_EXAMPLES / max(examples, 1)))
    c.min_work = max(c.min_work, 1 / c.steps_per_epoch)
    if not c.teacher:
        return 0.0
    return ENCODER_S_PER_KTOKEN * transfer * c.ensemble / speedup * calibrated("transformer", calibration)


def cost_key(options: dict) -> str:
    """The name of a candidate's cost coefficient (``EPOCH_S_PER_KTOKEN``) from its options."""
    if options.get("tokenizer") == "subword":
        return f"{options['model']}-pieces"
    return "kim_cnn-vectors" if options.get("embeddings") else options["model"]


def calibrated(key: str, calibration: dict | None) -> float:
    """How much longer than planned an epoch of ``key`` runs here: its measured factor, else the
    median of the factors measured so far (the machine's load moves every model alike), else 1."""
    if not calibration:
        return 1.0
    if key in calibration:
        return calibration[key]
    factors = sorted(calibration.values())
    return factors[len(factors) // 2]


def speed_seconds(model: str, s: DataSummary) -> float:
    """The candidate's share of the throughput pass (at one thread, whatever the runs trained
    with): loading it, a warm-up and ``ROUNDS`` passes over up to 1,000 dev texts."""
    ktokens = SPEED_PASSES * min(s.dev, SPEED_TEXTS) * s.mean_length / 1000
    return 1.0 + PREDICT_S_PER_KTOKEN.get(model, 0.01) * ktokens


def human(seconds: float) -> str:
    """90 -> '1.5 min', 40 -> '40 s'."""
    return f"{seconds:.0f} s" if seconds < 60 else f"{seconds / 60:.1f} min"


def make_plan(summary: DataSummary, budget_s: float, multilabel: bool = False, kinds=(ExampleKind.TEXT,),
              threads: int = 1, encoder: bool | None = None, unlabeled: str | None = None,
              only: list | None = None) -> list[Candidate]:
    """The candidates for these data within ``budget_s`` seconds, each costed and its epochs
    capped so that the plan fits, with the richest recipe for the students that fits whole;
    those the data, extras or budget rule out marked skipped. ``encoder``: whether the
    pretrained encoder is installed (None: look); ``unlabeled``: a file of unlabelled texts the
    students may learn from; ``only``: the names of the candidates to keep (the others left out).
    A budget too short for even the first candidate's minimum is a ``UsageError`` naming the time
    it needs."""
    missing = encoder_available() if encoder is None else (None if encoder else "not installed")
    kind = kinds[0] if kinds else summary.kind
    seconds = budget_s - START_S - FINISH_S
    found, logits = richest(lambda recipe, sample: left_out(pool(kind, recipe, unlabeled, sample), only), seconds,
                            summary, kinds, multilabel, missing, threads)
    usable = [c for c in found if not c.skip]
    if not usable:
        raise UsageError(f"auto has no candidate model for {'/'.join(kinds)} examples; train one with adaptext train")
    first = usable[0]
    if first.cost(first.min_work) > seconds:
        need = math.ceil((first.cost(first.min_work) + START_S + FINISH_S) / 10) * 10
        raise UsageError(f"--time {human(budget_s)} is too short for even the first candidate ({first.name}, "
                         f"{first.min_work:g} epoch: about {human(need)} on these data); give --time {need}s or more")
    allocate(found, seconds, logits)
    return found


def replan(summary: DataSummary, seconds: float, calibration: dict, names: set, kinds=(ExampleKind.TEXT,),
           multilabel: bool = False, threads: int = 1, unlabeled: str | None = None) -> list[Candidate]:
    """Once the teacher has trained: its ensemble's seeds and its students among ``names`` (those
    not started), planned again from the richest recipe that fits whole in ``seconds`` (as
    ``whole_cost`` counts), costed with the ``calibration`` measured so far, and their epochs
    allocated as ``make_plan`` does: the machine's speed and load are known by then."""
    kind = kinds[0] if kinds else summary.kind
    trained = frozenset({TEACHER_NAME})
    found, logits = richest(lambda recipe, sample: [c for c in pool(kind, recipe, unlabeled, sample)
                                                    if c.name in names],
                            seconds, summary, kinds, multilabel, None, threads, calibration, trained)
    allocate(found, seconds, logits, trained)
    return found


def left_out(found: list[Candidate], only: list | None) -> list[Candidate]:
    """``found``, those not in ``only`` skipped (the data's and extras' reasons come first)."""
    for c in found:
        if only and c.name not in only:
            c.skip = "left out (only: " + ", ".join(only) + ")"
    return found


def richest(candidates, seconds: float, summary: DataSummary, kinds, multilabel: bool, missing, threads: int,
            calibration: dict | None = None, trained: frozenset = frozenset()) -> tuple[list, dict]:
    """The costed candidates (``candidates(recipe, sample)``) of the richest recipe that fits whole in
    ``seconds`` (``whole_cost``) with as many of the unlabelled texts as fit: all of them, else the
    largest of ``samples`` (a file too large for the budget is sampled, not dropped), else none (the
    recipes without them); else of the poorest. And the teacher logits each student needs."""
    ladder = list(reversed(RECIPES))
    tries = [(r, n) for n in [0] + samples(summary) for r in ladder if r.unlabeled] + \
        [(r, 0) for r in ladder if not r.unlabeled]
    for recipe, sample in tries:
        found, logits = costed(candidates(recipe, sample), summary, kinds, multilabel, missing, threads, calibration)
        if whole_cost(found, logits, trained) <= seconds:
            return found, logits
    return found, logits


def samples(s: DataSummary) -> list[int]:
    """The samples of the unlabelled texts tried when all of them do not fit, largest first: half of
    them, and half again, no fewer than the training texts (fewer add less than one more copy of
    each training text, which the recipes without them buy)."""
    found, n = [], s.unlabeled // 2
    while n >= max(s.train, 1):
        found.append(n)
        n //= 2
    return found


def costed(found: list, summary: DataSummary, kinds, multilabel: bool, missing, threads: int,
           calibration: dict | None = None) -> tuple[list, dict]:
    """The candidates with their costs and what rules them out; the teacher logits of each student."""
    logits = {}
    for c in found:
        c.skip = why_not(c, kinds, multilabel, missing) or c.skip
        if c.optional and not c.skip:
            c.skip = NOT_IN_RECIPE
        logits[c.name] = cost_candidate(c, summary, threads, calibration)
        c.estimate_s = round(c.cost(c.work), 1)
    return found, logits


def whole_cost(found: list, logits: dict, trained: frozenset = frozenset()) -> float:
    """The seconds of every candidate the data allow, each at its planned epochs, a fallback at
    its minimum (a student only with its teacher, planned or ``trained`` already)."""
    kept = [c for c in found if not c.skip]
    names = {c.name for c in kept} | set(trained)
    paid = {c.teacher for c in kept if c.teacher and c.teacher in names}
    return sum(c.cost(c.min_work if c.fallback else c.work) for c in kept
               if not c.teacher or c.teacher in names) + \
        sum(max(logits[c.name] for c in kept if c.teacher == t) for t in paid)


def unspent(found: list, seconds: float) -> float:
    """What the plan leaves of ``seconds`` (the budget less start and finish)."""
    return max(0.0, seconds - sum(c.estimate_s for c in found if not c.skip))


def allocate(found: list[Candidate], seconds: float, logits: dict, trained: frozenset = frozenset()) -> None:
    """First every candidate at its minimum, in plan order, while the budget lasts (a student
    only with its teacher, kept or ``trained`` already; the first student of a teacher also pays
    for its logits); then what is left raises the teacher to its epochs, then each other kept
    candidate in the order ``extra_rank`` gives."""
    kept: list[Candidate] = []
    paid: set[str] = set()          # the teachers whose logits a student already paid for
    left = seconds
    for c in found:
        if c.skip:
            continue
        teacher = c.teacher or (TEACHER_NAME if c.role == "ensemble" else None)
        if teacher and teacher not in {k.name for k in kept} | set(trained):
            c.skip, c.for_time = f"its teacher, {teacher}, is not trained", True
            continue
        extra = logits[c.name] if c.teacher and c.teacher not in paid else 0.0
        need = c.cost(c.min_work) + extra
        if need > left:
            c.skip, c.for_time = f"needs {human(need)} at least; the budget leaves {human(max(left, 0))} for it", True
            continue
        if extra and c.teacher:         # only a student (one with a teacher) pays for logits
            c.fixed_s += extra
            paid.add(c.teacher)
        left -= need
        kept.append(c)
    rank = {c.name: extra_rank(c, kept) for c in kept}
    for c in sorted(kept, key=lambda c: rank[c.name]):
        planned = c.work
        if rank[c.name] == HELD:
            c.set_work(c.min_work)
            c.notes.append(f"{_work(c)} of the {planned:g} planned: a fallback, the students' recipe first")
            continue
        c.fit_to(c.cost(c.min_work) + max(left, 0.0))     # estimates are rounded: left may dip under 0
        left -= c.estimate_s - c.cost(c.min_work)
        if c.work < planned:
            c.notes.append(f"{_work(c)} of the {planned:g} planned, to fit the budget")


HELD = 3            # extra_rank's last: no epochs beyond the minimum


def extra_rank(c: Candidate, kept: list[Candidate]) -> int:
    """When a kept candidate gets epochs beyond its minimum: the teacher first (students learn from
    it), then the recipe's students, the linear baseline and an ensemble's teachers, then the
    fallback students, in plan order. With a student planned on a recipe short of the richest, the
    other baselines (trained before the teacher) are ``HELD`` at their minimum: what the plan leaves
    over waits for the recipe chosen again once the teacher has trained. A teacher that no kept
    student learns from ranks as a baseline: under a relative floor it cannot win."""
    taught = any(k.teacher for k in kept)
    if c.role == "teacher":
        return 0 if taught else 2
    if c.fallback and c.role == "baseline" and any(k.teacher and k.recipe < len(RECIPES) for k in kept):
        return HELD
    return 2 if c.fallback else 1


def _work(c: Candidate) -> str:
    steps = c.options.get("max_steps")
    return f"{steps} steps ({c.work:.2f} epoch)" if steps else f"{c.work:g} epoch{'s' if c.work != 1 else ''}"
