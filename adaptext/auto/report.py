"""The report of an auto run: OUT/report.md, OUT/report.html (one self-contained page, the plot
inside it) and OUT/frontier.png (dev score against throughput, the floor, the winner), all from
OUT/auto.json and the winner's own metrics.json, so that every number in them is a run's. Where
the winner's words were attributed on a few dev texts (OUT/why.json), the page shows them
coloured as words.html and the service's page do (``explain.highlight``)."""
from __future__ import annotations

import base64
import html
from pathlib import Path

from ..runs.files import read_json, write_atomic
from ..runs.rundir import RunDir
from ..tables import markdown_table
from .plan import RECIPES, WIDE, human, sample_of
from .state import AutoState, as_state

NAMES = {"accuracy": "accuracy", "micro_f1": "micro-F1"}


def write_report(out: Path, state: AutoState | dict) -> dict:
    """Write the plot, the Markdown and the HTML report (of the journal, or of its JSON); their paths."""
    state = as_state(state)
    plot = out / "frontier.png"
    frontier_plot(state, plot)
    metrics = _winner_metrics(out, state)
    write_atomic(out / "report.md", markdown(state, metrics))
    write_atomic(out / "report.html", page(state, metrics, plot, winner_words(out, state)))
    return {"report": str(out / "report.md"), "html": str(out / "report.html"), "plot": str(plot)}


WHY = "why.json"        # the winner's word attributions on a few dev texts: {"winner", "records"}


def winner_words(out: Path, state: AutoState) -> list[dict]:
    """The explanation records of OUT/why.json, if they are the present winner's."""
    path = out / WHY
    why = read_json(path) if path.is_file() and state.winner else {}
    return why.get("records", []) if why.get("winner") == state.winner else []


def _winner_metrics(out: Path, state: AutoState) -> dict | None:
    return read_json(RunDir(out / state.winner).metrics) if state.winner else None


# ------------------------------------------------------------------ tables
def candidate_table(state: AutoState | dict) -> tuple[list, list]:
    """(header, rows) of the candidates' table, numbers as the report prints them."""
    state = as_state(state)
    name = NAMES.get(state.metric, state.metric)
    header = ["candidate", "model", f"dev {name}", f"test {name}", "sentences/s", "x teacher", "size (MB)",
              "training (s)", "status"]
    rows = []
    for r in state.candidates:
        done = r.status == "done"
        status = r.status + (f": {r.reason}" if r.reason else "")
        status += "".join(f"; {n}" for n in r.notes or ())
        mark = " (winner)" if r.name == state.winner else ""
        rows.append([r.name + mark, r.model, _num(r.dev, ".2f", done), _num(r.test, ".2f", done),
                     _num(r.speed, ",.0f", done), _num(r.ratio, ".1f", done), _num(r.size_mb, ".2f", done),
                     _num(r.train_s, ".1f", done), status])
    return header, rows


def _num(value, spec: str, done: bool) -> str:
    return format(value, spec) if done and value is not None else ""


def per_class_table(metrics: dict) -> tuple[str, list, list]:
    """(split, header, rows) of the winner's per-class scores: test, else dev."""
    split = "test" if "test" in metrics else "dev"
    rows = [[label, f"{s['precision']:.2f}", f"{s['recall']:.2f}", f"{s['f1']:.2f}", str(s["support"])]
            for label, s in metrics[split].get("per_class", {}).items()]
    return split, ["class", "precision", "recall", "F1", "support"], rows


def confusion_table(metrics: dict) -> tuple[str, list, list] | None:
    """(split, header, rows) of the winner's confusion matrix (rows gold, columns predicted);
    None for multi-label runs, which have none."""
    split = "test" if "test" in metrics else "dev"
    cm = metrics[split].get("confusion_matrix")
    if not cm:
        return None
    rows = [[gold, *map(str, row)] for gold, row in zip(cm["labels"], cm["matrix"])]
    return split, ["gold \\ predicted", *cm["labels"]], rows


