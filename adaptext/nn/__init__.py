"""Layers shared by several models."""
from .adaptive import AdaptiveConv1d, FilterGenerator
from .attentive import AttentiveConv1d
from .embedding import WordEmbedding
from .fcn import DilatedResidualBlock
from .head import ClassifierHead, masked_max_pool, masked_mean_pool
from .lightconv import DynamicConv1d, LightweightConv1d
from .qrnn import QRNN

__all__ = ["AdaptiveConv1d", "AttentiveConv1d", "ClassifierHead", "DilatedResidualBlock", "DynamicConv1d",
           "FilterGenerator", "LightweightConv1d", "QRNN", "WordEmbedding", "masked_max_pool", "masked_mean_pool"]
