"""The prefix cache's memory policy, on hand-made key/value tensors (no model)."""

from types import SimpleNamespace

import torch

from talentrl_cli.prefix_cache import PrefixCache, _nbytes


def _batch_cache(rows: int, tokens: int):
    """One layer, 1 head, head_dim 2; row r's keys are all r (so a stored entry names its row)."""
    keys = torch.arange(rows, dtype=torch.float32)[:, None, None, None].expand(rows, 1, tokens, 2).clone()
    return SimpleNamespace(layers=[SimpleNamespace(keys=keys, values=keys.clone())])


def _store_rows(cache: PrefixCache, histories: list[list[int]]) -> None:
    n = len(histories[0])
    cache.store(_batch_cache(len(histories), n), torch.ones(len(histories), n, dtype=torch.long),
                {i: (h, n) for i, h in enumerate(histories)})


def test_an_entry_that_does_not_fit_is_refused_so_the_next_turns_first_rows_still_hit():
    histories = [[r, r, r] for r in (1, 2, 3)]
    one = 2 * 3 * 2 * 4  # keys + values, 3 tokens x head_dim 2, fp32
    cache = PrefixCache(max_bytes=2 * one)
    _store_rows(cache, histories)
    # the next turn asks for rows 1, 2, 3 in the order they were stored: least-recently-used
    # eviction would have dropped row 1 for row 3, and then row 2 for row 1, and so on
    assert cache.lookup([1, 1, 1, 9]) == ((1, 1, 1), 3)
    assert cache.lookup([2, 2, 2, 9]) == ((2, 2, 2), 3)
    assert cache.lookup([3, 3, 3, 9]) == (None, 0)
    assert cache.refused == 1 and cache.nbytes == 2 * one == sum(_nbytes(v) for v in cache.entries.values())
    batch, mask = cache.batch([(1, 1, 1), None], [3, 0])
    assert batch.layers[0].keys[0].unique().tolist() == [0.0] and mask.tolist() == [[1, 1, 1], [0, 0, 0]]
    assert len(cache) == 1 and cache.nbytes == one  # a reused entry is dropped: its row's next cache supersedes it


def test_discard_drops_the_entries_of_ended_episodes_only():
    cache = PrefixCache(max_bytes=1 << 20)
    _store_rows(cache, [[1, 1, 1], [2, 2, 2]])
    cache.discard([[1, 1, 1, 5, 6]])
    assert list(cache.entries) == [(2, 2, 2)] and cache.nbytes == _nbytes(cache.entries[(2, 2, 2)])
