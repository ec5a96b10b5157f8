"""The spine around the models: the run contract, the run spec, the inference pipeline and the
CLI, checked as a user meets them (old run directories, damaged ones, bad options, output that
scripts read) and as a maintainer reads them (import boundaries, function length)."""
from __future__ import annotations

import ast
import dataclasses
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import adaptext
from adaptext.cli import main
from adaptext.errors import DataError

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "adaptext"
LEGACY = Path(__file__).resolve().parent / "data" / "legacy_runs"


# ----------------------------------------------------------------------- old runs
@pytest.mark.parametrize("name", ["kim_cnn", "attconv"])
def test_a_run_written_before_the_run_contract_loads_and_predicts_the_same(name):
    """Runs written by the flat-config version (config.json flat; vocab.json without the input
    kind, so attconv's kind comes from its metrics.json) load and predict as they did."""
    expected = json.loads((LEGACY / name / "expected.json").read_text())
    got = adaptext.load(LEGACY / name).predict(expected["texts"])
    assert [g["label"] for g in got] == expected["labels"]
    for g, e in zip(got, expected["probs"]):
        assert g["probs"] == pytest.approx(e, abs=1e-5)


def test_old_config_json_reproduces_and_resumes_like_a_new_one(tmp_path, capsys):
    """--config accepts the flat form of old runs and the nested form of new ones alike."""
    from adaptext.runs.options import flatten, load_config_file, nested, resolve
    old = load_config_file(LEGACY / "kim_cnn" / "config.json")
    cfg = resolve({}, old)
    assert flatten(nested(cfg)) == cfg.flat()
    new = tmp_path / "config.json"
    new.write_text(json.dumps(nested(cfg)))
    assert resolve({}, load_config_file(new)) == cfg


# ----------------------------------------------------------------------- run contract
def test_adding_a_run_option_is_one_field():
    """Every run option's flag, help, check and resume rule come from its one declaration."""
    from adaptext.cli import train_parser
    from adaptext.contract import OPTIONS, RESUME_MAY_CHANGE, SECTIONS
    flags = {a.dest: a for a in train_parser("kim_cnn")._actions}
    for key, o in OPTIONS.items():
        assert key in flags and o.meta["help"].split(" [")[0] in flags[key].help, key
        assert o.section in SECTIONS
        if o.meta["choices"]:
            assert tuple(flags[key].choices) == o.meta["choices"], key
    assert set(RESUME_MAY_CHANGE) == {"epochs", "progress", "devices", "accelerator", "num_nodes", "strategy",
                                      "threads", "data_dir", "checkpoint_every", "keep_checkpoints", "workers",
                                      "max_steps", "log_every"}


@pytest.mark.parametrize("flag,value", [("--lr", "inf"), ("--weight-decay", "nan"), ("--grad-clip", "inf"),
                                        ("--oov-scale", "nan"), ("--dropout", "nan")])
