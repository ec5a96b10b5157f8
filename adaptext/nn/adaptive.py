"""Adaptive convolution: filters generated from the input (Choi et al. 2019, "Adaptive
Convolution for Text Classification", NAACL, Section 3).

A filter-generating network is attached to a convolution block. It reads the block's own
input and returns the block's filters (Algorithm 1: every block generates its filters from
its own input, so deeper blocks see deeper features):

- Context vector (Section 3.1, Eqs. 1-3). A bidirectional GRU with g/2 hidden units per
  direction reads the block input, h_t = [GRU_fwd(x)_t ; GRU_bwd(x)_t] (Eq. 1); attention with
  a trainable query u scores the steps, a_t = softmax_t(u . h_t) (Eq. 2); the context is
  c = sum_t a_t h_t (Eq. 3), of size g (600 in the paper). ``context="mean"`` and
  ``"attention-only"`` drop the GRU (the "w/o GRU" rows of Table 4): c is the mean of the
  input vectors, or the attention of Eqs. 2-3 applied to the input vectors directly.
- Full generation (Section 3.2, Eq. 5): filter i is f_i = W_i c, a matrix W_i of size
  (in_channels * width) x g per filter.
- Hashed generation (Eqs. 6-7): a pool E of b component filters (b = 20) is shared by all the
  filters of a convolution; filter i is f_i = sum_j p_ij E_{D_j(i)} (Eq. 7) with n importance
  parameters p_i = P_i c (Eq. 6, n = 5) and fixed hash functions D_j. The hash functions
  are drawn from a seed kept in the state dict (buffer ``hash_seed``): a saved and loaded
  model computes the same filters.

Speed. Nothing loops over the samples of a batch. Full generation convolves every sample with
its own filters in one grouped convolution (groups = batch). Hashed generation uses that
convolution is linear: conv(x, sum_j p_ij E_D_j(i)) = sum_j p_ij conv(x, E_D_j(i)). One ordinary
convolution with the b pool filters serves the whole batch, then each sample mixes the b
feature maps with its importance parameters, written as a sparse mixing matrix
M[i, D_j(i)] += p_ij and one batched matmul (the gather + weighted sum in one op).

Shapes: convolutions take x [B, C, T] like ``nn.Conv1d``; masks are [B, T], True on real
tokens. The input's padding positions must already be zero (embeddings of the pad id are;
a model zeroes its hidden layers there), exactly as for an ordinary convolution.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

GENERATIONS = ("full", "hashed")
CONTEXTS = ("gru", "mean", "attention-only")

_MASK64 = (1 << 64) - 1
_PRIME = (1 << 61) - 1          # Mersenne prime for the universal hash family


def _splitmix64(state: int):
    """A tiny deterministic PRNG (splitmix64): the hash functions depend on the seed only,
    never on the version of torch or numpy."""
    while True:
        state = (state + 0x9E3779B97F4A7C15) & _MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        yield z ^ (z >> 31)


def hash_indices(seed: int, num_filters: int, num_hashes: int, pool_size: int) -> torch.Tensor:
    """D_j(i) for filters i < num_filters and hashes j < num_hashes: [num_filters, num_hashes]
    pool indices. Each D_j is drawn from the universal family ((a i + c) mod p) mod b."""
    rng = _splitmix64(int(seed) & _MASK64)
    coef = [(1 + next(rng) % (_PRIME - 1), next(rng) % _PRIME) for _ in range(num_hashes)]
    table = [[((a * i + c) % _PRIME) % pool_size for a, c in coef] for i in range(num_filters)]
    return torch.tensor(table, dtype=torch.int64, device="cpu").reshape(num_filters, num_hashes)


def conv1d_per_sample(x: torch.Tensor, filters: torch.Tensor, bias: torch.Tensor | None = None,
                      padding: int = 0) -> torch.Tensor:
    """Convolve every sample with its own filters: x [B, C, T], filters [B, O, C, k] ->
    [B, O, T + 2 padding - k + 1], as one grouped convolution (groups = B)."""
    B, C, T = x.shape
    O, k = filters.shape[1], filters.shape[3]
    if torch.compiler.is_exporting():
        # ONNX's Conv needs a constant group count, and the batch size is a graph input: the
        # same products as windows [B, C, T', k] against each sample's filters
        windows = F.pad(x, (padding, padding)).unfold(2, k, 1)
        y = torch.einsum("bctk,bock->bot", windows, filters)
    else:
        y = F.conv1d(x.reshape(1, B * C, T), filters.reshape(B * O, C, k), padding=padding, groups=B)
        y = y.view(B, O, y.shape[-1])
    return y if bias is None else y + bias[:, None]


class FilterGenerator(nn.Module):
    """Context vector c [B, out_dim] of a block input (Section 3.1, Eqs. 1-3)."""
    fwd: nn.GRU | None                  # gru: the forward and backward GRUs
    bwd: nn.GRU | None
    query: nn.Parameter | None          # gru and attention-only: the query of Eq. 2

    def __init__(self, in_dim: int, context_dim: int = 600, context: str = "gru"):
        super().__init__()
        if context not in CONTEXTS:
            raise ValueError(f"context must be one of {', '.join(CONTEXTS)}, not {context!r}")
        if context == "gru" and context_dim % 2:
            raise ValueError(f"context_dim must be even (g/2 GRU units per direction), not {context_dim}")
        self.kind, self.in_dim = context, in_dim
        self.out_dim = context_dim if context == "gru" else in_dim
        self.fwd = self.bwd = self.query = None
        if context == "gru":
            # two one-directional GRUs rather than nn.GRU(bidirectional=True): the backward one
            # reads each text reversed within its own length, so padding never reaches it
            self.fwd = nn.GRU(in_dim, context_dim // 2, batch_first=True)
            self.bwd = nn.GRU(in_dim, context_dim // 2, batch_first=True)
        if context in ("gru", "attention-only"):
            self.query = nn.Parameter(torch.empty(self.out_dim).normal_(0.0, 1.0 / math.sqrt(self.out_dim)))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        # x [B, T, D]; mask [B, T] (None: every position is a token)
        if mask is None:
            mask = torch.ones(x.shape[:2], dtype=torch.bool, device=x.device)
        # an empty text attends to its first (padding) position rather than to nothing
        mask = torch.cat([mask[:, :1] | ~mask.any(1, keepdim=True), mask[:, 1:]], dim=1)
        if self.kind == "mean":
            m = mask[..., None].to(x.dtype)
            return (x * m).sum(1) / m.sum(1).clamp_min(1.0)
        h = x
        if self.kind == "gru":
            assert self.fwd is not None and self.bwd is not None, "a gru context has its GRUs"
            x = x.contiguous()                                              # (a [B, C, T] block input, transposed)
            h_fwd, _ = self.fwd(x)                                          # [B, T, g/2]
            rev = _reverse_index(mask)                                      # [B, T]
            h_bwd, _ = self.bwd(_take(x, rev))
            h = torch.cat([h_fwd, _take(h_bwd, rev)], dim=-1)               # Eq. 1: [B, T, g]
        assert self.query is not None, "every context but the mean attends with a query"
        score = (h @ self.query).masked_fill(~mask, float("-inf"))        # Eq. 2
        alpha = torch.softmax(score, dim=1)
        return torch.einsum("bt,btd->bd", alpha, h)                         # Eq. 3: [B, g]


def _reverse_index(mask: torch.Tensor) -> torch.Tensor:
    """Per-row index that reverses the first L_b positions and keeps the padding in place."""
    T = mask.shape[1]
    t = torch.arange(T, device=mask.device)[None, :]
    L = mask.sum(1, keepdim=True)
    return torch.where(t < L, L - 1 - t, t)


def _take(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    return x.gather(1, index[..., None].expand(-1, -1, x.shape[-1]))


class AdaptiveConv1d(nn.Module):
    """A 1-D convolution whose filters are generated from the input (Section 3.2).

    In place of ``nn.Conv1d(in_channels, out_channels, kernel_size, padding=padding)``:
    ``forward(x [B, C_in, T], mask=None, context=None) -> [B, C_out, T']``. With
    ``own_context=True`` (default) the layer has its own ``FilterGenerator`` reading x (under
    ``mask``); a block whose convolutions share one context vector builds them with
    ``own_context=False, context_dim=generator.out_dim`` and passes ``context=c``.
    The bias stays a static parameter.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, padding: int = 0,
                 generation: str = "hashed", context_dim: int = 600, context: str = "gru",
                 pool_size: int = 20, num_importance: int = 5, own_context: bool = True,
                 bias: bool = True, seed: int | None = None):
        super().__init__()
        if generation not in GENERATIONS:
            raise ValueError(f"generation must be one of {', '.join(GENERATIONS)}, not {generation!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.padding, self.generation = kernel_size, padding, generation
        self.generator = FilterGenerator(in_channels, context_dim, context) if own_context else None
        g = self.generator.out_dim if self.generator is not None else context_dim
        self.context_dim = g
        fan_in = in_channels * kernel_size
        if generation == "full":
            # Eq. 5: all W_i stacked, [O * C * k, g]; scaled so f_i has about an ordinary
            # convolution's scale when the entries of c are O(1/sqrt(g)) .. O(1)
            self.W = nn.Parameter(torch.empty(out_channels * fan_in, g).normal_(0.0, 1.0 / math.sqrt(fan_in * g)))
        else:
            self.pool_size, self.num_importance = pool_size, num_importance
            self.E = nn.Parameter(torch.empty(pool_size, in_channels, kernel_size))          # pool E
            nn.init.kaiming_uniform_(self.E, a=math.sqrt(5))                                   # nn.Conv1d's init
            self.P = nn.Parameter(torch.empty(out_channels * num_importance, g).normal_(0.0, 1.0 / math.sqrt(g)))
            if seed is None:
                seed = int(torch.randint(0, 2 ** 62, (), device="cpu"))
            self.register_buffer("hash_seed", torch.tensor(int(seed), dtype=torch.int64))
            self.register_buffer("hash_index", hash_indices(seed, out_channels, num_importance, pool_size),
                                 persistent=False)                                             # D_j(i): [O, n]
        self.bias = nn.Parameter(torch.empty(out_channels).uniform_(-1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))) \
            if bias else None

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, padding={self.padding}, "
                f"generation={self.generation}, context_dim={self.context_dim}")

    # ---------------------------------------------------------------- hashing
    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        if self.generation == "hashed" and self.hash_seed.device.type != "meta":
            # the hash functions follow the loaded seed
            self.hash_index = hash_indices(int(self.hash_seed), self.out_channels, self.num_importance,
                                           self.pool_size).to(self.hash_index.device)

    # ---------------------------------------------------------------- generation
    def context_of(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """c [B, g] of an input x [B, C, T] from the layer's own generator."""
        if self.generator is None:
            raise ValueError("this AdaptiveConv1d shares its block's context: call it with context=c")
        return self.generator(x.transpose(1, 2), mask)

    def importance(self, context: torch.Tensor) -> torch.Tensor:
        """Eq. 6: p [B, O, n]."""
        return (context @ self.P.t()).view(-1, self.out_channels, self.num_importance)

    def mixing(self, context: torch.Tensor) -> torch.Tensor:
        """Hashed generation as a matrix M [B, O, b] with M[i, D_j(i)] += p_ij, so that the
        generated filters are f = M E (Eq. 7)."""
        p = self.importance(context)
        index = self.hash_index[None].expand(p.shape[0], -1, -1)
        return p.new_zeros(p.shape[0], self.out_channels, self.pool_size).scatter_add(2, index, p)

    def filters(self, context: torch.Tensor) -> torch.Tensor:
        """The generated filters of each sample, [B, O, C_in, k] (Eq. 5 or Eq. 7)."""
        B, O, C, k = context.shape[0], self.out_channels, self.in_channels, self.kernel_size
        if self.generation == "full":
            return (context @ self.W.t()).view(B, O, C, k)
        return (self.mixing(context) @ self.E.view(self.pool_size, C * k)).view(B, O, C, k)

    # ---------------------------------------------------------------- forward
    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                context: torch.Tensor | None = None) -> torch.Tensor:
        if context is None:
            context = self.context_of(x, mask)                               # [B, g]
        if self.generation == "full":
            # every sample with its own filters, one grouped convolution
            return conv1d_per_sample(x, self.filters(context), self.bias, self.padding)
        # linearity: the b pool filters once for the whole batch, then mix per sample
        y = F.conv1d(x, self.E, padding=self.padding)                         # [B, b, T']
        out = torch.bmm(self.mixing(context), y)                              # [B, O, T']
        return out if self.bias is None else out + self.bias[:, None]


