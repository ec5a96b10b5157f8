"""Attentive convolution (Yin & Schütze 2018, "Attentive Convolution: Equipping CNNs with
RNN-style Attention Mechanisms", TACL 6), Section 3.

A convolution whose window at position i sees, besides its local n-gram, an attentive
context c_i gathered from a context text t^y (another text, or t^x itself):

- light (Section 3.1, Eqs. 1-6): the hidden states h are the word vectors.
  f_e matching e_ij = f_e(h^x_i, h^y_j), one of
      dot       h^x_i . h^y_j
      bilinear  h^x_i^T W_e h^y_j
      additive  v^T tanh(W_e h^x_i + U_e h^y_j)
  c_i = sum_j softmax_j(e_i) h^y_j
  h'_i = tanh(W [h_{i-1}, h_i, h_{i+1}] + W_1 c_i + b)
  computed as a width-3 convolution over the text plus a width-1 convolution over the
  sequence of attentive contexts.
- advanced (Section 3.2, Eqs. 7-13): the hidden states play three roles.
  f_gconv, gated convolution:  o_i = tanh(W_h i_i + b_h), g_i = sigmoid(W_g i_i + b_g),
      f_gconv(h_i) = g_i * h_i + (1 - g_i) * o_i, with i_i the window around h_i;
  source (t^x) and focus (t^y) are multi-granular, f_mgran(H) = [f_gconv^uni(H), f_gconv^tri(H)]
      (the same f_mgran for both sides);
  beneficiary (t^x) = f_gconv^uni(H) with its own weights;
  attention from source to focus, c_i = sum_j softmax_j(f_e(source_i, focus_j)) focus_j,
  h'_i = tanh(W [bene_{i-1}, bene_i, bene_{i+1}] + W_1 c_i + b).

Masks: padding of the context never receives attention weight (-inf before the softmax);
a context with no token (missing, or fully padded) gives c_i = 0, never NaN. Every padded
position of the text is zero before each convolution, so a text's output does not depend
on how much padding its batch has.
"""
from __future__ import annotations

import torch
from torch import nn

