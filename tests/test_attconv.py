"""Attentive convolution (Yin & Schütze 2018): the layer against a loop-by-position
reference, masking, every mode of ``attconv`` on real SICK / TREC slices, the baselines,
and the explanation plots."""
import functools
import math

import numpy as np
import pytest
import torch

from adaptext.data.batching import Batch, Item
from adaptext.data.examples import ContextsExample
from adaptext.data.text import Tokenizer
from adaptext.explain.attention import attention_figures, plot_attention
from adaptext.models.attconv import join_contexts
from adaptext.nn.attentive import MATCHINGS, VARIANTS, AttentiveConv1d
from adaptext.registry import create_model, get_entry

from conftest import assert_alone_equals_batched, collate_for, encode_for, needs_data
from conftest import real_examples as _real_examples

TINY = {"embed_dim": 8, "hidden": 6}


@functools.lru_cache(maxsize=None)
def _cached(kind, n):
    return tuple(_real_examples(kind, n))


def real_examples(kind, n=6):
    return list(_cached(kind, n))


# ------------------------------------------------------------------ reference (one sample, loops)
def ref_match(match, s, f):
    if match.kind == "dot":
        return float(s @ f)
    if match.kind == "bilinear":
        return float(s @ match.W_e @ f)
    z = torch.tanh(match.W_e.weight @ s + match.U_e.weight @ f + match.U_e.bias)
    return float(match.v.weight[0] @ z)


def ref_window(weight, bias, h, i):
    """bias + sum_k W[:, :, k] h_{i - w//2 + k}, zero outside the text."""
    w = weight.shape[2]
    z = bias.clone() if bias is not None else torch.zeros(weight.shape[0], dtype=h.dtype)
    for k in range(w):
        p = i - w // 2 + k
        if 0 <= p < h.shape[0]:
            z = z + weight[:, :, k] @ h[p]
    return z


def ref_gconv(g, h):
    d = h.shape[1]
    rows = []
    for i in range(h.shape[0]):
        z = ref_window(g.conv.weight, g.conv.bias, h, i)
        gate = torch.sigmoid(z[d:])
        rows.append(gate * h[i] + (1 - gate) * torch.tanh(z[:d]))
    return torch.stack(rows) if rows else h.new_zeros(0, d)


@torch.no_grad()
def ref_attconv(layer, x, y):
    """x [n, D], y [m, D] (no padding) -> out [n, H], attention [n, m]."""
    if layer.variant == "light":
        src, foc, bene = x, y, x
    else:
        src = torch.cat([ref_gconv(layer.mgran.uni, x), ref_gconv(layer.mgran.tri, x)], 1)
        foc = torch.cat([ref_gconv(layer.mgran.uni, y), ref_gconv(layer.mgran.tri, y)], 1) if len(y) else y
        bene = ref_gconv(layer.bene, x)
    n, m = x.shape[0], y.shape[0]
    out, attn = [], torch.zeros(n, m, dtype=x.dtype)
    for i in range(n):
        c = torch.zeros(layer.focus_dim, dtype=x.dtype)
        if m:
            scores = [ref_match(layer.match, src[i], foc[j]) for j in range(m)]
            top = max(scores)
            ex = [math.exp(s - top) for s in scores]
            for j in range(m):
                attn[i, j] = ex[j] / sum(ex)
                c = c + attn[i, j] * foc[j]
        z = ref_window(layer.conv.weight, layer.conv.bias, bene, i) + layer.conv_ctx.weight[:, :, 0] @ c
        out.append(torch.tanh(z))
    return torch.stack(out), attn


