"""How long auto's candidates trained against what its plan expected, read back from finished
auto runs (their OUT/auto.json): each cost key's calibration factor (its first epoch's seconds
over the plan's, as ``adaptext.auto.plan.calibrated`` applies it), and the teacher's logits over
the transfer set (the first student's seconds besides its epochs and its other fixed costs) over
the plan's, before either was calibrated.

The plan costs a candidate not yet measured with the median of the factors measured so far, which
is a fair guess only where every coefficient describes the same machine and load. The median of
each key's factors over these runs is what rebases ``EPOCH_S_PER_KTOKEN`` and the encoder's
coefficient on the machine the runs measured.

    python benchmarks/auto_calibration.py ~/cells/sst2/auto-30m ~/cells/mr/auto-30m ...
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path

import common  # noqa: E402

from adaptext.auto import plan as P
from adaptext.auto.state import read_state

FIRST_STUDENT = "bilstm-pieces-distilled"
LOGITS = "teacher logits"


def factors(run: Path) -> dict[str, float]:
    """Each cost key's factor in one auto run, and the teacher logits' (``LOGITS``)."""
    state = read_state(run / "auto.json")
    found = dict(state.calibration)
    row = state.row(FIRST_STUDENT)
    log = run / FIRST_STUDENT / "log.csv"
    if row and row.done and row.train_s and row.plan and log.is_file() and "transformer" in state.calibration:
        epochs = sum(float(r["seconds"]) for r in csv.DictReader(open(log)))
        # the plan's fixed seconds hold its logits, scaled by the teacher's factor, and costs that
        # do not depend on the coefficients measured here (reading, loading, the throughput pass)
        other = P.Candidate(row.name, dict(row.plan.options), row.plan.teacher)
        P.cost_candidate(other, state.data, state.threads)
        planned = (row.plan.fixed_s - other.fixed_s) / state.calibration["transformer"]
        found[LOGITS] = round((row.train_s - epochs - other.fixed_s) / planned, 3)
    return found


def dataset_of(run: Path) -> str:
    return run.resolve().parent.name


def rows_of(runs: list[Path]) -> list[dict]:
    measured = {dataset_of(r) + f" ({k})": factors(r) for k, r in enumerate(runs, 1)}
    keys = sorted({k for f in measured.values() for k in f})
    rows = []
    for key in keys:
        values = [f[key] for f in measured.values() if key in f]
        rows.append({"model": key, "variant": "measured over planned", "dataset": "-", "metric": "factor",
                     **common.stats(values), "min": min(values), "max": max(values),
                     "median": round(statistics.median(values), 3)})
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="auto's output folders (each holding auto.json)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--note", default="", help="a sentence added to the notes (the code each run was made with)")
    a = ap.parse_args(argv)
    missing = [str(r) for r in a.runs if not (r / "auto.json").is_file()]
    if missing:
        sys.exit(f"no auto.json in {', '.join(missing)}")
    runs = ", ".join(f"{dataset_of(r)} ({r})" for r in a.runs)
    common.write("auto_calibration", rows_of(a.runs), f"Finished auto runs read: {runs}. A factor is a key's "
                 "first epoch as log.csv measured it over its planned epoch (the plan's coefficient, before any "
                 "calibration); the median is what rebases the coefficient. " + a.note, a.out)


if __name__ == "__main__":
    main()
