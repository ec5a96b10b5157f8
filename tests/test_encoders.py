"""The comparison encoders: each fast layer against a straightforward reference
written here, causality of the dilated stack, and the any-length property (a text's
logits alone == its logits inside a batch padded far longer) for fcn and every encoder."""
import math

import pytest
import torch
import torch.nn.functional as F

from adaptext.models.dcnn import DCNNLayer, dynamic_k, kmax_pool
from adaptext.nn.fcn import DilatedStack, ScaledDotAttention, SimplifiedAttention
from adaptext.nn.lightconv import DynamicConv1d, LightweightConv1d
from adaptext.nn.qrnn import QRNNLayer, linear_scan
from adaptext.registry import create_model

from conftest import assert_alone_equals_batched, collate_for, encode_for, real_examples


def lengths_mask(lengths, T):
    return torch.arange(T)[None, :] < lengths[:, None]


# ------------------------------------------------------------------ QRNN
def scan_reference(a, b):
    c, out = torch.zeros_like(b[:, 0]), []
    for t in range(a.shape[1]):
        c = a[:, t] * c + b[:, t]
        out.append(c)
    return torch.stack(out, dim=1)


@pytest.mark.parametrize("method", ["loop", "parallel"])
@pytest.mark.parametrize("T", [1, 2, 5, 37, 300])
def test_linear_scan_matches_loop(T, method):
    torch.manual_seed(T)
    a = torch.rand(3, T, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, T, 4, dtype=torch.float64, requires_grad=True)
    g = torch.randn(3, T, 4, dtype=torch.float64)
    ref = scan_reference(a, b)
    got = linear_scan(a, b, method)
    assert torch.allclose(got, ref, rtol=1e-12, atol=1e-12)
    # the hand-written backward (adjoint recurrence) == autograd through the Python loop
    ga, gb = torch.autograd.grad((ref * g).sum(), (a, b))
    ha, hb = torch.autograd.grad((got * g).sum(), (a, b))
    assert torch.allclose(ha, ga, rtol=1e-10, atol=1e-10) and torch.allclose(hb, gb, rtol=1e-10, atol=1e-10)
    # float32 as used in training: the same up to rounding even over 300 steps
    assert torch.allclose(linear_scan(a.float(), b.float(), method), ref.float(), rtol=1e-5, atol=1e-5)


def qrnn_reference(layer, x, lengths):
    """Per text, on its valid tokens only: gates from an explicit window sum, fo-pooling by a
    Python loop over time; the backward direction on the reversed text."""
    k, H = layer.window, layer.hidden
    out = torch.zeros(x.shape[0], x.shape[1], layer.out_dim)
    for bi in range(x.shape[0]):
        n = int(lengths[bi])
        xs = x[bi, :n]
        dirs = []
        for d, conv in enumerate(layer.gates):
            seq = xs if d == 0 else xs.flip(0)
            W, bias = conv.weight, conv.bias            # [3H, D, k]
            hs = []
            c = torch.zeros(H)
            for t in range(n):
                g = bias.clone()
                for j in range(k):
                    src = t - (k - 1) + j
                    if src >= 0:
                        g = g + W[:, :, j] @ seq[src]
                z, f, o = torch.tanh(g[:H]), torch.sigmoid(g[H:2 * H]), torch.sigmoid(g[2 * H:])
                c = f * c + (1 - f) * z
                hs.append(o * c)
            h = torch.stack(hs)
            dirs.append(h if d == 0 else h.flip(0))
        out[bi, :n] = torch.cat(dirs, dim=-1)
    return out


@pytest.mark.parametrize("window,bidirectional,scan", [(2, False, "loop"), (3, True, "loop"), (1, True, "parallel")])
def test_qrnn_layer_matches_per_sample_loop(window, bidirectional, scan):
    torch.manual_seed(0)
    layer = QRNNLayer(4, 5, window, bidirectional, scan=scan).eval()
    lengths = torch.tensor([9, 4, 1])
    x = torch.randn(3, 9, 4)
    x[~lengths_mask(lengths, 9)] = 7.0          # garbage in the padding must not matter
    with torch.no_grad():
        got = layer(x, lengths_mask(lengths, 9))
        ref = qrnn_reference(layer, x, lengths)
    assert torch.allclose(got, ref, atol=1e-5)


QRNN_TABLES = [dict(layers=1, window=2, bidirectional=True), dict(layers=2, window=3),
               dict(layers=2, window=1, bidirectional=True, embedding_mode="multichannel")]


