"""Every registered model builds by name, runs forward and backward on a tiny real batch,
and fills the gradient of its trainable parameters (timm's habit)."""
import dataclasses
import json

import pytest
import torch

from adaptext.cli import main
from adaptext.registry import (DataSpec, Options, choice, count_parameters, create_model, get_entry, list_models,
                               register_model)

from conftest import CASE_SIZE, assert_alone_equals_batched, collate_for, registered_case

CASES = [(name, kind) for name in list_models() for kind in get_entry(name).inputs]


@pytest.mark.parametrize("name,kind", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_forward_backward(name, kind):
    torch.manual_seed(0)
    model, items, num_classes = registered_case(name, kind)
    batch = collate_for(items, num_classes, model)
    model.train()
    out = model(batch)
    logits = out["logits"] if isinstance(out, dict) else out
    assert logits.shape == (CASE_SIZE, num_classes)
    assert torch.isfinite(logits).all()
    loss = torch.nn.functional.cross_entropy(logits, batch.labels)
    loss.backward()
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    assert trainable
    missing = [n for n, p in trainable if p.grad is None]
    assert not missing, f"no gradient reaches {missing[:5]}"
    assert count_parameters(model) > 0


@pytest.mark.parametrize("name,kind", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_an_example_alone_equals_it_inside_a_padded_batch(name, kind):
    """Padding (40 positions past the longest text) and batch neighbours change no logit."""
    torch.manual_seed(0)
    model, items, num_classes = registered_case(name, kind)
    assert_alone_equals_batched(model, items, num_classes, pad_to=max(it.length() for it in items) + 40)


def test_unknown_option_is_a_clear_error():
    with pytest.raises(ValueError, match="has no option"):
        create_model("kim_cnn", num_classes=2, vocab_size=10, filterz=3)


def test_unknown_model_lists_the_registry():
    with pytest.raises(KeyError, match="kim_cnn"):
        get_entry("no_such_model")


CHOICES = [(name, f.name, f.metadata["choices"]) for name in list_models()
           for f in dataclasses.fields(get_entry(name).config) if "choices" in f.metadata]


def test_options_with_a_fixed_set_of_values_are_declared():
    """generation, context, variant, matching, attention, pooling and fusion list their values."""
    declared = {(name, field) for name, field, _ in CHOICES}
    assert {("ac_cnn", "generation"), ("ac_dpcnn", "context"), ("attconv", "variant"), ("attconv_noconv", "matching"),
            ("fcn", "attention"), ("fcn", "pooling_head"), ("qrnn", "pooling"), ("tg_htreelstm", "fusion")} <= declared
    for name, field, allowed in CHOICES:
        assert get_entry(name).defaults[field] in allowed, (name, field)


@pytest.mark.parametrize("name,field,allowed", CHOICES, ids=[f"{n}-{f}" for n, f, _ in CHOICES])
def test_a_value_outside_an_option_s_choices_is_refused(name, field, allowed, tmp_path, capsys):
    with pytest.raises(ValueError, match=f"^{field} must be one of {', '.join(allowed)}, not 'nope'$"):
        create_model(name, num_classes=2, vocab_size=10, **{field: "nope"})
    entry = get_entry(name)                                 # a model class built without make_config
    with pytest.raises(ValueError, match=f"{field} must be one of"):
        entry.cls(entry.config(**{field: "nope"}), DataSpec(2, 10, entry.inputs[0], tag_vocab_size=6))
    config = tmp_path / "config.json"                       # a config file: refused before any data is read
    config.write_text(json.dumps({"model": name, field: "nope", "data": str(tmp_path / "absent.csv")}))
    assert main(["train", "--config", str(config), "--out", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == f"error: {config}:1: {field} must be one of {', '.join(allowed)}, not 'nope'\n"
    assert not (tmp_path / "run").exists()
    flag = "--" + field.replace("_", "-")
    with pytest.raises(SystemExit) as stop:                 # the command line refuses it before reading data
        main(["train", "--model", name, flag, "nope"])
    assert stop.value.code == 2
    assert f"argument {flag}: invalid choice: 'nope'" in capsys.readouterr().err


def test_a_config_with_choice_fields_must_derive_from_options():
    @dataclasses.dataclass
    class Unchecked:                       # its choices would go unchecked: registering it is refused
        pooling: str = choice("max", ("max", "mean"))

    with pytest.raises(TypeError, match="Unchecked has choice fields, so it must derive from Options"):
        register_model("unchecked_choices", config=Unchecked)(type("M", (), {}))

    @dataclasses.dataclass
    class Checked(Options):
        pooling: str = choice("max", ("max", "mean"))

    with pytest.raises(ValueError, match="pooling must be one of max, mean, not 'sum'"):
        Checked(pooling="sum")
    assert "unchecked_choices" not in list_models()
