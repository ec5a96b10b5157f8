"""The LSTM's prediction path: the first layer's input projections looked up from a word table
and its recurrence run from them (``adaptext.nn.lstm``) give nn.LSTM's logits."""
import pytest
import torch

from adaptext.models import lstm as lstm_model
from adaptext.nn import embedding
from adaptext.nn.lstm import double_candidate, lstm_from_gate_inputs
from adaptext.registry import create_model
from adaptext.runs.files import load_weights, save_weights

from conftest import after_one_step, both_paths, bundled_examples, collate_for, encode_for


def case(seed: int = 0, **options):
    torch.manual_seed(seed)
    items, vocab_size, num_classes, _, _ = encode_for(bundled_examples("text", 8))
    mode = options.pop("embedding_mode", "rand")
    vectors = torch.randn(vocab_size, 12) if mode != "rand" else None
    options = {"embed_dim": 12, "hidden": 6, "layers": 1, "bidirectional": True, **options}
    model = create_model("lstm", num_classes=num_classes, vocab_size=vocab_size, embeddings=vectors,
                         embedding_mode=mode, **options).eval()
    return model, collate_for(items, num_classes, model, pad_to=30)


def counting(monkeypatch) -> list:
    """Counts the recurrences run from gate inputs (the table path)."""
    calls = []

    def run(*args):
        calls.append(1)
        return lstm_from_gate_inputs(*args)
    monkeypatch.setattr(lstm_model, "lstm_from_gate_inputs", run)
    return calls


SHAPES = {"bidirectional": {}, "unidirectional": {"bidirectional": False},
          "bidirectional, 2 dense layers": {"layers": 2},
          "bidirectional, 2 layers": {"layers": 2, "dense": False},
          "unidirectional, 2 dense layers": {"layers": 2, "bidirectional": False},
          "multichannel": {"embedding_mode": "multichannel"}}


@pytest.mark.parametrize("shape", SHAPES)
def test_the_table_gives_the_plain_paths_logits(shape, monkeypatch):
    model, batch = case(**SHAPES[shape])
    lengths = batch.lengths.tolist()
    assert len(set(lengths)) > 3 and batch.text.shape[1] == 30 > max(lengths)     # real texts, padded
    calls = counting(monkeypatch)
    plain, looked_up = both_paths(model, batch)
    assert len(calls) == 1                                                       # the no-grad pass only
    torch.testing.assert_close(looked_up, plain, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(looked_up[0], looked_up[1])
    tables, first = model.projections(), model.layers[0]
    assert len(tables) == len(first)
    words = model.embedding(torch.arange(model.embedding.embed.num_embeddings))
    words[0] = 0                                                                 # the padding row
    for table, lstm in zip(tables, first):
        assert table.shape == (model.embedding.embed.num_embeddings, 4 * 6)
        torch.testing.assert_close(table, words.detach() @ double_candidate(lstm.weight_ih_l0).T.detach())


def test_the_recurrence_gives_nn_lstms_states_at_every_step():
    torch.manual_seed(0)
    lstms = [torch.nn.LSTM(7, 5, batch_first=True) for _ in range(2)]
    x = torch.randn(2, 3, 11, 7)                                                 # direction, batch, step, input
    with torch.no_grad():
        want = torch.stack([lstm(xd)[0] for lstm, xd in zip(lstms, x)])          # [D, B, T, H]
        pre = torch.stack([xd @ double_candidate(m.weight_ih_l0).T + double_candidate(m.bias_ih_l0 + m.bias_hh_l0)
                           for m, xd in zip(lstms, x)]).permute(2, 0, 1, 3)        # [T, D, B, 4H]
        got = lstm_from_gate_inputs(pre, torch.stack([double_candidate(m.weight_hh_l0).T for m in lstms]))
    torch.testing.assert_close(got.permute(1, 2, 0, 3), want, atol=1e-6, rtol=1e-5)


def test_training_and_gradients_use_nn_lstm(monkeypatch):
    model, batch = case()
    calls = counting(monkeypatch)
    model.train()
    with torch.no_grad():
        model(batch)
    model.eval()
    model(batch).sum().backward()
    assert calls == []


def test_the_table_follows_an_optimiser_step_a_save_and_a_load(tmp_path):
    model, batch = case(embedding_mode="non-static", layers=2)
    first, plain, looked_up = after_one_step(model, batch)
    assert model.projections() is not first
    torch.testing.assert_close(looked_up, plain, atol=1e-5, rtol=1e-5)
    # adaptext's weight files: another model's weights loaded over these
    other, _ = case(seed=1, embedding_mode="non-static", layers=2)
    save_weights(other, tmp_path / "model.safetensors")
    before = model.projections()
    load_weights(model, tmp_path / "model.safetensors")
    assert model.projections() is not before
    plain, looked_up = both_paths(model, batch)
    torch.testing.assert_close(looked_up, plain, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(looked_up, both_paths(other, batch)[0], atol=1e-5, rtol=1e-5)
    # load_state_dict, the recurrent weights only changed: the table is of W_ih, the rest read live
    with torch.no_grad():
        other.layers[0][1].weight_hh_l0.mul_(3)
        other.layers[0][0].bias_hh_l0.add_(1)
    model.load_state_dict(other.state_dict())
    plain, looked_up = both_paths(model, batch)
    torch.testing.assert_close(looked_up, plain, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(looked_up, both_paths(other, batch)[0], atol=1e-5, rtol=1e-5)


def test_where_the_table_is_not_faster_or_too_large_nn_lstm_predicts(monkeypatch):
    wide, batch = case(hidden=16)                                  # more units than the 12-d vectors
    assert wide.projections() is None
    wide.use_tables = True                                         # forced, it still agrees
    assert wide.projections() is not None
    plain, looked_up = both_paths(wide, batch)
    torch.testing.assert_close(looked_up, plain, atol=1e-5, rtol=1e-5)
    model, batch = case()
    model.use_tables = False
    assert model.projections() is None
    monkeypatch.setattr(embedding, "TABLE_BYTES", 1000)
    model.use_tables = None
    assert model.projections() is None
    calls = counting(monkeypatch)
    plain, looked_up = both_paths(model, batch)
    torch.testing.assert_close(looked_up, plain)
    assert calls == []
