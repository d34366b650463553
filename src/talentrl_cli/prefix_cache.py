"""Reuse of each episode's KV cache from one turn to the next, for `HFBackend.generate`.

A multi-turn rollout resends an episode's whole history every turn (prompt, its earlier
completions, the observations). Re-encoding it each time makes prefill the dominant cost on a
CPU: with SmolLM2 and ~600-token execution prompts, 4 turns re-encode ~2.5k tokens per
episode where ~1k are new. vLLM reuses prefixes itself; transformers reuses a cache only for
one sequence it is handed, and the rows of our batches carry histories of different lengths.
So this module keeps, per finished row, its keys and values *without padding*, keyed by the
token ids they encode, and rebuilds a left-padded batch cache when a later prompt extends a
stored one. Inside that cache a row may have a gap (its shorter cached part, then padding up
to the longest, then its new tokens): the attention mask marks the gap 0 and positions come
from the mask's cumulative sum, so the gap is invisible to the row's real tokens.

Memory is bounded by `max_bytes`, by default a share of the memory free when the backend is
built (`default_budget`). An entry is dropped once a prompt has reused it, because the row's
next cache supersedes it, and when its episode ends (`discard`). An entry that does not fit is
not stored, rather than evicting an older one: the engine runs every episode's turn in the
order it stored them, so the oldest entry is the next one asked for. Least-recently-used
eviction under that cyclic pattern evicts exactly the entries needed next and every row
misses: 120 SmolLM2 WorldQA episodes (~62k tokens, ~2.9 GB of fp32 keys and values against
the former fixed 2 GiB) re-encoded their whole history each turn and took 5.6 s of
generation per question, against 2.9 s for 48 episodes that fit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Layers = list[tuple[Any, Any]]  # per layer (keys, values), each [heads, tokens, head_dim]


def default_budget(device: Any = "cpu", share: float = 0.4) -> int:
    """`share` of the memory free now on `device` (host RAM, or the GPU's free memory)."""
    import torch

    if str(device).startswith("cuda") and torch.cuda.is_available():
        return int(share * torch.cuda.mem_get_info(torch.device(device))[0])
    import psutil

    return int(share * psutil.virtual_memory().available)


class PrefixCache:
    def __init__(self, max_bytes: int):
        self.max_bytes = int(max_bytes)
        self.entries: dict[tuple[int, ...], Layers] = {}  # in the order stored
        self.hits = self.reused_tokens = self.refused = self.nbytes = 0

    def __len__(self) -> int:
        return len(self.entries)

    def clear(self) -> None:
        self.entries.clear()
        self.nbytes = 0

    def discard(self, histories: Sequence[Sequence[int]]) -> None:
        """Drop the entries that are prefixes of `histories` (episodes that ended)."""
        ended = [tuple(h) for h in histories]
        for key in [k for k in self.entries if any(h[: len(k)] == k for h in ended)]:
            self._drop(key)

    def _drop(self, key: tuple[int, ...]) -> None:
        self.nbytes -= _nbytes(self.entries.pop(key))

    def lookup(self, prompt: Sequence[int]) -> tuple[tuple[int, ...] | None, int]:
        """The longest stored key that is a prefix of `prompt`, and how many of its tokens to
        reuse (at most len(prompt) - 1: the last prompt token must run to give logits)."""
        best: tuple[int, ...] | None = None
        for key in self.entries:
            if len(key) <= len(prompt) and (best is None or len(key) > len(best)) and tuple(prompt[: len(key)]) == key:
                best = key
        return best, min(len(best), len(prompt) - 1) if best is not None else 0

    def batch(self, keys: Sequence[tuple[int, ...] | None], lengths: Sequence[int]) -> tuple[Any, Any]:
        """(DynamicCache, mask) for rows reusing `lengths[i]` tokens of entry `keys[i]`,
        left-padded to the longest; rows without an entry are all padding."""
        import torch
        from transformers import DynamicCache

        width = max(lengths)
        template = next(self.entries[k] for k in keys if k is not None)
        layers = []
        for layer, (k0, v0) in enumerate(template):
            keys_out = k0.new_zeros((len(keys), k0.shape[0], width, k0.shape[2]))
            values_out = v0.new_zeros((len(keys), v0.shape[0], width, v0.shape[2]))
            for row, (key, n) in enumerate(zip(keys, lengths, strict=True)):
                if key is not None and n:
                    k, v = self.entries[key][layer]
                    keys_out[row, :, width - n:], values_out[row, :, width - n:] = k[:, :n], v[:, :n]
            layers.append((keys_out, values_out))
        mask = torch.tensor([[0] * (width - n) + [1] * n for n in lengths], dtype=torch.long)
        for key in {k for k in keys if k is not None}:
            self.hits += 1
            self._drop(key)
        self.reused_tokens += sum(lengths)
        return DynamicCache(ddp_cache_data=layers), mask

    def store(self, cache: Any, mask: Any, rows: Mapping[int, tuple[Sequence[int], int]]) -> None:
        """For each batch row i in `rows`, keep its first `rows[i][1]` real positions of
        `cache` under the key `rows[i][0]`; the batch's other rows are left out."""
        for i, (tokens, n) in rows.items():
            real = mask[i].nonzero().squeeze(-1)[:n]
            if len(real) != n or n == 0:
                continue
            key = tuple(tokens[:n])
            if key in self.entries:
                self._drop(key)
            layers = [(layer.keys[i][:, real].clone(), layer.values[i][:, real].clone()) for layer in cache.layers]
            if self.nbytes + _nbytes(layers) > self.max_bytes:
                self.refused += 1  # see the module docstring: the older entries are needed first
                continue
            self.entries[key] = layers
            self.nbytes += _nbytes(layers)


def _nbytes(layers: Layers) -> int:
    return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in layers)


def supported(model: Any) -> bool:
    """Plain full-attention decoders only: a sliding-window or hybrid cache needs its own layers."""
    config = model.config.get_text_config(decoder=True) if hasattr(model.config, "get_text_config") else model.config
    layer_types = getattr(config, "layer_types", None) or ["full_attention"]
    return all(t == "full_attention" for t in layer_types) and not getattr(config, "use_sliding_window", False)
