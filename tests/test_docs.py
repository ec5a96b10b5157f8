"""The README and docs/: the README fits a screen (at most 150 lines), the docs build with
``mkdocs build --strict``, the README's relative links lead to files, and every ``adaptext`` or
``python`` command of a ```bash block in README.md or docs/*.md is run as written (the list
below) or says why it is not: ``# not run here: REASON`` at the end of its line, or
``<!-- not run by the tests: REASON -->`` just before its block."""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, bundled_examples

README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]

# The commands of README.md and docs/ that are run as written. RUN_HERE: by
# test_the_readme_commands_run_as_written below, in this order, in one fresh folder (train.csv,
# test.csv and new.csv made there from the bundled TREC questions). RUN_ELSEWHERE: by whom.
RUN_HERE = [
    "adaptext train",                                                   # the quick start
    'adaptext predict runs/kim_cnn-trec-demo-seed1 <<< "Who wrote Hamlet ?"',
    "adaptext evaluate runs/kim_cnn-trec-demo-seed1 --split test",
    "python -c \"import adaptext; print(adaptext.load('runs/kim_cnn-trec-demo-seed1')"
    ".predict(['How far is the moon ?']))\"",
    "adaptext train --model kim_cnn --data train.csv --test test.csv --text-col text --label-col label "
    "--out runs/mine",                                                  # training on your data
    "adaptext evaluate runs/mine --split dev",
    "adaptext predict runs/mine new.csv",
]
RUN_ELSEWHERE = {"python -m pytest -q": ".ci/run (the README's test command)"}

NOT_RUN_LINE = re.compile(r"not run here: \S")
NOT_RUN_BLOCK = re.compile(r"<!-- not run by the tests: \S.* -->")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _normal(command: str) -> str:
    return " ".join(command.split())


def _split_comment(line: str) -> tuple[str, str | None]:
    """A shell line's command and its trailing comment (a # outside quotes after a blank)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), None


def bash_commands(path: Path):
    """(line number, command, trailing comment, reason of the block's marker or None) for every
    logical line of the file's ```bash blocks that runs adaptext or python."""
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```bash":
            i += 1
            continue
        before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        block_reason = before if NOT_RUN_BLOCK.fullmatch(before) else None
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            start, logical = i + 1, lines[i]
            while logical.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                logical = logical.rstrip()[:-1] + " " + lines[i].strip()
            command, comment = _split_comment(logical.strip())
            if re.match(r"(adaptext|python)(\s|$)", command):
                yield start, command, comment, block_reason
            i += 1
        i += 1


def test_the_readme_fits_in_150_lines():
    n = len(README.read_text().splitlines())
    assert n <= 150, f"README.md has {n} lines; move the detail into docs/"


def test_the_docs_build_strict(tmp_path):
    pytest.importorskip("mkdocs")
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    built = [site / ("" if p.stem == "index" else p.stem) / "index.html" for p in PAGES[1:]]
    assert all(page.is_file() for page in built), [str(page) for page in built if not page.is_file()]


def test_every_relative_link_of_the_readme_leads_to_a_file():
    targets = [t for t in LINK.findall(README.read_text())
               if not re.match(r"[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]
    assert targets, "the README links into docs/"
    missing = [t for t in targets if not (ROOT / t.split("#")[0]).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_every_command_in_the_readme_and_docs_is_run_or_says_why_not():
    run = {_normal(c) for c in [*RUN_HERE, *RUN_ELSEWHERE]}
    unmarked, seen = [], set()
    for path in PAGES:
        for line, command, comment, block_reason in bash_commands(path):
            seen.add(_normal(command))
            if _normal(command) in run or block_reason or (comment and NOT_RUN_LINE.match(comment)):
                continue
            unmarked.append(f"{path.relative_to(ROOT)}:{line}: {command}")
    assert not unmarked, ("run these commands in a test and list them in RUN_HERE, or mark them "
                          "'# not run here: REASON' / '<!-- not run by the tests: REASON -->':\n" + "\n".join(unmarked))
    stale = [c for c in run if c not in seen]
    assert not stale, f"listed as run but in no ```bash block of the README or docs/: {stale}"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert all(any(line.strip() == c for line in ci) for c in RUN_ELSEWHERE), ".ci/run no longer runs them"


def test_markers_are_recognised():
    assert _split_comment('adaptext x --text "a # b"   # not run here: why') == ('adaptext x --text "a # b"',
                                                                               "not run here: why")
    assert _split_comment("adaptext predict runs/r <<< 'Who ?'") == ("adaptext predict runs/r <<< 'Who ?'", None)
    assert NOT_RUN_BLOCK.fullmatch("<!-- not run by the tests: needs a GPU -->")
    assert not NOT_RUN_BLOCK.fullmatch("<!-- not run by the tests:  -->")


def _questions_files(folder: Path) -> None:
    questions = bundled_examples("text", 600)
    for name, rows in (("train.csv", questions[:400]), ("test.csv", questions[400:500])):
        with open(folder / name, "w", newline="") as f:
            csv.writer(f).writerows([("text", "label"), *((q.text, q.label) for q in rows)])
    with open(folder / "new.csv", "w", newline="") as f:
        csv.writer(f).writerows([("text",), *((q.text,) for q in questions[500:520])])


@pytest.mark.slow
def test_the_readme_commands_run_as_written(tmp_path):
    """The quick start (the bundled demo at its full size: about 40 s on 2 cores), what the README
    does with its run, and training on your own data, each as a shell runs it."""
    bin_dir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    assert shutil.which("adaptext", path=env["PATH"]), "the adaptext command is not installed beside this python"
    _questions_files(tmp_path)
    out = {}
    for command in RUN_HERE:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=1200)
        assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
        out[command] = done.stdout
    quick = json.loads(out["adaptext train"])
    assert quick["test"]["accuracy"] >= 85, quick           # the README measured 91.0
    assert json.loads(out[RUN_HERE[1]])["label"] in {"ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"}
    assert json.loads(out[RUN_HERE[2]])["accuracy"] == pytest.approx(quick["test"]["accuracy"], abs=0.01)
    assert "[" in out[RUN_HERE[3]]
    mine = json.loads(out[RUN_HERE[4]])
    assert json.loads(out[RUN_HERE[5]])["accuracy"] == pytest.approx(mine["dev"]["accuracy"], abs=0.01)
    assert len(out[RUN_HERE[6]].splitlines()) == 20