class StaticConv1d(nn.Conv1d):
    """``nn.Conv1d`` with the adaptive layer's call signature (mask and context are ignored)."""

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                context: torch.Tensor | None = None) -> torch.Tensor:
        return super().forward(x)


class ConvFactory:
    """How a model builds the convolutions of its blocks. A block asks ``context(in_dim)`` for
    the module computing its context vector (None here: static filters need none) and builds
    its convolutions with ``conv(in_ch, out_ch, k, padding, context=that module)``; in forward
    it computes ``c = context(x [B, T, D], mask)`` once and calls ``conv(x, context=c)``.
    This default builds ordinary static convolutions."""

    def context(self, in_dim: int) -> nn.Module | None:
        return None

    def conv(self, in_channels: int, out_channels: int, kernel_size: int, padding: int = 0,
             context: nn.Module | None = None) -> nn.Module:
        return StaticConv1d(in_channels, out_channels, kernel_size, padding=padding)


class AdaptiveConvFactory(ConvFactory):
    """Adaptive convolutions (Algorithm 1): each block's ``FilterGenerator`` reads the block's
    input, and the block's convolutions generate their filters from that one context vector."""

    def __init__(self, generation: str = "hashed", context: str = "gru", context_dim: int = 600,
                 pool_size: int = 20, num_importance: int = 5):
        if generation not in GENERATIONS:
            raise ValueError(f"generation must be one of {', '.join(GENERATIONS)}, not {generation!r}")
        if context not in CONTEXTS:
            raise ValueError(f"context must be one of {', '.join(CONTEXTS)}, not {context!r}")
        self.generation, self.context_kind, self.context_dim = generation, context, context_dim
        self.pool_size, self.num_importance = pool_size, num_importance

    def context(self, in_dim: int) -> FilterGenerator:
        return FilterGenerator(in_dim, self.context_dim, self.context_kind)

    def conv(self, in_channels, out_channels, kernel_size, padding=0, context=None) -> AdaptiveConv1d:
        if context is None:
            raise ValueError("an adaptive convolution needs its block's FilterGenerator (context=...)")
        return AdaptiveConv1d(in_channels, out_channels, kernel_size, padding, generation=self.generation,
                              context_dim=context.out_dim, pool_size=self.pool_size,
                              num_importance=self.num_importance, own_context=False)
