"""Other sequence encoders for comparison with the convolutions whose parameters depend on
the input, each with a word embedding, a pooling over time and the shared classifier head.

- ``qrnn``: Bradbury et al. (2017), "Quasi-Recurrent Neural Networks", Sections 2 and 3.1
  (sentiment: 4 densely connected layers of 256 units, window 2, dropout 0.3 between layers,
  L2 4e-6, batches of 24); with a bidirectional option.
- ``lstm``: the LSTM Bradbury et al. (2017) compare the QRNN with (Section 3.1: a
  densely connected 4-layer LSTM of the same width), built from the same parts: dense
  connections, dropout between layers, the same pooling and head. At prediction its first
  layer's input projections are looked up per word, as the QRNN's gates are.
- ``gated_cnn``: Dauphin et al. (2017), "Language Modeling with Gated Convolutional
  Networks", Section 2: h(X) = (X * W + b) . sigmoid(X * V + c) (Eq. 1), gated linear units
  stacked in residual blocks. For classification the convolutions see both sides (an option
  makes them causal as in the language model).
- ``lightconv`` / ``dynamicconv``: Wu et al. (2019), Sections 3-5, the encoder block of
  ``adaptext.nn.lightconv`` at a small size (the paper's kernel widths grow with depth).
- ``dcnn``: Kalchbrenner et al. (2014), "A Convolutional Neural Network for Modelling
  Sentences", Section 3: wide one-dimensional convolutions applied to each row of the
  sentence matrix (Eq. 1-2, feature maps summed over the previous layer's maps, Eq. 6),
  dynamic k-max pooling with k_l = max(k_top, ceil((L - l) / L * s)) (Eq. 5), bias and tanh
  after the pooling, folding (sum of every two rows) in the last layer, then a fully
  connected softmax layer. Section 5.1/5.2 setup: d = 48, widths 7 and 5, 6 and 14 feature
  maps, k_top = 4, dropout on the penultimate layer, Adagrad. ``wide=False`` gives
  narrow convolutions instead.
- ``bov``: the bag-of-vectors baseline: the mean of the word vectors, then a small MLP.

Every encoder keeps padding out: inputs are zeroed at padded steps before each
convolution (so right-padding looks like the convolution's own zero padding), the QRNN
masks its recurrence, k-max pooling chooses among the valid steps only, and the pooling
skips padded steps. A text's logits are the same alone and in a padded batch.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..nn import ClassifierHead, WordEmbedding, masked_max_pool, masked_mean_pool
from ..nn.lightconv import LightConvBlock
from ..nn.lstm import double_candidate, lstm_from_gate_inputs
from ..nn.qrnn import QRNN
from ..registry import Options, TextClassifier, choice, register_model


# ------------------------------------------------------------------ QRNN
@dataclass
class QRNNConfig(Options):
    embed_dim: int = 300
    hidden: int = 256
    layers: int = 4
    window: int = 2
    bidirectional: bool = False
    dense: bool = True            # densely connected layers (Section 3.1)
    dropout: float = 0.3          # between layers
    zoneout: float = 0.0
    pooling: str = choice("max", ("max", "last"), "max (masked max over time) or last (final state per direction)")
    head_dropout: float = 0.3


@register_model("qrnn", config=QRNNConfig, paper="Bradbury et al. 2017",
                description="quasi-recurrent network: convolutional gates + fo-pooling (optionally bidirectional)",
                train_defaults={"optimizer": "adam", "lr": 1e-3, "batch_size": 24, "epochs": 10,
                                "weight_decay": 4e-6},
                test_config={"embed_dim": 8, "hidden": 6, "layers": 2, "bidirectional": True})
class QRNNClassifier(TextClassifier):
    def __init__(self, cfg: QRNNConfig, spec):
        super().__init__(cfg, spec)
        self.pooling, self.bidirectional, self.hidden = cfg.pooling, cfg.bidirectional, cfg.hidden
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        self.qrnn = QRNN(self.embedding.out_dim, cfg.hidden, cfg.layers, cfg.window, cfg.bidirectional,
                         cfg.dropout, cfg.zoneout, cfg.dense)
        self.head = ClassifierHead(self.qrnn.out_dim, spec.num_classes, cfg.head_dropout)

    def forward(self, batch) -> torch.Tensor:
        mask = batch.mask
        tables = self.projections() if not (self.training or torch.is_grad_enabled()) else None
        if tables is None:
            h = self.qrnn(self.embedding(batch.text), mask)               # [B, T, H or 2H]
        else:                       # prediction: the first layer's gate products looked up, not computed
            x = self.embedding(batch.text) if len(self.qrnn.layers) > 1 else None
            h = self.qrnn(x, mask, batch.text, tables)
        if self.pooling == "max":
            return self.head(masked_max_pool(h, mask))
        rows = torch.arange(h.shape[0], device=h.device)
        last = h[rows, (batch.lengths - 1).clamp_min(0), : self.hidden]  # forward: last valid step
        if self.bidirectional:
            last = torch.cat([last, h[:, 0, self.hidden:]], dim=-1)        # backward: first step
        return self.head(last)

    def projections(self) -> list | None:
        """Per direction, [vocabulary, k x 3H]: every word's vector times the first layer's gate
        weights at each of its k offsets (``WordEmbedding.projection_tables``); None where that would
        be too large."""
        first = self.qrnn.layers[0]
        directions = range(len(first.gates))
        return self.embedding.projection_tables([g.weight for g in first.gates],
                                                len(first.gates) * first.window * 3 * first.hidden,
                                                lambda: [first.offset_weights(d) for d in directions])


# ------------------------------------------------------------------ LSTM
@dataclass
class LSTMConfig(Options):
    embed_dim: int = 300
    hidden: int = 256
    layers: int = 4
    bidirectional: bool = False
    dense: bool = True            # each layer reads the embeddings and every earlier layer's output
    dropout: float = 0.3          # between layers
    head_dropout: float = 0.3


@register_model("lstm", config=LSTMConfig, paper="Bradbury et al. 2017 (baseline)",
                description="stacked LSTM (densely connected), masked max pooling over time: the QRNN's baseline",
                train_defaults={"optimizer": "adam", "lr": 1e-3, "batch_size": 24, "epochs": 10,
                                "weight_decay": 4e-6},
                test_config={"embed_dim": 8, "hidden": 6, "layers": 2, "bidirectional": True})
class LSTMClassifier(TextClassifier):
    """At prediction (eval mode, no gradient) the first layer's input projections W_ih x_t are looked
    up, one row per word of a vocabulary x 4H table per direction (``projections``), and its
    recurrence runs from them (``adaptext.nn.lstm``); training, explanations (gradients), exports and
    the layers above the first run ``nn.LSTM`` on the word vectors. Both give the same logits."""

    # Where the table path is used: None, where it was measured faster (below); True / False: always
    # (where the tables fit in TABLE_BYTES) / never, for benchmarks (benchmarks/lstm_speed.py).
    #
    # The table path saves the input projection (E x 4H multiply-adds per word and direction, E the
    # word vectors' size) but runs the recurrence step by step from Python, where nn.LSTM runs it in
    # C++. benchmarks/lstm_speed.py (1 thread, batches of 64 of the 1,821 SST-2 test sentences, one
    # bidirectional layer, a 2-core machine shared with other jobs; the range of two runs, the
    # second in benchmarks/results/lstm_speed.md; model forward / whole predict call): 300-d
    # vectors, 64 units a direction 1.9-2.1x / 1.6-1.7x nn.LSTM's sentences/s, 150 units 1.6-2.1x /
    # 1.6-1.8x; 50-d GloVe vectors, 64 units 0.80-0.90x / 0.66-0.81x (little projection to save).
    # A bare bidirectional layer, table and loop against nn.LSTM (the same batches, 1 thread): 300-d
    # and 256 units 1.4x, 512 units 1.0x; 600-d (multichannel) and 150 units 3.0x; 50-d and 150
    # units 0.97x. So the table path is used on a CPU where H <= E; on a GPU a step-by-step loop of
    # small kernels is not measured against cuDNN, and nn.LSTM is kept.
    use_tables: bool | None = None

    def __init__(self, cfg: LSTMConfig, spec):
        super().__init__(cfg, spec)
        self.hidden = cfg.hidden
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        self.dense, self.dropout = cfg.dense, nn.Dropout(cfg.dropout)
        directions = 2 if cfg.bidirectional else 1
        self.layers, dim = nn.ModuleList(), self.embedding.out_dim
        for _ in range(cfg.layers):
            self.layers.append(nn.ModuleList(nn.LSTM(dim, cfg.hidden, batch_first=True) for _ in range(directions)))
            dim = dim + cfg.hidden * directions if cfg.dense else cfg.hidden * directions
        self.head = ClassifierHead(cfg.hidden * directions, spec.num_classes, cfg.head_dropout)

    def forward(self, batch) -> torch.Tensor:
        mask = batch.mask
        # the backward direction reads each text reversed within its own length, so padding
        # (always after the text) reaches no state of either direction
        steps = torch.arange(mask.shape[1], device=mask.device)[None, :]
        back = torch.where(mask, batch.lengths[:, None] - 1 - steps, steps)
        # a traced graph (ONNX export, torch.compile) keeps nn.LSTM: the table path's loop would unroll
        # over the traced text length
        predicting = not (self.training or torch.is_grad_enabled() or torch.compiler.is_compiling())
        tables = self.projections() if predicting else None
        # the word vectors: read by the first layer, unless it looks its products up, and by
        # every layer of a densely connected stack
        h = self.embedding(batch.text) if tables is None or (self.dense and len(self.layers) > 1) else None
        for i, directions in enumerate(self.layers):
            if i == 0 and tables is not None:
                out = self._first_layer_from_tables(batch.text, back, tables)
            else:
                out = self._layer(directions, h, back)
            if i + 1 < len(self.layers):
                out = self.dropout(out)
                h = torch.cat([h, out], dim=-1) if self.dense else out
            else:
                h = out
        return self.head(masked_max_pool(h, mask))

    @staticmethod
    def _layer(directions, h: torch.Tensor, back: torch.Tensor) -> torch.Tensor:
        """One layer through nn.LSTM: h [B, T, D] -> [B, T, H or 2H]."""
        outs = [directions[0](h)[0]]
        if len(directions) == 2:
            flip = back[..., None].expand(-1, -1, h.shape[-1])
            reversed_out = directions[1](h.gather(1, flip))[0]
            outs.append(reversed_out.gather(1, back[..., None].expand(-1, -1, reversed_out.shape[-1])))
        return torch.cat(outs, dim=-1)

    def _first_layer_from_tables(self, ids: torch.Tensor, back: torch.Tensor, tables: list) -> torch.Tensor:
        """The first layer's output [B, T, H or 2H] from the word ids [B, T] and each direction's
        table of W_ih x (``projections``): the ids reversed for the backward direction, not the
        wider projections."""
        first = self.layers[0]
        order = [ids, ids.gather(1, back)][: len(first)]
        pre = torch.stack([F.embedding(d_ids.T, table) for d_ids, table in zip(order, tables)], dim=1)
        pre += torch.stack([double_candidate(m.bias_ih_l0 + m.bias_hh_l0) for m in first])[:, None, :]
        w_hh = torch.stack([double_candidate(m.weight_hh_l0).T for m in first])            # [D, H, 4H]
        out = lstm_from_gate_inputs(pre, w_hh).permute(2, 0, 1, 3)                       # [B, T, D, H]
        outs = [out[:, :, 0]]
        if len(first) == 2:
            outs.append(out[:, :, 1].gather(1, back[..., None].expand(-1, -1, self.hidden)))
        return torch.cat(outs, dim=-1)

    def projections(self) -> list | None:
        """Per direction, [vocabulary, 4H]: every word's vector (all channels) times the first layer's
        W_ih, the cell candidate's block doubled (``adaptext.nn.lstm``; the padding row zero), made
        once per set of weights (``WordEmbedding.projection_tables``); None where the tables would be
        too large or the table path is not used (``use_tables``)."""
        first = self.layers[0]
        use = self.use_tables
        if use is None:
            use = first[0].weight_ih_l0.device.type == "cpu" and self.hidden <= self.embedding.out_dim
        if not use:
            return None
        return self.embedding.projection_tables([m.weight_ih_l0 for m in first], len(first) * 4 * self.hidden,
                                                lambda: [double_candidate(m.weight_ih_l0) for m in first])


# ------------------------------------------------------------------ gated CNN
@dataclass
class GatedCNNConfig:
    embed_dim: int = 300
    channels: int = 256
    width: int = 5
    blocks: int = 3               # residual blocks
    block_layers: int = 2         # GLU convolutions per block
    causal: bool = False          # True: the language model's convolutions (see only the past)
    dropout: float = 0.5


class GLUConv(nn.Module):
    """(X * W + b) . sigmoid(X * V + c) over x [B, C, T] (Eq. 1); padded steps zeroed first."""

    def __init__(self, in_dim: int, out_dim: int, width: int, causal: bool):
        super().__init__()
        left = width - 1 if causal else (width - 1) // 2
        self.pads = (left, width - 1 - left)
        self.conv = nn.Conv1d(in_dim, 2 * out_dim, width)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        return F.glu(self.conv(F.pad(x * keep, self.pads)), dim=1)


@register_model("gated_cnn", config=GatedCNNConfig, paper="Dauphin et al. 2017",
                description="gated convolutional network: residual blocks of gated linear units, max pool",
                train_defaults={"optimizer": "adam", "lr": 1e-3, "batch_size": 50, "epochs": 10},
                test_config={"embed_dim": 8, "channels": 6, "blocks": 2})
class GatedCNN(TextClassifier):
    def __init__(self, cfg: GatedCNNConfig, spec):
        super().__init__(cfg, spec)
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        self.first = GLUConv(self.embedding.out_dim, cfg.channels, cfg.width, cfg.causal)
        self.blocks = nn.ModuleList(
            nn.ModuleList(GLUConv(cfg.channels, cfg.channels, cfg.width, cfg.causal) for _ in range(cfg.block_layers))
            for _ in range(cfg.blocks))
        self.head = ClassifierHead(cfg.channels, spec.num_classes, cfg.dropout)

    def forward(self, batch) -> torch.Tensor:
        mask = batch.mask
        keep = mask[:, None, :].to(torch.float32)                         # [B, 1, T]
        x = self.first(self.embedding(batch.text).transpose(1, 2), keep)   # [B, C, T]
        for block in self.blocks:
            h = x
            for layer in block:
                h = layer(h, keep)
            x = x + h                                                     # residual block
        return self.head(masked_max_pool(x.transpose(1, 2), mask))


# ------------------------------------------------------------------ LightConv / DynamicConv
@dataclass
class LightConvConfig:
    embed_dim: int = 300
    dim: int = 256
    heads: int = 4
    kernel_sizes: tuple = (3, 7, 15)     # one block per width, growing with depth as in the paper
    ffn_dim: int = 512
    dropout: float = 0.1
    weight_dropout: float = 0.1
    head_dropout: float = 0.5


class _ConvEncoder(TextClassifier):
    dynamic = False

    def __init__(self, cfg: LightConvConfig, spec):
        super().__init__(cfg, spec)
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        self.project = (nn.Linear(self.embedding.out_dim, cfg.dim) if self.embedding.out_dim != cfg.dim
                        else nn.Identity())
        self.blocks = nn.ModuleList(LightConvBlock(cfg.dim, k, cfg.heads, self.dynamic, cfg.ffn_dim, cfg.dropout,
                                                   cfg.weight_dropout) for k in cfg.kernel_sizes)
        self.head = ClassifierHead(cfg.dim, spec.num_classes, cfg.head_dropout)

    def forward(self, batch) -> torch.Tensor:
        mask = batch.mask
        x = self.project(self.embedding(batch.text))                      # [B, T, D]
        for block in self.blocks:
            x = block(x, mask)
        return self.head(masked_max_pool(x, mask))


# Wu et al.'s two encoders differ only in how the kernels are made
_LIGHT = {"config": LightConvConfig, "paper": "Wu et al. 2019",
          "train_defaults": {"optimizer": "adam", "lr": 5e-4, "batch_size": 50, "epochs": 10},
          "test_config": {"embed_dim": 8, "dim": 8, "heads": 2, "kernel_sizes": (3, 5), "ffn_dim": 8}}


@register_model("lightconv", **_LIGHT,
                description="lightweight convolution encoder: softmax-normalised depthwise kernels shared by heads")
class LightConvEncoder(_ConvEncoder):
    dynamic = False


@register_model("dynamicconv", **_LIGHT, description="dynamic convolution encoder: a kernel predicted at every position")
class DynamicConvEncoder(_ConvEncoder):
    dynamic = True


# ------------------------------------------------------------------ DCNN
def dynamic_k(lengths: torch.Tensor, layer: int, num_layers: int, k_top: int) -> torch.Tensor:
    """Eq. 5: k_l = max(k_top, ceil((L - l) / L * s)) for layer l of L, sentence length s."""
    if layer >= num_layers:
        return torch.full_like(lengths, k_top)
    k = torch.div((num_layers - layer) * lengths + num_layers - 1, num_layers, rounding_mode="floor")
    return k.clamp_min(k_top)


def kmax_pool(x: torch.Tensor, lengths: torch.Tensor, k: torch.Tensor):
    """k-max pooling: per text b and channel, the k[b] largest values among its first
    lengths[b] steps, in their original order. x [B, C, T] -> ([B, C, max k], kept [B]);
    steps past a text's k are 0. k is clamped to [1, length]."""
    B, C, T = x.shape
    k = torch.minimum(k, lengths).clamp_min(1)
    kmax = int(k.max())
    steps = torch.arange(T, device=x.device)
    scores = x.masked_fill(~(steps[None, :] < lengths[:, None])[:, None, :], float("-inf"))
    idx = scores.topk(kmax, dim=-1).indices                            # [B, C, kmax], by value
    chosen = (torch.arange(kmax, device=x.device)[None, :] < k[:, None])[:, None, :]
    idx = torch.where(chosen, idx, T).sort(dim=-1).values              # original order; unchosen last
    out = x.gather(-1, idx.clamp_max(T - 1)) * chosen.to(x.dtype)
    return out, k


