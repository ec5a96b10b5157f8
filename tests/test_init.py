"""--init: a run starts from the weights of a file or of another run, tensor by tensor (the others
as the model builds them); a file of other tensors or shapes, or no such file, is one line of error."""
from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file, save_file

from adaptext.cli import main

from test_hardening import one_line_error, questions  # noqa: F401  (fixtures)

# a tiny word BiLSTM; --lr so small that one step leaves the starting weights where they were
LSTM = ["--model", "lstm", "--layers", "1", "--bidirectional", "--hidden", "8", "--embed-dim", "16", "--epochs", "1",
        "--max-steps", "1", "--threads", "1", "--no-progress"]
FROZEN = ["--lr", "1e-12"]


def train(questions, out, *extra) -> None:
    assert main(["train", "--data", questions[0], "--test", questions[1], *LSTM, *extra, "--out", str(out)]) == 0


@pytest.fixture(scope="module")
def source(tmp_path_factory, questions):
    out = tmp_path_factory.mktemp("init") / "source"
    train(questions, out, "--seed", "1")
    return out


def layers_file(run, path):
    """The run's recurrent layers alone, as a pretrained student's file holds them."""
    state = load_file(str(run / "model.safetensors"))
    save_file({k: v for k, v in state.items() if k.startswith("layers.")}, str(path))
    return path


def test_a_file_replaces_the_tensors_it_names_and_no_others(source, questions, tmp_path, capsys):
    weights = layers_file(source, tmp_path / "layers.safetensors")
    train(questions, tmp_path / "plain", "--seed", "2", *FROZEN)
    capsys.readouterr()
    train(questions, tmp_path / "started", "--seed", "2", *FROZEN, "--init", str(weights))
    assert f"init: 8 of the model's 11 tensors from {weights}" in capsys.readouterr().err
    given, plain = load_file(str(weights)), load_file(str(tmp_path / "plain" / "model.safetensors"))
    started = load_file(str(tmp_path / "started" / "model.safetensors"))
    for name, tensor in given.items():
        assert torch.allclose(started[name], tensor, atol=1e-6), name
        assert not torch.allclose(plain[name], tensor, atol=1e-3), name      # seed 2 alone starts elsewhere
    for name in ("head.linear.weight", "embedding.embed.weight"):             # not in the file: as seed 2 builds them
        assert torch.allclose(started[name], plain[name], atol=1e-6), name


def test_a_run_directory_gives_its_model_s_weights(source, questions, tmp_path):
    train(questions, tmp_path / "again", "--seed", "2", *FROZEN, "--init", str(source))
    again, before = (load_file(str(run / "model.safetensors")) for run in (tmp_path / "again", source))
    assert all(torch.allclose(again[k], v, atol=1e-6) for k, v in before.items())


def test_weights_of_another_model_or_size_or_none_are_one_line(source, questions, tmp_path, capsys):
    foreign = tmp_path / "foreign.safetensors"
    save_file({"convs.0.weight": torch.zeros(3, 3)}, str(foreign))
    wider = tmp_path / "wider"
    train(questions, wider, "--hidden", "12")
    capsys.readouterr()
    cases = [(foreign, "--init: 'convs.0.weight' is not a tensor of this LSTMClassifier"),
             (wider / "model.safetensors", "--init: 'layers.0.0.weight_ih_l0' is [48, 16] there, [32, 16] in this "
                                           "LSTMClassifier"),
             (tmp_path / "missing.safetensors", "--init: no such weights file or run directory"),
             (tmp_path, "--init: a folder without model.safetensors")]
    not_weights = tmp_path / "notes.safetensors"
    not_weights.write_text("not weights")
    cases.append((not_weights, "not a readable safetensors file"))
    for k, (path, said) in enumerate(cases):
        assert main(["train", "--data", questions[0], "--test", questions[1], *LSTM, "--init", str(path),
                     "--out", str(tmp_path / f"refused{k}")]) == 2
        one_line_error(capsys, str(path), said)
