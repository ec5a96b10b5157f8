"""Batches of items through torch's data loading: a dataset over a split's items, and a batch
sampler whose order is a pure function of (seed, epoch), so a run killed mid-epoch resumes on
exactly the batches it would have seen, and two runs with one seed train alike.

Training order: shuffled, then sorted by length inside pools of ``bucket`` batches to cut
padding, then the batches shuffled. Evaluation order: sorted by length, cut so no batch holds
more than ``max_tokens`` padded positions. Under data parallelism each rank takes every
``world``-th batch, all ranks the same number of them.
"""
from __future__ import annotations

import math
import random
from typing import Any, Callable, Iterator

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from .batching import Batch, Item, StoredItems

Items = list[Item] | StoredItems     # a split's items: in memory, or rows of a token store


class ItemDataset(Dataset[Item]):
    """The items of a split, in memory (a list of ``Item``) or rows of a token store read when a
    batch asks for them (``StoredItems``), behind one protocol."""

    def __init__(self, items: Items) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, k: int) -> Item:
        return self.items[k]

    def __getitems__(self, ks: list[int]) -> list[Item]:
        # one call per batch: the loader asks for a batch's items at once
        items = self.items
        return [items[k] for k in ks]

    def lengths(self) -> list[int]:
        """Each item's length as ``Item.length`` counts it; a store answers without making items."""
        items = self.items
        return items.lengths().tolist() if isinstance(items, StoredItems) else [it.length() for it in items]

    def labels(self) -> list[Any]:
        items = self.items
        return items.labels() if isinstance(items, StoredItems) else [it.label for it in items]

    def indices(self) -> list[int]:
        """Each item's position in its split (``Batch.index``)."""
        items = self.items
        return items.indices() if isinstance(items, StoredItems) else [it.index for it in items]


class LengthBatchSampler(Sampler[list[int]]):
    """Lists of item positions, one list per batch, one pass per epoch; ``lengths``: each item's
    length. Each pass of a shuffled sampler is the next epoch; ``resume(epoch, done)`` makes the
    next pass be epoch ``epoch`` from its batch ``done`` on."""

    def __init__(self, lengths: list[int], batch_size: int, shuffle: bool = False, bucket: int = 50,
                 seed: int = 0, max_tokens: int = 32768):
        self.lengths, self.batch_size, self.max_tokens = lengths, batch_size, max_tokens
        self.shuffle, self.bucket, self.seed = shuffle, bucket, seed
        self.rank, self.world = 0, 1
        self.epoch, self._skip = 0, 0
        self._evaluation: list[list[int]] | None = None

    def set_distributed(self, rank: int, world: int) -> None:
        self.rank, self.world, self._evaluation = rank, world, None

    def resume(self, epoch: int, done: int) -> None:
        self.epoch, self._skip = epoch, done

    def __len__(self) -> int:
        if not self.shuffle:
            return len(self._batches(0))
        return math.ceil(math.ceil(len(self.lengths) / self.batch_size) / self.world)

    def __iter__(self):
        # the epoch advances when a pass starts, not when it ends: the trainer may stop a pass
        # after its known length without exhausting it
        epoch, skip = self.epoch, self._skip
        self._skip = 0
        if self.shuffle:
            self.epoch = epoch + 1
        yield from self._batches(epoch)[skip:]

    def _batches(self, epoch: int) -> list[list[int]]:
        if self.shuffle:
            return self._of_rank(self._training(epoch))
        if self._evaluation is None:          # the same every pass: made once (len() asks for it too)
            self._evaluation = self._of_rank(self._within_budget(self._by_length()))
        return self._evaluation

    def _training(self, epoch: int) -> list[list[int]]:
        n, bs, lengths = len(self.lengths), self.batch_size, self.lengths
        idx = list(range(n))
        rng = random.Random(self.seed * 1_000_003 + epoch)
        rng.shuffle(idx)
        if self.bucket > 1:
            pool = bs * self.bucket
            idx = [i for s in range(0, n, pool) for i in sorted(idx[s:s + pool], key=lengths.__getitem__)]
        batches = [idx[s:s + bs] for s in range(0, n, bs)]
        rng.shuffle(batches)
        return batches

    def _by_length(self) -> list[int]:
        # evaluation: sorted by length for little padding; the callers restore order by Batch.index
        return sorted(range(len(self.lengths)), key=self.lengths.__getitem__)

    def _within_budget(self, idx: list[int]) -> list[list[int]]:
        """``idx`` (sorted by length) cut into batches of at most ``batch_size`` items and
        ``max_tokens`` padded positions (a text longer than that is a batch of its own)."""
        batches: list[list[int]] = []
        batch: list[int] = []
        lengths = self.lengths
        for i in idx:
            if batch and (len(batch) == self.batch_size or (len(batch) + 1) * lengths[i] > self.max_tokens):
                batches.append(batch)
                batch = []
            batch.append(i)
        return batches + [batch] if batch else batches

    def _of_rank(self, batches: list[list[int]]) -> list[list[int]]:
        if self.world == 1:
            return batches
        per = math.ceil(len(batches) / self.world)
        batches = batches + batches[: per * self.world - len(batches)]   # an equal count on every rank
        return batches[self.rank::self.world]


def inference_batches(data: ItemDataset, batch_size: int, collate: Callable[[list[Item]], Batch]) -> Iterator[Batch]:
    """One pass over ``data`` in evaluation order, collated in this process: the batches of
    ``batch_loader``, without DataLoader's iterator, whose profiler range around every batch and
    set-up add a fifth to the time a 16-text request takes to predict."""
    for ids in LengthBatchSampler(data.lengths(), batch_size):
        yield collate(data.__getitems__(ids))


def batch_loader(items, batch_size: int, collate: Callable, shuffle: bool = False, bucket: int = 50,
                 seed: int = 0, max_tokens: int = 32768, workers: int = 0) -> DataLoader:
    """A DataLoader of collated batches of ``items`` (a list of ``Item``, or ``StoredItems``) in
    ``LengthBatchSampler``'s order; ``workers`` processes collate them (0: this process, the faster
    for these collates, which take less time than a worker's round trip).

    The loader's own generator seeds its workers: torch draws that seed on every pass, which
    from the global generator would shift the dropout masks of everything after a dev pass."""
    data = ItemDataset(items)
    sampler = LengthBatchSampler(data.lengths(), batch_size, shuffle, bucket, seed, max_tokens)
    return DataLoader(data, batch_sampler=sampler, collate_fn=collate, num_workers=workers,
                      persistent_workers=workers > 0, generator=torch.Generator().manual_seed(seed))