class DCNNLayer(nn.Module):
    """Row-wise wide (or narrow) convolution, optional folding, dynamic k-max pooling, bias,
    tanh. x [B, rows, maps, T] -> [B, rows (/2 if fold), out_maps, k]."""

    def __init__(self, rows: int, in_maps: int, out_maps: int, width: int, fold: bool, wide: bool = True):
        super().__init__()
        if fold and rows % 2:
            raise ValueError(f"folding needs an even number of rows, not {rows}")
        self.rows, self.out_maps, self.width, self.fold, self.wide = rows, out_maps, width, fold, wide
        # groups = rows: each row of the sentence matrix is convolved on its own (Eq. 1);
        # map j of this layer sums the convolutions of all maps of the previous one (Eq. 6)
        self.conv = nn.Conv1d(rows * in_maps, rows * out_maps, width, groups=rows, bias=False)
        self.bias = nn.Parameter(torch.zeros(rows // 2 if fold else rows, out_maps, 1))

    def forward(self, x: torch.Tensor, lengths: torch.Tensor, k: torch.Tensor):
        B, R, M, T = x.shape
        steps = torch.arange(T, device=x.device)
        x = x * (steps[None, :] < lengths[:, None])[:, None, None, :].to(x.dtype)
        x = x.reshape(B, R * M, T)
        if self.wide:
            x = F.pad(x, (self.width - 1, self.width - 1))
            lengths = lengths + self.width - 1
        else:
            x = F.pad(x, (0, max(0, self.width - T)))
            lengths = (lengths - self.width + 1).clamp_min(1)
        c = self.conv(x).view(B, R, self.out_maps, -1)                    # [B, R, M', T']
        if self.fold:
            c = c.view(B, R // 2, 2, self.out_maps, -1).sum(2)              # folding: rows 2i + 2i+1
        Rn = c.shape[1]
        pooled, k = kmax_pool(c.reshape(B, Rn * self.out_maps, -1), lengths, k)
        h = torch.tanh(pooled.view(B, Rn, self.out_maps, -1) + self.bias)
        h = h * (torch.arange(h.shape[-1], device=h.device)[None, :] < k[:, None])[:, None, None, :].to(h.dtype)
        return h, k


@dataclass
class DCNNConfig:
    embed_dim: int = 48
    widths: tuple = (7, 5)
    maps: tuple = (6, 14)
    k_top: int = 4
    wide: bool = True             # False: narrow convolutions (no h-1 padding)
    dropout: float = 0.5


@register_model("dcnn", config=DCNNConfig, paper="Kalchbrenner et al. 2014",
                description="dynamic CNN: wide row-wise convolutions, dynamic k-max pooling, folding",
                train_defaults={"optimizer": "adagrad", "lr": 0.05, "batch_size": 50, "epochs": 15,
                                "weight_decay": 1e-4},
                test_config={"embed_dim": 8, "maps": (2, 3)})
class DCNN(TextClassifier):
    def __init__(self, cfg: DCNNConfig, spec):
        super().__init__(cfg, spec)
        if len(cfg.widths) != len(cfg.maps):
            raise ValueError("widths and maps need one entry per layer")
        self.k_top, self.num_layers = cfg.k_top, len(cfg.widths)
        self.min_length = 1 if cfg.wide else cfg.widths[0]
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        rows, in_maps = self.embedding.out_dim, 1
        self.layers = nn.ModuleList()
        for i, (w, m) in enumerate(zip(cfg.widths, cfg.maps)):
            fold = i + 1 == len(cfg.widths)                             # folding in the last layer
            self.layers.append(DCNNLayer(rows, in_maps, m, w, fold, cfg.wide))
            rows, in_maps = (rows // 2 if fold else rows), m
        self.head = ClassifierHead(rows * in_maps * cfg.k_top, spec.num_classes, cfg.dropout)

    def forward(self, batch) -> torch.Tensor:
        s = batch.lengths
        x = self.embedding(batch.text).transpose(1, 2)[:, :, None, :]     # [B, d, 1, T]: d rows, 1 map
        lengths = s
        for l, layer in enumerate(self.layers, start=1):
            x, lengths = layer(x, lengths, dynamic_k(s, l, self.num_layers, self.k_top))
        x = F.pad(x, (0, self.k_top - x.shape[-1]))                      # a text shorter than k_top
        return self.head(x.flatten(1))                                    # [B, rows * maps * k_top]


# ------------------------------------------------------------------ bag of vectors
@dataclass
class BOVConfig:
    embed_dim: int = 300
    hidden: int = 256
    dropout: float = 0.5


@register_model("bov", config=BOVConfig, paper="bag of vectors baseline",
                description="mean of the word vectors, then a one-hidden-layer MLP",
                train_defaults={"optimizer": "adam", "lr": 1e-3, "batch_size": 50, "epochs": 10},
                test_config={"embed_dim": 8, "hidden": 6})
class BagOfVectors(TextClassifier):
    def __init__(self, cfg: BOVConfig, spec):
        super().__init__(cfg, spec)
        self.embedding = WordEmbedding(spec, cfg.embed_dim)
        self.hidden = nn.Sequential(nn.Linear(self.embedding.out_dim, cfg.hidden), nn.ReLU())
        self.head = ClassifierHead(cfg.hidden, spec.num_classes, cfg.dropout)

    def forward(self, batch) -> torch.Tensor:
        x = masked_mean_pool(self.embedding(batch.text), batch.mask)        # [B, E]
        return self.head(self.hidden(x))