MATCHINGS = ("dot", "bilinear", "additive")
VARIANTS = ("light", "advanced")


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim where ``mask`` (broadcastable to scores) is True.

    Masked entries get weight exactly 0; a row with no True entry gets all zeros (not NaN,
    and no NaN in the gradient either)."""
    mask = mask.expand_as(scores) if mask.shape != scores.shape else mask
    any_valid = mask.any(-1, keepdim=True)
    scores = scores.masked_fill(~mask, float("-inf")).masked_fill(~any_valid, 0.0)
    return torch.softmax(scores, dim=-1) * mask


class Matching(nn.Module):
    """f_e(s_i, f_j) for every pair of positions: s [B, T, Ds], f [B, Ty, Df] -> [B, T, Ty]."""
    W_e: nn.Parameter | nn.Linear        # bilinear: the matrix [Ds, Df]; additive: the source's map
    U_e: nn.Linear                       # additive only, as v
    v: nn.Linear

    def __init__(self, kind: str, source_dim: int, focus_dim: int, att_dim: int = 300):
        super().__init__()
        if kind not in MATCHINGS:
            raise ValueError(f"matching must be one of {', '.join(MATCHINGS)}, not {kind!r}")
        self.kind = kind
        if kind == "dot" and source_dim != focus_dim:
            raise ValueError(f"dot matching needs equal sizes, got {source_dim} and {focus_dim}")
        if kind == "bilinear":
            self.W_e = nn.Parameter(torch.empty(source_dim, focus_dim))
            nn.init.xavier_uniform_(self.W_e)
        elif kind == "additive":
            self.W_e = nn.Linear(source_dim, att_dim, bias=False)
            self.U_e = nn.Linear(focus_dim, att_dim)
            self.v = nn.Linear(att_dim, 1, bias=False)

    def forward(self, s: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
        if self.kind == "dot":
            return s @ f.transpose(1, 2)                                   # [B, T, Ty]
        W_e = self.W_e
        if self.kind == "bilinear":
            assert isinstance(W_e, nn.Parameter), "bilinear matching's W_e is a matrix"
            return (s @ W_e) @ f.transpose(1, 2)                           # [B, T, Ty]
        # additive: v^T tanh(W_e s_i + U_e f_j); memory B x T x Ty x att_dim
        assert isinstance(W_e, nn.Linear), "additive matching's W_e is a linear map"
        z = torch.tanh(W_e(s)[:, :, None, :] + self.U_e(f)[:, None, :, :])
        return self.v(z).squeeze(-1)                                       # [B, T, Ty]


class GatedConv1d(nn.Module):
    """f_gconv: o = tanh(W_h window + b_h), g = sigmoid(W_g window + b_g), g*h + (1-g)*o.
    [B, T, D] -> [B, T, D]; zero at padded positions."""

    def __init__(self, dim: int, width: int):
        super().__init__()
        if width % 2 != 1:
            raise ValueError(f"gated convolution width must be odd, not {width}")
        self.conv = nn.Conv1d(dim, 2 * dim, width, padding=width // 2)    # [W_h; W_g] in one conv

    def forward(self, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        m = mask[..., None].to(h.dtype)
        h = h * m
        o, g = self.conv(h.transpose(1, 2)).transpose(1, 2).chunk(2, dim=-1)
        g = torch.sigmoid(g)
        return (g * h + (1 - g) * torch.tanh(o)) * m


class MultiGranular(nn.Module):
    """f_mgran: uni-gram and tri-gram gated convolutions, concatenated. [B, T, D] -> [B, T, 2D]."""

    def __init__(self, dim: int):
        super().__init__()
        self.uni, self.tri = GatedConv1d(dim, 1), GatedConv1d(dim, 3)

    def forward(self, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.uni(h, mask), self.tri(h, mask)], dim=-1)


class AttentiveConv1d(nn.Module):
    """Attentive convolution, light or advanced. ``forward(x, x_mask, y, y_mask)``:
    x [B, T, D] the text, y [B, Ty, D] its context (None: the text itself, intra-context);
    returns h' [B, T, out_dim] (zero at padding) and, with ``return_attention``, the
    attention weights [B, T, Ty] too."""

    def __init__(self, in_dim: int, out_dim: int, width: int = 3, matching: str = "dot",
                 variant: str = "light", att_dim: int = 300):
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, not {variant!r}")
        if width % 2 != 1:
            raise ValueError(f"filter width must be odd (h_(i-k)..h_(i+k)), not {width}")
        self.variant, self.width = variant, width
        if variant == "advanced":
            self.mgran = MultiGranular(in_dim)          # source and focus
            self.bene = GatedConv1d(in_dim, 1)          # beneficiary
            focus_dim = 2 * in_dim
        else:
            focus_dim = in_dim
        self.focus_dim = focus_dim
        self.match = Matching(matching, focus_dim, focus_dim, att_dim)
        self.conv = nn.Conv1d(in_dim, out_dim, width, padding=width // 2)   # W, b over the window
        self.conv_ctx = nn.Conv1d(focus_dim, out_dim, 1, bias=False)        # W_1 over c_i

    @property
    def out_dim(self) -> int:
        return self.conv.out_channels

    def source(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Source (of the text) and focus (of the context): the word vectors themselves in the
        light version, f_mgran(H) [B, T, 2D] in the advanced one."""
        x = x * mask[..., None].to(x.dtype)
        return x if self.variant == "light" else self.mgran(x, mask)

    def beneficiary(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """What the convolution window reads: the word vectors (light), f_gconv^uni(H) (advanced)."""
        x = x * mask[..., None].to(x.dtype)
        return x if self.variant == "light" else self.bene(x, mask)

    def convolve(self, bene: torch.Tensor, c: torch.Tensor | None, mask: torch.Tensor) -> torch.Tensor:
        """tanh(W [bene_{i-1}, bene_i, bene_{i+1}] + W_1 c_i + b) [B, T, H], zero at padding;
        c None: no attentive context (a plain convolution with the same filters)."""
        z = self.conv(bene.transpose(1, 2))                                  # [B, H, T]
        if c is not None:
            z = z + self.conv_ctx(c.transpose(1, 2))                         # + W_1 c_i
        return torch.tanh(z).transpose(1, 2) * mask[..., None].to(bene.dtype)

    def attend(self, source: torch.Tensor, bene: torch.Tensor, x_mask: torch.Tensor, focus: torch.Tensor,
               y_mask: torch.Tensor, return_attention: bool = False):
        """Attention from the text's source [B, T, F] to the context's focus [B, Ty, F], then the
        convolution over the beneficiary [B, T, D] with the attentive contexts. For models that
        reuse the roles of a text (both directions of a pair, one text against K contexts)."""
        e = self.match(source, focus)                                        # f_e: [B, T, Ty]
        attn = masked_softmax(e, y_mask[:, None, :]) * x_mask[..., None].to(e.dtype)
        c = attn @ focus                                                     # c_i: [B, T, F]
        out = self.convolve(bene, c, x_mask)                                 # [B, T, H]
        return (out, attn) if return_attention else out

    def forward(self, x: torch.Tensor, x_mask: torch.Tensor, y: torch.Tensor | None = None,
                y_mask: torch.Tensor | None = None, return_attention: bool = False):
        source = self.source(x, x_mask)                                      # [B, T, F]
        if y is None:                                                        # intra-context
            focus, y_mask = source, x_mask
        else:
            assert y_mask is not None, "a context comes with its mask"
            focus = self.source(y, y_mask)                                   # [B, Ty, F]
        return self.attend(source, self.beneficiary(x, x_mask), x_mask, focus, y_mask, return_attention)

    def plain(self, x: torch.Tensor, x_mask: torch.Tensor) -> torch.Tensor:
        """The same filters without the attentive context: tanh(W [h_{i-1}, h_i, h_{i+1}] + b)."""
        return self.convolve(self.beneficiary(x, x_mask), None, x_mask)