def summary_lines(state: AutoState) -> list[str]:
    """The sentences above the table: the data, the budget, the floor and the winner."""
    d, name, floor = state.data, NAMES.get(state.metric, state.metric), state.min_speed
    lines = [f"Data: {d.train:,} training, {d.dev:,} dev and {d.test:,} test examples ({d.kind}"
             f"{', multi-label' if d.multilabel else ''}), {d.mean_length:.1f} words a text on average.",
             f"Budget {human(state.budget_s)}, {human(state.elapsed_s)} spent. Scores: {name}; the winner is "
             f"the best on dev among the candidates at or above the floor "
             f"({floor.describe() if floor else 'none given'}) and never under the linear baseline (fasttext) on "
             f"dev; test is read from each run, never chosen on."]
    if state.recipes and any(r.role == "student" and r.status != "skipped" for r in state.candidates):
        number = state.recipes[-1]
        again = f"; chosen again once the teacher had trained (planned: recipe {state.recipes[0]})" \
            if len(state.recipes) > 1 else ""
        wide = state.row(WIDE)                  # skipped: the floor (or the budget) left it out
        recipe = RECIPES[number - 1].describe(d.unlabeled, not (wide and wide.status == "skipped"),
                                              sample_of(r.plan for r in state.candidates if r.plan))
        lines.append(f"Students' recipe {number}: {recipe}{again}.")
    win = state.row(state.winner)
    if win:
        met = "" if state.floor_met else " (no candidate reaches the floor: the fastest is the winner)"
        ratio = f", {win.ratio:.1f}x the teacher" if win.ratio is not None else ""
        lines.append(f"Winner: {win.name}, dev {win.dev:.2f}, test {_num(win.test, '.2f', True)}, "
                     f"{_num(win.speed, ',.0f', True)} sentences/s{ratio}{met}. Its run: `best/`, a link to "
                     f"`{win.name}/`.")
    else:
        lines.append("Winner: none (no candidate finished).")
    if state.speed:
        p = state.speed
        lines.append(f"Throughput: every finished run and the teacher measured together at the end, "
                     f"`adaptext.load(run).predict` over {p.texts:,} dev texts, batch {p.batch}, {p.rounds} rounds "
                     f"interleaved (the order rotated each round), {p.threads} torch thread, timed by the "
                     f"{p.clock}; the median round of each. x teacher: sentences/s over the teacher's in the "
                     f"same pass.")
    return lines


# ------------------------------------------------------------------ Markdown and HTML
def winner_tables(state: AutoState, metrics: dict | None) -> list[tuple[str, list, list]]:
    """The winner's tables, (title, header, rows) each, as both the page and the markdown show them."""
    if not metrics:
        return []
    split, header, rows = per_class_table(metrics)
    found = [(f"The winner, {state.winner}: per class ({split})", header, rows)]
    confusion = confusion_table(metrics)
    if confusion:
        found.append((f"Its confusion matrix ({confusion[0]}; rows gold, columns predicted)", *confusion[1:]))
    return found


def markdown(state: AutoState, metrics: dict | None) -> str:
    parts = ["# adaptext auto\n", "\n\n".join(summary_lines(state)) + "\n", "![accuracy against speed](frontier.png)\n",
             "## Candidates\n", markdown_table(*candidate_table(state))]
    for title, header, rows in winner_tables(state, metrics):
        parts += [f"## {title}\n", markdown_table(header, rows)]
    parts += ["## Commands that reproduce each run\n",
              "\n".join(f"- {r.name}: `{r.command}`" for r in state.candidates if r.command) + "\n"]
    return "\n".join(parts)


