"""Layers shared by several models."""
from .embedding import WordEmbedding
from .head import ClassifierHead, masked_max_pool, masked_mean_pool

__all__ = ["WordEmbedding", "ClassifierHead", "masked_max_pool", "masked_mean_pool"]