@pytest.mark.parametrize("config", QRNN_TABLES, ids=["bi-1", "dense-2-k3", "multichannel-k1"])
def test_qrnn_predicts_through_its_projection_tables_as_through_its_gates(config):
    """At prediction the first layer's gate products are looked up per word; the logits are
    those of the convolutions, on padded batches, and again after a weight update."""
    torch.manual_seed(0)
    config = dict(config)
    items, vocab_size, num_classes, _, _ = encode_for(real_examples("text", 6))
    mode = config.pop("embedding_mode", "rand")
    vectors = torch.randn(vocab_size, 8) if mode != "rand" else None
    if vectors is not None:
        vectors[0] = 0
    model = create_model("qrnn", num_classes=num_classes, vocab_size=vocab_size, embeddings=vectors,
                         embedding_mode=mode, embed_dim=8, hidden=6, **config).eval()
    batch = collate_for(items, num_classes, model, pad_to=30)

    def both_paths():
        with torch.enable_grad():
            convolved = model(batch).detach()
        with torch.no_grad():
            return convolved, model(batch)

    convolved, looked_up = both_paths()
    first = model.projections()
    rows = config.get("window", 2) * 3 * 6
    assert [t.shape for t in first] == [(vocab_size, rows)] * (2 if config.get("bidirectional") else 1)
    torch.testing.assert_close(looked_up, convolved, atol=1e-5, rtol=1e-5)
    model.train()
    F.cross_entropy(model(batch), batch.labels).backward()
    torch.optim.SGD(model.parameters(), lr=0.5).step()
    model.eval()
    convolved_after, looked_up_after = both_paths()
    assert model.projections() is not first and not torch.allclose(convolved_after, convolved)
    torch.testing.assert_close(looked_up_after, convolved_after, atol=1e-5, rtol=1e-5)