def html_table(header: list, rows: list) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def page(state: AutoState, metrics: dict | None, plot: Path, words: list[dict] | None = None) -> str:
    """The report as one HTML page, the plot embedded (base64 PNG): it can be mailed alone;
    ``words``: the winner's explanation records, shown coloured."""
    from ..explain.highlight import explanation_html
    image = base64.b64encode(plot.read_bytes()).decode("ascii")
    parts = [f"<p>{html.escape(line).replace('`', '')}</p>" for line in summary_lines(state)]
    parts += [f'<img alt="accuracy against speed" src="data:image/png;base64,{image}">',
              "<h2>Candidates</h2>", html_table(*candidate_table(state))]
    for title, header, rows in winner_tables(state, metrics):
        parts += [f"<h2>{html.escape(title)}</h2>", html_table(header, rows)]
    if words:
        parts += [f"<h2>Why: the winner's words on {len(words)} dev texts</h2>",
                  "<p>Each word coloured by how much it moved the predicted label's score (integrated "
                  "gradients): green raised it, red lowered it.</p>",
                  *(f'<div class="why">{explanation_html(r)}</div>' for r in words)]
    parts.append("<h2>Commands that reproduce each run</h2><ul>" + "".join(
        f"<li>{html.escape(r.name)}: <code>{html.escape(r.command)}</code></li>"
        for r in state.candidates if r.command) + "</ul>")
    style = ("body{font-family:sans-serif;max-width:70em;margin:2em auto}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right}img{max-width:100%}")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>adaptext auto</title><style>{style}"
            f"</style></head><body><h1>adaptext auto</h1>{''.join(parts)}</body></html>\n")


# ------------------------------------------------------------------ the plot and the plan
def frontier_plot(state: AutoState, path: Path) -> None:
    """Dev score against sentences/s (log scale) of the finished candidates, the floor as a
    vertical line (a relative floor at its multiple of the teacher's speed), the winner circled."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    done = [r for r in state.candidates if r.status == "done" and r.speed]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for k, r in enumerate(sorted(done, key=lambda r: r.dev)):
        winner = r.name == state.winner
        ax.scatter([r.speed], [r.dev], s=140 if winner else 40, marker="*" if winner else "o",
                   color="tab:red" if winner else "tab:blue", zorder=3)
        # labels of neighbouring scores alternate above and below their points, so that they overlap less
        ax.annotate(r.name + (" (winner)" if winner else ""), (r.speed, r.dev), textcoords="offset points",
                    xytext=(5, 4 if k % 2 else -11), fontsize=8)
    ax.margins(x=0.2, y=0.12)
    floor = state.min_speed
    at = floor and (floor.value * state.teacher_speed if floor.relative and state.teacher_speed else
                    None if floor.relative else floor.value)
    if floor and at:
        ax.axvline(at, color="tab:gray", linestyle="--", label=f"floor: {floor}" + ("" if floor.relative else "/s"))
        ax.legend(loc="lower left", fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("sentences/s (batch 64, one thread, CPU time)")
    ax.set_ylabel(f"dev {NAMES.get(state.metric, state.metric)}")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plan_text(state: AutoState, budget_s: float) -> str:
    """The plan as --dry-run prints it: each candidate's epochs, augmented copies (students; +u:
    the unlabelled texts too) and estimated minutes, and what the plan leaves unspent."""
    width = max(len("candidate"), *(len(r.name) for r in state.candidates))
    lines = [f"{'candidate':<{width}} {'model':<12} {'epochs':>8} {'copies':>6} {'minutes':>8}  status"]
    total = 0.0
    for r in state.candidates:
        opts = r.plan.options
        work = f"{opts['max_steps']} st" if opts.get("max_steps") else str(opts.get("epochs", ""))
        planned = r.status != "skipped"
        total += r.estimate_s if planned and r.status != "done" else 0.0
        status = r.status + (f": {r.reason}" if r.reason else "")
        minutes = f"{r.estimate_s / 60:.1f}" if planned else "-"
        copies = str(opts.get("augment", "")) + ("+u" if opts.get("unlabeled") else "")
        lines.append(f"{r.name:<{width}} {r.model:<12} {work:>8} {copies:>6} {minutes:>8}  {status}")
    lines.append(f"about {total / 60:.1f} min to train of the {budget_s / 60:.1f} min budget "
                 f"({state.elapsed_s / 60:.1f} spent before; the plan leaves {state.unspent_s / 60:.1f} min unspent)")
    return "\n".join(lines)
