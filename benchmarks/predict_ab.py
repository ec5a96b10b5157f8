"""Prediction speed of an earlier checkout against this one, in one process: ``kim_speed.py``'s
configurations (Kim CNN: rand on TREC and SST-2, non-static and multichannel GloVe on SST-2;
``cells.KIM_SPEED_CONFIGS``, timed by ``projection_speed.timed``), each trained one step by this
checkout and loaded twice by each package (after, before, before, after), the earlier one
imported under another name; each round times the four in turn, each round starting one further
along.

Two processes running the same code differ by up to a fifth in prediction speed here (where a
process's arrays land in memory), so ``loader_speed.py``'s process-per-side runs cannot resolve a
few percent; one process holding both packages can.

    git worktree add /tmp/before <commit>
    python benchmarks/predict_ab.py --before /tmp/before
"""
from __future__ import annotations

import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import cells  # noqa: E402
import common  # noqa: E402
import projection_speed  # noqa: E402

ALIAS = "adaptext_before"
HOW = ("batch 64", "calls of 16")


def args():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="a checkout of the earlier commit")
    ap.add_argument("--rounds", type=int, default=8, help="timed passes of each side per configuration")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None)
    return ap.parse_args()


def earlier_package(before: Path, into: Path):
    """The checkout's package copied to ``into`` as ``adaptext_before`` and imported. Its modules
    import each other relatively; an absolute self-import would load this checkout's instead."""
    if re.search(r"^\s*(from|import) adaptext\b", "\n".join(
            p.read_text(encoding="utf-8") for p in (before / "adaptext").rglob("*.py")), re.M):
        raise SystemExit(f"{before}: its package imports itself by name; it cannot be loaded beside this one")
    import importlib.util
    shutil.copytree(before / "adaptext", into / ALIAS)
    spec = importlib.util.spec_from_file_location(ALIAS, into / ALIAS / "__init__.py",
                                                  submodule_search_locations=[str(into / ALIAS)])
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules[ALIAS] = package           # its relative imports find their modules under this name
    spec.loader.exec_module(package)
    return package


def config_rows(dataset: str, label: str, options: dict, work: Path, before_pkg, rounds: int) -> list[dict]:
    import adaptext
    run = work / re.sub(r"\W+", "-", f"{dataset}-{label}")
    projection_speed.trained(dataset, options, run, quick=False)
    texts = common.test_texts(dataset)[:1000]
    # each side loaded twice, in the order after, before, before, after: the first model loaded
    # in a process predicts a few percent faster than the next (where its arrays land)
    clfs = [("after", adaptext.load(run)), ("before", before_pkg.load(run)), ("before", before_pkg.load(run)),
            ("after", adaptext.load(run))]
    rates = {(side, how): [] for side in ("after", "before") for how in HOW}
    for r in range(rounds):
        for side, clf in clfs[r % 4:] + clfs[:r % 4]:
            timed = projection_speed.timed(clf, texts)
            for how in HOW:
                rates[(side, how)].append(timed[how])
    rows = []
    for how in HOW:
        a, b = (statistics.median(rates[(side, how)]) for side in ("after", "before"))
        rows.append({"model": "kim_cnn", "variant": f"{label}, {how}", "dataset": dataset, "metric": "sentences_per_s",
                     "mean": round(a, 1), "n": 2 * rounds, "values": [round(x, 1) for x in rates[("after", how)]],
                     "baseline": f"before ({b:.1f})", "ratio": round(a / b, 3)})
        print(f"{dataset} {label} {how}: {a:.0f} against {b:.0f} sentences/s ({a / b:.3f})", flush=True)
    return rows


def main() -> None:
    a = args()
    import torch
    torch.set_num_threads(a.threads)
    before = Path(a.before).resolve()
    before_commit = common.commit(before, short=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        pkg = earlier_package(before, Path(tmp))
        for dataset, label, options in cells.KIM_SPEED_CONFIGS:
            rows += config_rows(dataset, label, options, Path(tmp), pkg, a.rounds)
    ratios = [r["ratio"] for r in rows]
    geo = statistics.geometric_mean(ratios)
    notes = (f"'before': the package of --before ({before_commit}) imported beside this commit's in one process; "
             f"each configuration trained one step by this commit and loaded twice by each package, in the order "
             f"this, before, before, this (the first model loaded predicts a few percent faster); {a.rounds} rounds "
             f"each timing the four in turn, each round starting one further along (kim_speed.py's timing: best of 3 "
             f"after a warm-up, the first 1,000 test sentences, TREC: 500); {a.threads} threads; mean: the median "
             f"of this commit's {2 * a.rounds} timings, values: each of them; ratio: that median over the earlier "
             f"package's. "
             f"Geometric mean of the ratios: {geo:.3f} (lowest {min(ratios):.3f}, highest {max(ratios):.3f}).")
    print(common.write("predict_ab", rows, notes, a.out))


if __name__ == "__main__":
    main()
