"""Choi, Park & Lee (2019), "Adaptive Convolution for Text Classification" (NAACL).

Section 4 turns three baseline CNNs into their adaptive forms by attaching a
filter-generating network to every convolution block (Algorithm 1); each block generates
its filters from its own input (adaptext.nn.adaptive):

- ``ac_cnn``: Kim (2014)'s CNN. Its one block has parallel convolutions of widths 3, 4, 5
  with 100 filters each; one context vector of the word embeddings generates all 300.
- ``ac_dpcnn``: DPCNN (adaptext.models.dpcnn); each block of two convolutions has its own
  context vector, of the block's (downsampled) input.
- ``ac_densecnn``: DenseCNN (adaptext.models.densecnn); each block's context vector reads
  the concatenation the block convolves.

Options: ``generation`` full (Eq. 5) or hashed (Eqs. 6-7, the default: Table 3 shows it
costs a few percent of full generation's parameters); ``context`` gru (Eqs. 1-3), or mean /
attention-only for the "w/o GRU" ablation of Table 4; ``context_dim`` g = 600,
``pool_size`` b = 20, ``num_importance`` n = 5.

Each registration declares its row of Table 3 (``paper_params``: millions of parameters,
embeddings excluded), listed by ``adaptext models`` next to our count at the paper's sizes.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..nn.adaptive import CONTEXTS, GENERATIONS, AdaptiveConvFactory
from ..registry import Options, choice, register_model
from .densecnn import DenseCNN, DenseCNNConfig
from .dpcnn import DPCNN, DPCNNConfig
from .kim_cnn import KimCNN, KimCNNConfig

PAPER = "Choi et al. 2019"
_TRAIN = {"optimizer": "adam", "lr": 1e-3, "batch_size": 64, "epochs": 20}
_TINY = {"context_dim": 8, "pool_size": 4, "num_importance": 2}


@dataclass
class AdaptiveOptions(Options):
    generation: str = choice("hashed", GENERATIONS, "full (Eq. 5) or hashed (Eqs. 6-7)")
    context: str = choice("gru", CONTEXTS, "gru (Eqs. 1-3); attention-only (Table 4's w/o GRU: Eqs. 2-3 "
                                                 "over the inputs) or mean")
    context_dim: int = 600        # g
    pool_size: int = 20           # b component filters (hashed)
    num_importance: int = 5       # n importance parameters per filter (hashed)


def factory_of(cfg: AdaptiveOptions) -> AdaptiveConvFactory:
    return AdaptiveConvFactory(cfg.generation, cfg.context, cfg.context_dim, cfg.pool_size, cfg.num_importance)


# ---------------------------------------------------------------------------- ac_cnn
@dataclass
class ACCNNConfig(KimCNNConfig, AdaptiveOptions):
    """Kim's options, head included (dropout 0.5, max-norm 3 on the softmax rows), so ac_cnn
    differs from kim_cnn in its convolutions only."""


@register_model("ac_cnn", config=ACCNNConfig, paper=PAPER, train_defaults=_TRAIN,
                description="Kim CNN with adaptive convolution (filters generated from the input; full or hashed)",
                test_config={"embed_dim": 16, "filters": 4, **_TINY}, paper_params={"hashed": 2.1, "full": 217.5})
class ACCNN(KimCNN):
    """Kim's parallel convolutions with the filters of every width generated from one
    context vector of the word embeddings."""

    def __init__(self, cfg: ACCNNConfig, spec):
        super().__init__(cfg, spec, factory_of(cfg))


# ---------------------------------------------------------------------------- ac_dpcnn
@dataclass
class ACDPCNNConfig(DPCNNConfig, AdaptiveOptions):
    pass


# Ten generated convolutions in a residual stack: without clipping, Adam's steps blew the
# training loss up in late epochs (TREC, 2 of 3 seeds: 0.43 -> 5.3); gradients clipped to norm 1
# kept every seed stable (benchmarks/results/adaptive_table.md).
@register_model("ac_dpcnn", config=ACDPCNNConfig, paper=PAPER, train_defaults={**_TRAIN, "grad_clip": 1.0},
                description="DPCNN with adaptive convolution in every block (full or hashed)",
                test_config={"embed_dim": 16, "filters": 8, "depth": 5, **_TINY},
                paper_params={"hashed": 7.1, "full": 220.0})
class ACDPCNN(DPCNN):
    def __init__(self, cfg: ACDPCNNConfig, spec):
        super().__init__(cfg, spec, factory_of(cfg))


# ---------------------------------------------------------------------------- ac_densecnn
@dataclass
class ACDenseCNNConfig(DenseCNNConfig, AdaptiveOptions):
    pass


@register_model("ac_densecnn", config=ACDenseCNNConfig, paper=PAPER, train_defaults=_TRAIN,
                description="DenseCNN with adaptive convolution in every block (full or hashed)",
                test_config={"embed_dim": 16, "filters": 6, "blocks": 3, "fixed_length": 24, **_TINY},
                paper_params={"hashed": 11.6, "full": 263.2})
class ACDenseCNN(DenseCNN):
    def __init__(self, cfg: ACDenseCNNConfig, spec):
        super().__init__(cfg, spec, factory_of(cfg))

