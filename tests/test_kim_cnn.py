"""Kim CNN's prediction path: the word-projection table gives the convolutions' features."""
import pytest
import torch

from adaptext.nn import embedding
from adaptext.registry import create_model

from conftest import after_one_step, both_paths, bundled_examples, collate_for, encode_for


def case(**options):
    torch.manual_seed(0)
    items, vocab_size, num_classes, _, _ = encode_for(bundled_examples("text", 8))
    mode = options.pop("embedding_mode", "rand")
    vectors = torch.randn(vocab_size, 12) if mode != "rand" else None
    model = create_model("kim_cnn", num_classes=num_classes, vocab_size=vocab_size, embeddings=vectors,
                         embedding_mode=mode, embed_dim=12, filters=5, **options).eval()
    return model, collate_for(items, num_classes, model, pad_to=30)


@pytest.mark.parametrize("mode", ["rand", "static", "non-static", "multichannel"])
def test_the_table_gives_the_convolutions_logits(mode):
    model, batch = case(embedding_mode=mode)
    convolved, looked_up = both_paths(model, batch)
    assert model.projections() is not None
    assert model.projections().shape == (model.embedding.embed.num_embeddings, 5 * (3 + 4 + 5))
    torch.testing.assert_close(looked_up, convolved, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(looked_up[0], looked_up[1])


def test_the_table_follows_every_weight_update_and_load():
    model, batch = case(embedding_mode="non-static")
    first, convolved, looked_up = after_one_step(model, batch)
    assert model.projections() is not first
    torch.testing.assert_close(looked_up, convolved, atol=1e-5, rtol=1e-5)
    other, _ = case(embedding_mode="non-static")
    with torch.no_grad():
        other.embedding.embed.weight.mul_(3)
    model.load_state_dict(other.state_dict())
    convolved, looked_up = both_paths(model, batch)
    torch.testing.assert_close(looked_up, convolved, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(looked_up, both_paths(other, batch)[0], atol=1e-5, rtol=1e-5)


def test_wide_filters_and_a_table_over_budget_convolve(monkeypatch):
    wide, batch = case(wide=True)
    assert wide.projections() is None
    monkeypatch.setattr(embedding, "TABLE_BYTES", 1000)
    model, batch = case()
    assert model.projections() is None
    convolved, looked_up = both_paths(model, batch)
    torch.testing.assert_close(looked_up, convolved)
