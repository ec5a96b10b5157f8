"""Shared by the benchmark scripts: the result file of ../shared/BENCHMARKS.md (JSON and a
markdown table with the same rows), machine description, mean / std over seeds."""
from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DATA = Path(os.environ.get("ADAPTEXT_DATA", ROOT.parent / "shared" / "data")).resolve()
GLOVE = DATA / "glove" / "glove.6B.50d.subset.txt.gz"


def commit() -> str:
    if os.environ.get("ADAPTEXT_COMMIT"):        # runs on a copy of the tree without .git
        return os.environ["ADAPTEXT_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        return "unknown"


def machine() -> str:
    import torch
    dev = "CPU only"
    if torch.cuda.is_available():
        dev = f"GPU {torch.cuda.get_device_name(0)}"
    cores = os.cpu_count()
    mem = ""
    try:
        mem = f", {round(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30)} GiB"
    except (ValueError, OSError):
        pass
    return f"{cores} cores{mem}, {dev} ({platform.machine()}, torch {torch.__version__}, {torch.get_num_threads()} threads)"


def command() -> str:
    return "python " + " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:])


def stats(values) -> dict:
    v = np.asarray(values, dtype=float)
    return {"mean": round(float(v.mean()), 2), "std": round(float(v.std()), 2), "n": int(len(v)),
            "values": [round(float(x), 2) for x in v]}


def write(name: str, rows: list[dict], notes: str = "", out: str | Path | None = None) -> Path:
    """benchmarks/results/<name>.json and .md."""
    path = Path(out) if out else RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"benchmark": name, "command": command(), "commit": commit(),
           "date": datetime.date.today().isoformat(), "machine": machine(), "rows": rows, "notes": notes}
    path.write_text(json.dumps(doc, indent=2) + "\n")
    path.with_suffix(".md").write_text(markdown(doc))
    return path


def markdown(doc: dict) -> str:
    rows = doc["rows"]
    cols = [c for c in ("model", "variant", "dataset", "split", "metric", "mean", "std", "n", "min", "max", "paper",
                        "baseline", "ratio", "seconds") if any(c in r for r in rows)]
    lines = [f"# {doc['benchmark']}", "", f"- command: `{doc['command']}`", f"- commit: `{doc['commit']}`",
             f"- date: {doc['date']}", f"- machine: {doc['machine']}", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(_fmt(r.get(c, "")) for c in cols) + " |")
    if doc.get("notes"):
        lines += ["", doc["notes"]]
    return "\n".join(lines) + "\n"


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)