def random_inputs(d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(3, 7, d, generator=g, dtype=torch.float64)
    y = torch.randn(3, 6, d, generator=g, dtype=torch.float64)
    xl, yl = torch.tensor([7, 4, 2]), torch.tensor([3, 6, 1])
    xm = torch.arange(7) < xl[:, None]
    ym = torch.arange(6) < yl[:, None]
    # garbage in the padding: the layer must not read it
    x = torch.where(xm[..., None], x, torch.full_like(x, 9.0))
    y = torch.where(ym[..., None], y, torch.full_like(y, -7.0))
    return x, xm, xl, y, ym, yl


def make_layer(variant, matching, d=5, h=4, seed=0):
    torch.manual_seed(seed)
    layer = AttentiveConv1d(d, h, 3, matching, variant, att_dim=3).double()
    with torch.no_grad():            # non-zero biases so the reference checks them too
        for p in layer.parameters():
            if p.dim() == 1:
                p.uniform_(-0.5, 0.5)
    return layer


# ------------------------------------------------------------------ the layer
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("matching", MATCHINGS)
def test_layer_equals_loop_reference(variant, matching):
    layer = make_layer(variant, matching)
    x, xm, xl, y, ym, yl = random_inputs()
    out, attn = layer(x, xm, y, ym, return_attention=True)
    intra, intra_attn = layer(x, xm, return_attention=True)               # context = the text
    for b in range(3):
        n, m = int(xl[b]), int(yl[b])
        ref_out, ref_attn = ref_attconv(layer, x[b, :n], y[b, :m])
        assert torch.allclose(out[b, :n], ref_out, atol=1e-10)
        assert torch.allclose(attn[b, :n, :m], ref_attn, atol=1e-10)
        ref_out, ref_attn = ref_attconv(layer, x[b, :n], x[b, :n])
        assert torch.allclose(intra[b, :n], ref_out, atol=1e-10)
        assert torch.allclose(intra_attn[b, :n, :n], ref_attn, atol=1e-10)
    assert (out[~xm] == 0).all()                                          # padded positions are zero


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("matching", MATCHINGS)
def test_layer_masks_padding_and_empty_context(variant, matching):
    layer = make_layer(variant, matching)
    x, xm, xl, y, ym, yl = random_inputs()
    ym[1] = False                                                         # sample 1: no context at all
    x.requires_grad_(True)
    out, attn = layer(x, xm, y, ym, return_attention=True)
    assert (attn.masked_select(~ym[:, None, :].expand_as(attn)) == 0).all()   # padding: zero weight
    sums = attn.sum(-1)
    assert torch.allclose(sums[0][xm[0]], torch.ones(int(xl[0]), dtype=sums.dtype))
    assert torch.allclose(sums[2][xm[2]], torch.ones(int(xl[2]), dtype=sums.dtype))
    assert (attn[1] == 0).all()
    assert torch.isfinite(out).all()
    # an empty context gives c_i = 0: the output is the convolution without context
    assert torch.allclose(out[1], layer.plain(x, xm)[1], atol=1e-12)
    out.sum().backward()
    assert torch.isfinite(x.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in layer.parameters() if p.grad is not None)


def test_join_contexts_matches_python():
    ctx = torch.tensor([[[3, 4, 0], [5, 0, 0], [0, 0, 0]],
                        [[6, 7, 8], [0, 0, 0], [9, 2, 0]]])
    lens = torch.tensor([[2, 1, 0], [3, 0, 2]])
    ids, total = join_contexts(ctx, lens)
    for b in range(2):
        joined = [int(t) for k in range(3) for t in ctx[b, k, : lens[b, k]]]
        assert total[b] == len(joined)
        assert ids[b, : len(joined)].tolist() == joined
        assert (ids[b, len(joined):] == 0).all()


# ------------------------------------------------------------------ the model, every mode
MODES = [("text", {}), ("pair", {}), ("pair", {"context_repr": "cnn"}),
         ("contexts", {"multi_context": "context-wise"}), ("contexts", {"multi_context": "context-concat"}),
         ("contexts", {"multi_context": "context-wise", "context_repr": "cnn"})]


def cases(params: list, ids: list) -> list:
    """pytest parameters of cases naming a task kind: a text case reads the bundled questions, a
    pair or contexts case SICK from the shared data."""
    return [pytest.param(*p, id=i, marks=() if "text" in p else needs_data) for p, i in zip(params, ids)]


def build(name, kind, examples=None, seed=0, **cfg):
    examples = examples or real_examples(kind, 6)
    items, vocab_size, num_classes, _, _ = encode_for(examples)
    torch.manual_seed(seed)
    model = create_model(name, num_classes=num_classes, vocab_size=vocab_size, kind=kind, **TINY, **cfg)
    return model, items, num_classes


def has_padding(batch) -> bool:
    if batch.contexts is not None:
        return bool((batch.context_lengths < batch.contexts.shape[2]).any())
    pad = bool((batch.lengths < batch.text.shape[1]).any())
    return pad or (batch.pair is not None and bool((batch.pair_lengths < batch.pair.shape[1]).any()))


def check_model(model, items, num_classes):
    batch = collate_for(items, num_classes, model)
    assert has_padding(batch)
    model.train()
    logits = model(batch)
    assert logits.shape == (len(items), num_classes) and torch.isfinite(logits).all()
    torch.nn.functional.cross_entropy(logits, batch.labels).backward()
    missing = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
    assert not missing, missing
    assert_alone_equals_batched(model, items, num_classes)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("matching", MATCHINGS)
@pytest.mark.parametrize("kind,extra", cases(MODES, [f"{k}-{'-'.join(e.values()) or 'default'}" for k, e in MODES]))
def test_attconv_modes(kind, extra, variant, matching):
    model, items, c = build("attconv", kind, variant=variant, matching=matching, **extra)
    check_model(model, items, c)


@needs_data
def test_attconv_explain_shapes():
    for kind, extra in MODES:
        model, items, c = build("attconv", kind, **extra)
        batch = collate_for(items, c, model)
        model.eval()
        info = model.explain(batch)
        b, t = batch.text.shape
        assert info["activations"].shape == (b, t, TINY["hidden"])
        att = info["attention"]
        if kind == "text":
            assert att.shape == (b, t, t)
        elif kind == "pair":
            assert att.shape == (b, t, batch.pair.shape[1])
        elif extra["multi_context"] == "context-wise":
            assert att.shape == batch.contexts.shape[:2] + (t, batch.contexts.shape[2])
            # a missing context gets no attention at all
            assert (att[batch.context_lengths == 0] == 0).all()
        else:
            assert att.shape == (b, t, info["context_ids"].shape[1])
        with torch.no_grad():
            assert torch.allclose(info["logits"], model(batch))


def swapped(batch) -> Batch:
    return Batch(index=batch.index, labels=batch.labels, text=batch.pair, lengths=batch.pair_lengths,
                 pair=batch.text, pair_lengths=batch.lengths)


@needs_data
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("context_repr", ["attconv", "cnn"])
def test_pair_model_is_not_symmetric(variant, context_repr):
    model, items, c = build("attconv", "pair", variant=variant, context_repr=context_repr)
    model.eval()
    batch = collate_for(items, c, model)
    with torch.no_grad():
        a, b = model(batch), model(swapped(batch))
        assert (a - b).abs().max() > 1e-4
        # the text side really reads the context: another premise changes r_x
        h = TINY["hidden"]
        other = Batch(index=batch.index, text=batch.text, lengths=batch.lengths,
                      pair=batch.pair.roll(1, 0), pair_lengths=batch.pair_lengths.roll(1, 0))
        rx, rx_other = model.features(batch)[:, :h], model.features(other)[:, :h]
        assert (rx - rx_other).abs().max() > 1e-4


def one_context_examples(n=6):
    pairs = real_examples("pair", n)
    return [ContextsExample(p.text, (p.pair,), p.label, p.where) for p in pairs]


@needs_data
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("matching", MATCHINGS)
def test_context_wise_equals_context_concat_with_one_context(variant, matching):
    examples = one_context_examples()
    wise, items, c = build("attconv", "contexts", examples, variant=variant, matching=matching,
                           multi_context="context-wise")
    concat, _, _ = build("attconv", "contexts", examples, seed=1, variant=variant, matching=matching,
                         multi_context="context-concat")
    pair, _, _ = build("attconv", "pair", real_examples("pair", 6), seed=2, variant=variant, matching=matching)
    concat.load_state_dict(wise.state_dict())
    pair.load_state_dict(wise.state_dict())
    batch = collate_for(items, c, wise)
    pair_items = [Item(it.index, it.label, text=it.text, pair=it.contexts[0]) for it in items]
    for m in (wise, concat, pair):
        m.eval()
    with torch.no_grad():
        a, b = wise(batch), concat(batch)
        assert torch.allclose(a, b, atol=1e-6)
        # and both are the pair model on (text, context)
        assert torch.allclose(a, pair(collate_for(pair_items, c, pair)), atol=1e-6)


@needs_data
@pytest.mark.parametrize("multi", ["context-wise", "context-concat"])
def test_all_contexts_missing_is_finite(multi):
    model, items, c = build("attconv", "contexts", multi_context=multi, variant="advanced")
    items[0].contexts = [np.zeros(0, np.int64), np.zeros(0, np.int64)]
    batch = collate_for(items, c, model)
    logits = model(batch)
    assert torch.isfinite(logits).all()
    logits.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    # context-wise: extra missing contexts change nothing
    if multi == "context-wise":
        model.eval()
        it = items[1]
        padded = Item(it.index, it.label, text=it.text, contexts=list(it.contexts) + [np.zeros(0, np.int64)] * 2)
        with torch.no_grad():
            assert torch.allclose(model(collate_for([it], c, model)), model(collate_for([padded], c, model)),
                                  atol=1e-6)


def test_defaults_are_the_papers():
    model = create_model("attconv", num_classes=3, vocab_size=20, kind="pair")
    cfg = model.config
    assert (cfg.variant, cfg.matching, cfg.hidden, cfg.width) == ("light", "dot", 300, 3)
    assert model.attconv.conv.kernel_size == (3,)
    td = get_entry("attconv").train_defaults
    assert (td["optimizer"], td["lr"], td["batch_size"]) == ("adagrad", 0.01, 50)
    with pytest.raises(ValueError, match="matching must be one of"):
        create_model("attconv", num_classes=3, vocab_size=20, matching="cosine")
    assert len(create_model("attconv_noconv", num_classes=3, vocab_size=20).fc) == 4


# ------------------------------------------------------------------ baselines
BASELINES = [("attconv_noatt", "pair"), ("attconv_noatt", "contexts"), ("attconv_noatt", "text"),
             ("attconv_noconv", "pair"), ("attconv_noconv", "contexts"), ("attconv_noconv", "text"),
             ("attentive_pooling", "pair"), ("attentive_pooling", "contexts")]


@pytest.mark.parametrize("name,kind", cases(BASELINES, [f"{n}-{k}" for n, k in BASELINES]))
def test_baselines(name, kind):
    model, items, c = build(name, kind)
    check_model(model, items, c)
    if kind == "pair":
        model.eval()
        batch = collate_for(items, c, model)
        with torch.no_grad():
            assert (model(batch) - model(swapped(batch))).abs().max() > 1e-4


@needs_data
@torch.no_grad()
def test_attentive_pooling_equals_loop_reference():
    model, items, c = build("attentive_pooling", "pair")
    model.eval()
    batch = collate_for(items, c, model)
    x, y = model.embedding(batch.text), model.embedding(batch.pair)
    conv = lambda h: torch.tanh(model.conv(h.T[None]))[0].T                  # one unpadded text [n, H]
    q_all = torch.tanh(model.conv((x * batch.mask[..., None]).transpose(1, 2))).transpose(1, 2)
    a_all = torch.tanh(model.conv((y * batch.pair_mask[..., None]).transpose(1, 2))).transpose(1, 2)
    wq, wa, rq, ra = model.pool(q_all * batch.mask[..., None], batch.mask, a_all * batch.pair_mask[..., None],
                                batch.pair_mask)
    for b in range(len(items)):
        n, m = int(batch.lengths[b]), int(batch.pair_lengths[b])
        q, a = conv(x[b, :n]), conv(y[b, :m])
        g = [[math.tanh(float(q[i] @ model.U @ a[j])) for j in range(m)] for i in range(n)]
        row = torch.tensor([max(g[i]) for i in range(n)])
        col = torch.tensor([max(g[i][j] for i in range(n)) for j in range(m)])
        ref_wq, ref_wa = torch.softmax(row, 0), torch.softmax(col, 0)
        assert torch.allclose(wq[b, :n], ref_wq, atol=1e-5) and (wq[b, n:] == 0).all()
        assert torch.allclose(wa[b, :m], ref_wa, atol=1e-5) and (wa[b, m:] == 0).all()
        assert torch.allclose(rq[b], (ref_wq[:, None] * q).sum(0), atol=1e-5)
        assert torch.allclose(ra[b], (ref_wa[:, None] * a).sum(0), atol=1e-5)


# ------------------------------------------------------------------ explanation plots
def assert_png_shows(path, fig) -> None:
    """The PNG written for ``fig`` has the figure's size at the plots' DPI, and at the centre of
    every cell of its heatmap the colour of that cell's value."""
    import matplotlib.image
    from adaptext.explain.attention import DPI
    png = matplotlib.image.imread(path)
    height, width = png.shape[:2]
    assert np.allclose((width, height), fig.get_size_inches() * DPI, atol=1)
    ax = fig.axes[0]
    image = ax.images[0]
    values = np.asarray(image.get_array())
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            x, y = ax.transData.transform((j, i)) / (fig.bbox.width, fig.bbox.height)   # figure fractions
            got = png[int((1 - y) * height), int(x * width), :3]
            assert np.abs(got - image.cmap(image.norm(values[i, j]))[:3]).max() <= 2 / 255, (path.name, i, j)


def _attended(kind, extra, batch, info, ex, tok) -> list:
    """(attention matrix, the tokens of its columns) of each heatmap, from the model's own output."""
    n, attn = int(batch.lengths[0]), info["attention"][0]
    if kind == "text":
        return [(attn[:n, :n], tok(ex.text))]
    if kind == "pair":
        return [(attn[:n, :int(batch.pair_lengths[0])], tok(ex.pair))]
    if extra["multi_context"] == "context-concat":
        return [(attn[:n, :int(info["context_lengths"][0])], [t for c in ex.contexts for t in tok(c)])]
    return [(attn[k, :n, :int(m)], tok(c)) for k, (m, c) in enumerate(zip(batch.context_lengths[0], ex.contexts))]


@pytest.mark.parametrize("kind,extra", cases([("text", {}), ("pair", {}), ("contexts", {"multi_context": "context-wise"}),
                                              ("contexts", {"multi_context": "context-concat"})],
                                             ["text", "pair", "context-wise", "context-concat"]))
def test_plot_attention_draws_the_model_s_attention(kind, extra, tmp_path):
    """Each heatmap is the attention the model computes for the text (rows, each summing to 1)
    over its context (columns), labelled with their tokens, and the PNG written shows those
    values; the activations figure is the filters' outputs along the text."""
    examples = real_examples(kind, 6)
    model, items, c = build("attconv", kind, examples, **extra)
    i = 2 if kind == "contexts" else 0                   # example 2 has three contexts
    batch = collate_for([items[i]], c, model)
    tok = Tokenizer(level="word")
    ex = examples[i]
    ctx = None if kind == "text" else tok(ex.pair) if kind == "pair" else [tok(t) for t in ex.contexts]
    model.eval()
    with torch.no_grad():
        info = model.explain(batch)
    figures = attention_figures(model, batch, tok(ex.text), ctx)
    paths = plot_attention(model, batch, tok(ex.text), ctx, tmp_path / "plots")
    assert [p.name for p in paths] == list(figures) and list(figures)[-1] == "activations.png"
    attended = _attended(kind, extra, batch, info, ex, tok)
    assert len(paths) == len(attended) + 1 == (1 + len(ex.contexts) if "context-wise" in extra.values() else 2)
    for path, (weights, columns) in zip(paths, attended):
        fig = figures[path.name]
        ax = fig.axes[0]
        shown = np.asarray(ax.images[0].get_array())
        assert np.allclose(shown, weights.numpy(), atol=1e-6) and np.allclose(shown.sum(1), 1, atol=1e-5)
        assert [t.get_text() for t in ax.get_xticklabels()] == columns
        assert [t.get_text() for t in ax.get_yticklabels()] == tok(ex.text)
        assert_png_shows(path, fig)
    acts = figures["activations.png"].axes[0].images[0].get_array()
    assert np.allclose(acts, info["activations"][0, :int(batch.lengths[0])].T.numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="tokens given"):
        plot_attention(model, batch, tok(ex.text)[:-1], ctx, tmp_path / "bad")