def test_numbers_that_are_not_finite_are_refused(flag, value, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["train", flag, value, "--out", str(tmp_path / "r")])
    assert stop.value.code == 2
    assert f"argument {flag}: expected a finite number, not '{value}'" in capsys.readouterr().err
    key = flag[2:].replace("-", "_")
    config = tmp_path / "c.yaml"
    config.write_text(f"epochs: 1\n{key}: .{value}\n")              # YAML's .inf / .nan
    assert main(["train", "--config", str(config), "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.startswith(f"error: {config}:2: {key} must be")
    assert not (tmp_path / "r").exists()


def test_a_model_field_may_not_shadow_a_run_option():
    import dataclasses
    from adaptext.registry import TextClassifier, register_model

    @dataclasses.dataclass
    class Shadowing:
        lr: float = 0.1

    with pytest.raises(TypeError, match="Shadowing field\\(s\\) lr would shadow run options"):
        register_model("shadowing", config=Shadowing)(type("M", (TextClassifier,), {}))


# ----------------------------------------------------------------------- damaged run directories
def _damaged(tmp_path, how: str) -> Path:
    run = tmp_path / "run"
    shutil.copytree(LEGACY / "kim_cnn", run)
    weights = run / "model.safetensors"
    if how == "truncated":
        weights.write_bytes(weights.read_bytes()[:100])
    elif how == "empty":
        weights.write_bytes(b"")
    elif how == "random":
        weights.write_bytes(os.urandom(4096))
    elif how == "other run's weights":
        shutil.copy(LEGACY / "attconv" / "model.safetensors", weights)
    elif how == "labels shape":
        (run / "labels.json").write_text('["ABBR", "DESC"]')
    elif how == "vocab shape":
        (run / "vocab.json").write_text('{"tokens": 3}')
    return run


DAMAGE = {"truncated": "model.safetensors: not a readable safetensors file",
          "empty": "model.safetensors: not a readable safetensors file",
          "random": "model.safetensors: not a readable safetensors file",
          "other run's weights": "model.safetensors: weights that do not fit this run's config.json",
          "labels shape": "labels.json: expected a JSON object",
          "vocab shape": "vocab.json: \"tokens\" must be a list of strings"}


@pytest.mark.parametrize("how", DAMAGE)
def test_a_damaged_run_directory_is_one_line_in_predict_evaluate_and_serve(how, tmp_path, capsys, monkeypatch):
    run = _damaged(tmp_path, how)
    monkeypatch.setattr(sys, "stdin", _Stdin(b"Who wrote Hamlet ?\n"))
    for command in (["predict", str(run)], ["evaluate", str(run)]):
        assert main(command) == 2, command
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and DAMAGE[how] in err, (command, err)
    from adaptext.serve import create_app
    with pytest.raises(DataError, match=DAMAGE[how].split(": ", 1)[1][:30]):
        create_app(run)


class _Stdin:
    def __init__(self, data: bytes):
        import io
        self.buffer = io.BytesIO(data)


# ----------------------------------------------------------------------- CLI faults
def test_out_that_cannot_be_a_run_directory_is_refused_before_reading_data(tmp_path, capsys, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for out in (blocker, blocker / "run"):
        assert main(["train", "--epochs", "1", "--out", str(out)]) == 2
        assert capsys.readouterr().err == f"error: {blocker}: a file, not a folder: the run directory cannot be " \
                                          "made there (choose another --out)\n"
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == locked else real_access(p, mode))
    assert main(["train", "--epochs", "1", "--out", str(locked / "run")]) == 2
    assert "permission denied: the run directory cannot be written there" in capsys.readouterr().err


def test_predict_on_a_folder_and_jsonl_lines_that_are_not_objects(tmp_path, capsys):
    run = LEGACY / "kim_cnn"
    assert main(["predict", str(run), str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path}: a directory, not a file of inputs\n"
    lines = tmp_path / "in.jsonl"
    lines.write_text('{"text": "Who wrote Hamlet ?"}\n"Where is Rome ?"\n')
    assert main(["predict", str(run), str(lines)]) == 2
    assert capsys.readouterr().err == f"error: {lines}:2: a JSON line must be an object, found str\n"
    plain = tmp_path / "in.txt"                                  # in a text file such a line is a text
    plain.write_text('{"text": "Who wrote Hamlet ?"}\n"Where is Rome ?"\n')
    assert main(["predict", str(run), str(plain)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_predict_reads_the_encoding_it_is_given(tmp_path, capsys):
    f = tmp_path / "latin.txt"
    f.write_bytes("Où est Paris ?\n".encode("cp1252"))
    assert main(["predict", str(LEGACY / "kim_cnn"), str(f)]) == 2
    assert "--encoding" in capsys.readouterr().err
    assert main(["predict", str(LEGACY / "kim_cnn"), str(f), "--encoding", "cp1252"]) == 0
    assert json.loads(capsys.readouterr().out)["label"]


def test_a_header_with_a_duplicated_column_and_a_huge_header_are_named_shortly(tmp_path, capsys):
    f = tmp_path / "dup.csv"
    f.write_text("text,text,label\na,b,x\nc,d,y\n")
    assert main(["train", "--data", str(f), "--test", str(f), "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err == (f"error: {f}:1: the text column 'text' appears 2 times in the header "
                                       "(fields 1, 2): rename all but one\n")
    big = tmp_path / "big.csv"
    big.write_text("x" * 5_000_000 + ",label\nhello,a\n")
    assert main(["train", "--data", str(big), "--test", str(big), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert len(err) < 500 and "(5,000,007 characters)" in err


def _tiny_data(tmp_path) -> Path:
    """300 questions of the bundled TREC training file, as a Kim-format file."""
    lines = gzip.open(PACKAGE / "resources" / "trec" / "train.txt.gz", "rt", encoding="latin-1").read().splitlines()
    f = tmp_path / "tiny.txt"
    f.write_text("\n".join(l.split(":", 1)[0] + " " + l.split(" ", 1)[1] for l in lines[:300]) + "\n")
    return f


def test_train_prints_json_on_stdout_and_says_where_the_run_is(tmp_path):
    data, out = _tiny_data(tmp_path), tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "adaptext.cli", "train", "--data", str(data), "--epochs", "1",
                        "--test", str(data), "--filters", "4", "--embed-dim", "8", "--progress", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert set(json.loads(r.stdout)) == {"dev", "test", "info"}                  # nothing but the result on stdout
    assert f"run written to {out}" in r.stderr
    assert oct(os.stat(out / "model.safetensors").st_mode & 0o777) == oct(os.stat(out / "vocab.json").st_mode & 0o777)


def test_a_diverged_run_stops_with_an_error_and_saves_nothing(tmp_path, capsys):
    data, out = _tiny_data(tmp_path), tmp_path / "run"
    code = main(["train", "--data", str(data), "--test", str(data), "--epochs", "2", "--filters", "4", "--embed-dim", "8", "--no-progress",
                 "--lr", "1e30", "--optimizer", "sgd", "--out", str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert "error: training diverged: the loss is nan at epoch 1" in err and "lower --lr" in err
    assert not (out / "metrics.json").exists() and not (out / "model.safetensors").exists()


def test_a_library_bug_keeps_its_traceback(monkeypatch):
    """Only the user's mistakes become one error line; a bug surfaces as itself."""
    import adaptext.cli as cli
    monkeypatch.setitem(cli.COMMANDS, "models", lambda argv: {}["missing"])
    with pytest.raises(KeyError):
        main(["models"])


# ----------------------------------------------------------------------- service
def test_the_service_reads_any_json_body_and_refuses_what_it_cannot(tmp_path):
    from fastapi.testclient import TestClient
    from adaptext.serve import MAX_BODY, create_app
    client = TestClient(create_app(LEGACY / "kim_cnn"))
    r = client.post("/predict", content=json.dumps({"inputs": ["Who wrote Hamlet ?"]}).encode())   # no content type
    assert r.status_code == 200 and len(r.json()["predictions"]) == 1
    r = client.post("/predict", content=b'{"inputs": ["caf\xe9"]}', headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"] == "the body is not UTF-8 (byte 16)"
    r = client.post("/predict", content=b'{"inputs": [', headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"].startswith("the body is not JSON")
    r = client.post("/predict", content=b"x" * (MAX_BODY + 1))
    assert r.status_code == 422 and r.json()["detail"] == f"the request body is larger than {MAX_BODY:,} bytes"
    assert client.get("/info").json()["data"] == "trec-demo"


def test_the_service_shows_the_training_file_by_name_only(tmp_path):
    from fastapi.testclient import TestClient
    from adaptext.serve import create_app
    run = tmp_path / "run"
    shutil.copytree(LEGACY / "kim_cnn", run)
    cfg = json.loads((run / "config.json").read_text())
    cfg["data"] = "/home/someone/private/questions.txt"
    (run / "config.json").write_text(json.dumps(cfg))
    assert TestClient(create_app(run)).get("/info").json()["data"] == "questions.txt"


# ----------------------------------------------------------------------- layout
INFERENCE = ["api.py", "cli.py", "serve.py", "export.py", "explain"]
ENTRY_POINTS = ("adaptext.training", "adaptext.training.train_run", "adaptext.training.distill_run",
                "adaptext.training.sweep_run", "adaptext.training.logits_run")


def _imports(path: Path) -> list[str]:
    """Absolute module names imported by a file of the package."""
    tree = ast.parse(path.read_text())
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found += [module] + [f"{module}.{a.name}" for a in node.names]
    return found


def test_inference_does_not_depend_on_training():
    """The API, CLI, service, export and explanations read runs through adaptext.runs; the CLI
    reaches training only through its entry points, train_run, distill_run and sweep_run."""
    for name in INFERENCE:
        for path in ([PACKAGE / name] if name.endswith(".py") else sorted((PACKAGE / name).glob("*.py"))):
            bad = [m for m in _imports(path) if m.startswith("adaptext.training")
                   and not (path.name == "cli.py" and m in ENTRY_POINTS)]
            assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def _package_imports(path: Path, modules: dict) -> set:
    """The modules of the package a file imports (``from . import x`` names module ``x``)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found |= {f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names}
    return found & set(modules)


def test_no_import_cycle_inside_the_package():
    """Every import counts, those inside functions too: a cycle deferred to call time is still
    two modules that cannot be read, tested or moved apart."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {name: _package_imports(path, modules) - {name} for name, path in modules.items()}
    cycles = []
    for start in graph:                       # a path from a module's imports back to it
        seen, stack = set(), [(m, [start, m]) for m in graph[start]]
        while stack:
            here, route = stack.pop()
            if here == start:
                cycles.append(" -> ".join(route))
                break
            if here not in seen:
                seen.add(here)
                stack += [(m, route + [m]) for m in graph[here]]
    assert not cycles, cycles


# The layers of the package, lowest first: a module imports only from its own layer or those below
# (a name used only in annotations, under ``if TYPE_CHECKING``, is no import). The front door,
# ``adaptext.load`` and the command line, stands on top; nothing inside the package goes through it.
LAYERS = (("errors", "atomic", "tables", "memory", "pretrained", "optim"),
          ("data",),
          ("parse",),
          ("contract", "config"),                      # the run options, declared: below the registry
          ("nn", "registry", "models"),
          ("runs",),                                   # run directories: spec, inference, splits, options
          ("explain",),
          ("api",),
          ("training", "export"),
          ("serve", "serve_bodies", "auto"),
          ("adaptext", "cli"))


def _layer(module: str) -> int:
    part = module.split(".")[1] if "." in module else "adaptext"
    return next(k for k, names in enumerate(LAYERS) if part in names)


def _runtime_imports(path: Path) -> set:
    """The package's modules a file imports when it runs: ``import``, ``from ... import`` and
    ``importlib.import_module("...")``, inside functions too, not under ``if TYPE_CHECKING``."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and getattr(node.test, "id", None) == "TYPE_CHECKING" for n in ast.walk(node)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found |= {f"{module}.{a.name}" if _is_module(f"{module}.{a.name}") else module for a in node.names}
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module":
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant):
                found.add(arg.value)
            elif isinstance(arg, ast.JoinedStr):           # f"{__name__}.{name}": a module of its own package
                found.add(package)
    return {m for m in found if m == "adaptext" or m.startswith("adaptext.")}


def _is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def test_no_module_imports_from_a_layer_above_its_own():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        wrong += [f"{name} -> {m}" for m in _runtime_imports(path) if _layer(m) > _layer(name)]
    assert not wrong, wrong


def test_the_layer_test_sees_every_kind_of_import():
    """An upward import by ``from``, by ``import``, inside a function or through importlib is
    found; one under TYPE_CHECKING is not."""
    probe = PACKAGE / "data" / "layer_probe.py"
    text = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..api import Classifier\n"
            "import adaptext.cli\ndef f():\n    from ..training import run\n"
            "    import importlib\n    importlib.import_module('adaptext.serve')\n")
    probe.write_text(text)
    try:
        assert _runtime_imports(probe) == {"adaptext.cli", "adaptext.training.run", "adaptext.serve"}
    finally:
        probe.unlink()


def test_a_run_configuration_is_read_by_attribute_outside_the_options_module():
    """resolve() returns a typed RunConfig; only runs/options.py, which builds it from the flat
    mapping of defaults, file and flags, reads options by string key."""
    keyed = re.compile(r"\b(?:cfg|config)\[[\"']")
    found = [f"{path.relative_to(ROOT)}:{i}: {line.strip()}"
             for path in PACKAGE.rglob("*.py") if path.name != "options.py"
             for i, line in enumerate(path.read_text().splitlines(), 1) if keyed.search(line)]
    assert not found, found


def test_a_run_configuration_is_typed_and_frozen():
    from adaptext.config import RunConfig
    from adaptext.runs.options import resolve
    cfg = resolve({"model": "kim_cnn", "lr": 0.01, "filters": 20})
    assert isinstance(cfg, RunConfig) and cfg.lr == 0.01 and cfg.model_options["filters"] == 20
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.lr = 1.0
    assert RunConfig.from_flat(cfg.flat()) == cfg and cfg.replace(lr=0.5).lr == 0.5


def test_no_function_of_the_package_is_over_60_lines():
    long = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > 60:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)")
    assert not long, long


def test_no_cli_function_is_over_40_lines():
    for node in ast.walk(ast.parse((PACKAGE / "cli.py").read_text())):
        if isinstance(node, ast.FunctionDef):
            assert node.end_lineno - node.lineno + 1 <= 40, node.name


def test_a_missing_test_file_is_said_before_the_training_file_is_read(tmp_path, capsys):
    big = tmp_path / "big.csv"
    big.write_bytes(b"text,label\n" + b"\xff\xfe not utf-8 at all\n" * 1000)    # reading it would fail
    assert main(["train", "--data", str(big), "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err == f"error: {big}: no test file: pass --test FILE, or --cv K for cross-validation\n"


def _column_declarations(names: set) -> dict:
    """Where the package gives a column option a value of its own: a field of a class, a parameter
    with a default, a read that restates a default (``.get(name, default)``, ``.get(name) or
    default``), or a literal tuple, list, set or mapping of names at a module's top."""
    found: dict = {name: [] for name in names}

    def literal_names(node) -> list:
        if isinstance(node, ast.Constant):
            return [node.value] if node.value in names else []
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return [n for e in node.elts for n in literal_names(e)]
        if isinstance(node, ast.Dict):
            return [n for e in node.keys + node.values if e is not None for n in literal_names(e)]
        return []

    def reads_with_default(node) -> str | None:
        call = node.values[0] if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) else node
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "get"
                and call.args and isinstance(call.args[0], ast.Constant) and call.args[0].value in names):
            return None
        return call.args[0].value if call is not node or len(call.args) > 1 else None

    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        here = lambda node: f"{path.relative_to(ROOT)}:{node.lineno}"     # noqa: E731
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                for name in literal_names(node.value):
                    found[name].append(here(node))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    if isinstance(stmt, ast.AnnAssign) and getattr(stmt.target, "id", None) in names:
                        found[stmt.target.id].append(here(stmt))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                a = node.args
                positional = a.posonlyargs + a.args
                defaulted = positional[len(positional) - len(a.defaults):]
                defaulted += [arg for arg, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
                for arg in defaulted:
                    if arg.arg in names:
                        found[arg.arg].append(here(node))
            elif (name := reads_with_default(node)) is not None:
                found[name].append(here(node))
    return found


def test_every_column_option_is_declared_once():
    """--text-col, --pair-col, --contexts-col, --label-col and --label-sep are the fields of the
    readers' ReadOptions: the run contract, the readers' functions, the input reader and
    evaluate read them there, and none restates a name or a default."""
    import dataclasses

    from adaptext.data.readers import ReadOptions
    from adaptext.contract import OPTIONS
    names = {f.name for f in dataclasses.fields(ReadOptions)}
    assert names == {"text_col", "pair_col", "contexts_col", "label_col", "label_sep"}
    assert {k: OPTIONS[k].default for k in names} == {f.name: f.default for f in dataclasses.fields(ReadOptions)}
    declared = _column_declarations(names)
    assert {name: len(where) for name, where in declared.items()} == dict.fromkeys(names, 1), declared
    assert all(where[0].startswith("adaptext/data/readers.py:") for where in declared.values()), declared


def _kind_comparisons_with_strings(tree: ast.AST, names: set) -> list:
    """The lines where an example kind (``kind``, ``ex.kind``, ``voc["kind"]``, ``batch_kind(b)``, a
    model's ``entry.inputs``) is compared with a string literal of a kind's name (or a tuple, list
    or set of them), or looked up in a literal dict keyed by such strings."""
    def is_kind(node) -> bool:
        text = ast.unparse(node)
        return bool(re.search(r"(kind|\.inputs|\[[\"']kind[\"']\])(\[\d+\])?\)?$|kind\(.*\)$", text, re.S))

    def kind_strings(node) -> set:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value} & names
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return set().union(*map(kind_strings, node.elts))
        if isinstance(node, ast.Dict):
            return set().union(*(kind_strings(k) for k in node.keys if k is not None))
        return set()

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(map(is_kind, sides)) and any(kind_strings(s) for s in sides if not is_kind(s)):
                found.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            if kind_strings(node.func.value) and node.args and is_kind(node.args[0]):
                found.append(node.lineno)
        elif isinstance(node, ast.Subscript) and kind_strings(node.value) and is_kind(node.slice):
            found.append(node.lineno)
    return sorted(found)


def test_an_example_kind_is_compared_as_an_example_kind_never_as_its_name():
    """``ExampleKind`` is the one home of the five kinds: code compares a kind with a member or asks
    it (``kind.is_tree``), so no ``kind == "pair"`` or ``kind in ("tree", "tree_pair")`` restates them."""
    from adaptext.data.examples import ExampleKind
    names = {k.value for k in ExampleKind}
    found = [f"{path.relative_to(ROOT)}:{line}" for path in sorted(PACKAGE.rglob("*.py"))
             for line in _kind_comparisons_with_strings(ast.parse(path.read_text()), names)]
    assert not found, found
    caught = """
if ex.kind == "pair": pass
if "tree" != spec.kind: pass
if clf.kind in ("tree", "tree_pair"): pass
if voc["kind"] not in ["text"]: pass
wants = {"pair": "--pair", "contexts": "--context"}.get(kind)
flag = {"text": 1}[store.kind]
if examples[0].kind not in ("text", "pair"): pass
if not set(get_entry(name).inputs) <= {"tree", "tree_pair"}: pass
if batch_kind(batch) != "text": pass
"""
    assert _kind_comparisons_with_strings(ast.parse(caught), names) == [2, 3, 4, 5, 6, 7, 8, 9, 10]
    passed = 'if cell.kind == "recnn": pass\nif field == "text": pass\nwants = {"pair": 1}.get(kind.second)\n'
    assert _kind_comparisons_with_strings(ast.parse(passed), names) == []


def test_no_module_imports_another_modules_private_names():
    """A name with a leading underscore is its module's own; what another module needs is public."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("adaptext")):
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                if private:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {private}")
    assert not found, found