# ------------------------------------------------------------------ LightConv / DynamicConv
def conv_reference(x, lengths, kernel_at, heads, k, left):
    """y[b, t, c] = sum_j w(b, t)[head(c), j] * x[b, t + j - left, c], zero outside the text."""
    B, T, C = x.shape
    R = C // heads
    y = torch.zeros(B, T, C)
    for b in range(B):
        n = int(lengths[b])
        for t in range(n):
            w = kernel_at(b, t)                      # [H, k]
            for c in range(C):
                s = 0.0
                for j in range(k):
                    src = t + j - left
                    if 0 <= src < n:
                        s = s + w[c // R, j] * x[b, src, c]
                y[b, t, c] = s
    return y


@pytest.mark.parametrize("k,causal", [(3, False), (4, False), (3, True)])
def test_lightconv_matches_weighted_sum(k, causal):
    torch.manual_seed(1)
    conv = LightweightConv1d(6, k, heads=2, weight_dropout=0.3, causal=causal).eval()
    lengths = torch.tensor([7, 4])
    x = torch.randn(2, 7, 6)
    x[~lengths_mask(lengths, 7)] = -5.0
    w = conv.weight.softmax(-1).detach()
    left = k - 1 if causal else (k - 1) // 2
    with torch.no_grad():
        got = conv(x, lengths_mask(lengths, 7))
    ref = conv_reference(x, lengths, lambda b, t: w, 2, k, left)
    valid = lengths_mask(lengths, 7)
    assert torch.allclose(got[valid], ref[valid], atol=1e-6)


@pytest.mark.parametrize("k,causal", [(3, False), (5, True)])
def test_dynamicconv_matches_weighted_sum(k, causal):
    torch.manual_seed(2)
    conv = DynamicConv1d(6, k, heads=3, causal=causal).eval()
    with torch.no_grad():
        conv.weight_linear.bias.normal_()
    lengths = torch.tensor([6, 3])
    x = torch.randn(2, 6, 6)
    x[~lengths_mask(lengths, 6)] = 3.0
    lin = conv.weight_linear

    def kernel_at(b, t):                          # the kernel predicted from position t alone
        return (lin.weight @ x[b, t] + lin.bias).view(3, k).softmax(-1).detach()

    left = k - 1 if causal else (k - 1) // 2
    with torch.no_grad():
        got = conv(x, lengths_mask(lengths, 6))
    ref = conv_reference(x, lengths, kernel_at, 3, k, left)
    valid = lengths_mask(lengths, 6)
    assert torch.allclose(got[valid], ref[valid], atol=1e-6)


# ------------------------------------------------------------------ DCNN
def test_kmax_pool_matches_per_sample_sort():
    torch.manual_seed(3)
    x = torch.randn(3, 4, 10, requires_grad=True)
    lengths, k = torch.tensor([10, 6, 3]), torch.tensor([4, 5, 7])
    out, kept = kmax_pool(x, lengths, k)
    assert kept.tolist() == [4, 5, 3]
    for b in range(3):
        n, kb = int(lengths[b]), int(kept[b])
        for c in range(4):
            vals = x[b, c, :n].tolist()
            top = sorted(sorted(range(n), key=lambda i: -vals[i])[:kb])     # k largest, in order
            assert torch.allclose(out[b, c, :kb], x[b, c, top])
            assert (out[b, c, kb:] == 0).all()
    out.sum().backward()                        # gradient reaches exactly the chosen entries
    assert int((x.grad != 0).sum()) == 4 * (4 + 5 + 3)


@pytest.mark.parametrize("L", [2, 3])
def test_dynamic_k_is_eq5(L):
    for s in range(1, 40):
        s_t = torch.tensor([s])
        for l in range(1, L + 1):
            expect = max(4, math.ceil((L - l) / L * s))
            assert int(dynamic_k(s_t, l, L, 4)) == expect


@pytest.mark.parametrize("fold,wide", [(False, True), (True, True), (True, False)])
def test_dcnn_layer_matches_rowwise_convolution(fold, wide):
    """Each row convolved on its own, maps summed (Eq. 6), folding, k-max, bias, tanh."""
    torch.manual_seed(4)
    rows, m_in, m_out, w = 4, 2, 3, 3
    layer = DCNNLayer(rows, m_in, m_out, w, fold, wide)
    with torch.no_grad():
        layer.bias.normal_()
    lengths = torch.tensor([6, 4])
    x = torch.randn(2, rows, m_in, 6)
    k = torch.tensor([3, 5])
    with torch.no_grad():
        got, kept = layer(x, lengths, k)
    W = layer.conv.weight.view(rows, m_out, m_in, w)
    for b in range(2):
        n = int(lengths[b])
        xs = x[b, :, :, :n]
        conv = torch.zeros(rows, m_out, n + w - 1 if wide else max(n - w + 1, 1))
        for r in range(rows):
            for j in range(m_out):
                for i in range(m_in):
                    inp = F.pad(xs[r, i], (w - 1, w - 1)) if wide else F.pad(xs[r, i], (0, max(0, w - n)))
                    conv[r, j] += F.conv1d(inp[None, None], W[r, j, i][None, None])[0, 0]
        if fold:
            conv = conv[0::2] + conv[1::2]
        kb = min(int(k[b]), conv.shape[-1])
        assert int(kept[b]) == kb
        for r in range(conv.shape[0]):
            for j in range(m_out):
                vals = conv[r, j].tolist()
                top = sorted(sorted(range(len(vals)), key=lambda i: -vals[i])[:kb])
                ref = torch.tanh(conv[r, j, top] + layer.bias[r, j, 0])
                assert torch.allclose(got[b, r, j, :kb], ref, atol=1e-6)
                assert (got[b, r, j, kb:] == 0).all()


# ------------------------------------------------------------------ fcn layers
def test_dilated_stack_is_causal():
    torch.manual_seed(5)
    stack = DilatedStack(8, 7, 4, dropout=0.1).eval()
    x = torch.randn(2, 8, 60)
    for t in (0, 17, 58):
        y = x.clone()
        y[:, :, t + 1:] = torch.randn_like(y[:, :, t + 1:])
        with torch.no_grad():
            (o1, s1), (o2, s2) = stack(x), stack(y)
        assert torch.allclose(o1[..., : t + 1], o2[..., : t + 1], atol=1e-6)
        assert torch.allclose(s1[..., : t + 1], s2[..., : t + 1], atol=1e-6)
        assert not torch.allclose(s1[..., t + 1:], s2[..., t + 1:])   # the change is seen later


def test_fcn_defaults_are_the_paper():
    model = create_model("fcn", num_classes=5, vocab_size=40)
    blocks = model.stack.blocks
    assert [b.conv.dilation[0] for b in blocks] == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert all(b.conv.kernel_size == (7,) and b.conv.out_channels == 128 for b in blocks)
    assert model.embedding.out_dim == 16 and model.causal.kernel_size == (3,) and model.causal.out_channels == 128


def test_fcn_sequence_is_causal_in_tokens():
    torch.manual_seed(6)
    model = create_model("fcn", num_classes=3, vocab_size=30, filters=16, causal_filters=16).eval()
    text = torch.randint(2, 30, (2, 50))
    for t in (3, 30):
        other = text.clone()
        other[:, t + 1:] = torch.randint(2, 30, other[:, t + 1:].shape)
        with torch.no_grad():
            a, b = model.sequence(text), model.sequence(other)
        assert torch.allclose(a[:, : t + 1], b[:, : t + 1], atol=1e-6)
        assert not torch.allclose(a[:, t + 1:], b[:, t + 1:])


def test_scaled_dot_attention_matches_per_sample_reference():
    torch.manual_seed(7)
    att = ScaledDotAttention(5, heads=2, head_dim=3).eval()
    lengths = torch.tensor([6, 2])
    x = torch.randn(2, 6, 5)
    with torch.no_grad():
        got = att(x, lengths_mask(lengths, 6))
        Wq, Wk, Wv = att.qkv.weight.view(3, 2, 3, 5)
        bq, bk, bv = att.qkv.bias.view(3, 2, 3)
        for b in range(2):
            xs = x[b, : int(lengths[b])]
            heads = []
            for h in range(2):
                q, k, v = xs @ Wq[h].T + bq[h], xs @ Wk[h].T + bk[h], xs @ Wv[h].T + bv[h]
                heads.append(torch.softmax(q @ k.T / math.sqrt(3), dim=-1) @ v)
            ref = att.out(torch.cat(heads, dim=-1))
            assert torch.allclose(got[b, : len(xs)], ref, atol=1e-6)


@pytest.mark.parametrize("heads,width", [(1, 1), (2, 1), (2, 3)])
def test_simplified_attention_matches_per_sample_reference(heads, width):
    torch.manual_seed(8)
    D = 4
    att = SimplifiedAttention(D, heads, width).eval()
    lengths = torch.tensor([7, 3])
    x = torch.randn(2, 7, D)
    x[~lengths_mask(lengths, 7)] = 9.0
    with torch.no_grad():
        got = att(x, lengths_mask(lengths, 7))
        W, bias = att.score.weight, att.score.bias                  # [heads * D, D, width]
        for b in range(2):
            n = int(lengths[b])
            xs = x[b, :n]
            outs = []
            for h in range(heads):
                s = torch.zeros(n, D)
                for t in range(n):                                   # causal map of steps t-w+1..t
                    s[t] = bias[h * D:(h + 1) * D]
                    for j in range(width):
                        src = t - (width - 1) + j
                        if src >= 0:
                            s[t] += W[h * D:(h + 1) * D, :, j] @ xs[src]
                outs.append(torch.softmax(s, dim=0) * xs)             # weights over time, per channel
            ref = torch.cat(outs, -1)
            ref = att.merge(ref) if heads > 1 else ref
            assert torch.allclose(got[b, :n], ref, atol=1e-6)


# ------------------------------------------------------------------ any length
def _alone_vs_padded(name, level, pad_to, **config):
    torch.manual_seed(9)
    items, vocab_size, num_classes, _, _ = encode_for(real_examples("text", 6), level)
    model = create_model(name, num_classes=num_classes, vocab_size=vocab_size, **config)
    assert_alone_equals_batched(model, items, num_classes, pad_to=pad_to)


FCN_VARIANTS = [("none", 1, "max"), ("scaled-dot", 1, "max"), ("scaled-dot", 8, "max"), ("simplified", 1, "max"),
                ("simplified", 8, "max"), ("local", 1, "max"), ("local", 8, "max"),
                ("none", 1, "gru"), ("none", 1, "strided"), ("local", 8, "strided")]


@pytest.mark.parametrize("attention,heads,pooling", FCN_VARIANTS, ids=[f"{a}-{h}-{p}" for a, h, p in FCN_VARIANTS])
def test_fcn_any_length(attention, heads, pooling):
    _alone_vs_padded("fcn", "char", 600, attention=attention, heads=heads, pooling_head=pooling,
                     filters=24, causal_filters=24, head_hidden=16)


def test_fcn_word_level_any_length():
    _alone_vs_padded("fcn", "word", 200, attention="scaled-dot", heads=8, filters=16, causal_filters=16)


ENCODERS = [("qrnn", dict(embed_dim=8, hidden=6, layers=2, bidirectional=True)),
            ("qrnn", dict(embed_dim=8, hidden=6, layers=3, window=3, bidirectional=True, pooling="last")),
            ("gated_cnn", dict(embed_dim=8, channels=6)),
            ("lightconv", dict(embed_dim=8, dim=8, heads=2, ffn_dim=8)),
            ("dynamicconv", dict(embed_dim=8, dim=8, heads=2, ffn_dim=8)),
            ("dcnn", dict(embed_dim=8, maps=(2, 3))),
            ("dcnn", dict(embed_dim=8, maps=(2, 3), wide=False)),
            ("bov", dict(embed_dim=8, hidden=6))]


@pytest.mark.parametrize("name,config", ENCODERS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(ENCODERS)])
def test_encoder_any_length(name, config):
    _alone_vs_padded(name, "word", 80, **config)
