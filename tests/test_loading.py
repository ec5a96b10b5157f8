"""Batches through torch's data loading: the epoch order of a seed is fixed (a seeded run trains
on the same batches as before, and a killed run resumes on them), ranks split an epoch evenly,
evaluation batches keep to their token budget, and a pass leaves the random generators alone."""
import numpy as np
import torch

from adaptext.data.batching import Collator, Item
from adaptext.data.loading import ItemDataset, LengthBatchSampler, batch_loader, inference_batches

LENGTHS = [5, 3, 9, 1, 7, 2, 8, 4, 6, 10, 3, 5, 2, 7, 1, 9, 4, 8, 6, 2]
# the orders of seed 7 (batches of 3, pools of 2 batches) and of evaluation (batches of 4, at most
# 20 padded positions) as runs have trained and evaluated on them: a change here changes every
# seeded result
EPOCH_0 = [[16, 7, 18], [14, 3, 19], [13, 2, 9], [4, 6], [5, 1, 11], [12, 10, 0], [8, 17, 15]]
EPOCH_1 = [[8, 17, 15], [14, 10, 16], [3, 12, 11], [18, 6, 2], [19, 1, 0], [5, 7], [4, 13, 9]]
EVALUATION = [[3, 14, 5, 12], [19, 1, 10, 7], [16, 0, 11], [8, 18], [4, 13], [6, 17], [2, 15], [9]]


def _training(**kw) -> LengthBatchSampler:
    return LengthBatchSampler(LENGTHS, 3, shuffle=True, bucket=2, seed=7, **kw)


def _items() -> list[Item]:
    return [Item(index=i, label=i % 2, text=np.arange(1, 1 + n)) for i, n in enumerate(LENGTHS)]


def test_each_pass_is_the_next_epoch_of_the_seed():
    sampler = _training()
    assert len(sampler) == 7
    assert list(sampler) == EPOCH_0 and list(sampler) == EPOCH_1
    loader = batch_loader(_items(), 3, Collator(2), shuffle=True, bucket=2, seed=7)
    assert [b.index.tolist() for b in loader] == EPOCH_0 and [b.index.tolist() for b in loader] == EPOCH_1


def test_evaluation_is_sorted_by_length_within_the_token_budget():
    sampler = LengthBatchSampler(LENGTHS, 4, max_tokens=20)
    assert list(sampler) == EVALUATION == list(sampler) and len(sampler) == len(EVALUATION)
    assert all(len(b) * max(LENGTHS[i] for i in b) <= 20 for b in EVALUATION)
    loader = batch_loader(_items(), 4, Collator(2), max_tokens=20)
    assert [b.index.tolist() for b in loader] == EVALUATION
    # prediction walks the same sampler in the calling process, within the default budget
    assert [b.index.tolist() for b in inference_batches(ItemDataset(_items()), 4, Collator(2))] == [
        [3, 14, 5, 12], [19, 1, 10, 7], [16, 0, 11, 8], [18, 4, 13, 6], [17, 2, 15, 9]]
    # a text longer than the budget is a batch of its own
    assert list(LengthBatchSampler([3, 50, 4], 4, max_tokens=20)) == [[0, 2], [1]]


def test_a_resumed_pass_starts_at_the_batch_it_names_and_the_next_pass_goes_on():
    sampler = _training()
    sampler.resume(1, 2)
    assert list(sampler) == EPOCH_1[2:]
    fresh = _training()
    assert list(sampler) == [list(fresh) for _ in range(3)][2]
    loader = batch_loader(_items(), 3, Collator(2), shuffle=True, bucket=2, seed=7)
    loader.batch_sampler.resume(0, 5)
    assert len(loader) == 7 and [b.index.tolist() for b in loader] == EPOCH_0[5:]


def test_ranks_take_every_world_th_batch_in_equal_counts():
    ranks = []
    for rank in range(3):
        sampler = _training()
        sampler.set_distributed(rank, 3)
        ranks.append(list(sampler))
        assert len(sampler) == 3
    # 7 batches over 3 ranks: the first two are taken again, so every rank steps 3 times
    assert ranks == [EPOCH_0[0::3], EPOCH_0[1::3] + EPOCH_0[:1], EPOCH_0[2::3] + EPOCH_0[1:2]]
    evaluation = LengthBatchSampler(LENGTHS, 4, max_tokens=20)
    evaluation.set_distributed(2, 3)
    assert list(evaluation) == [EVALUATION[2], EVALUATION[5], EVALUATION[0]] and len(evaluation) == 3


def test_a_pass_leaves_the_global_random_generator_alone():
    # torch draws a seed for its workers on every pass: from the global generator it would move
    # the dropout masks of every step after a dev pass
    state = torch.get_rng_state()
    for shuffle in (True, False):
        list(batch_loader(_items(), 3, Collator(2), shuffle=shuffle))
    assert torch.equal(torch.get_rng_state(), state)


def test_the_dataset_answers_lengths_labels_and_positions():
    items = _items()[3:]
    data = ItemDataset(items)
    assert len(data) == 17 and data[0] is items[0] and data.__getitems__([2, 0]) == [items[2], items[0]]
    assert data.lengths() == LENGTHS[3:]
    assert data.labels() == [i % 2 for i in range(3, 20)] and data.indices() == list(range(3, 20))


def test_worker_processes_collate_the_same_batches():
    loader = batch_loader(_items(), 3, Collator(2), shuffle=True, bucket=2, seed=7, workers=2)
    assert [b.index.tolist() for b in loader] == EPOCH_0 and [b.index.tolist() for b in loader] == EPOCH_1
