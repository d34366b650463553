"""Frequent procedures: contiguous runs of action templates shared by many trajectories.

A procedure's support is the number of distinct successful trajectories containing it.
Patterns are contiguous (a procedure is a run of consecutive steps) and *closed*: a pattern
is dropped when a longer pattern containing it has the same support, since it adds no
information. This is the classic closed contiguous-pattern miner written out directly:
libraries such as PrefixSpan mine gapped subsequences, which would merge unrelated steps.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

Pattern = tuple[str, ...]


def count_patterns(sequences: Sequence[Sequence[str]], max_len: int) -> Counter[Pattern]:
    """Support of every contiguous pattern up to `max_len` (each sequence counts once)."""
    support: Counter[Pattern] = Counter()
    for seq in sequences:
        found = {tuple(seq[i:i + n]) for n in range(1, max_len + 1) for i in range(len(seq) - n + 1)}
        support.update(found)
    return support


def closed_frequent(support: Counter[Pattern], min_support: int, min_len: int = 1) -> dict[Pattern, int]:
    """Frequent patterns that no longer frequent pattern with equal support contains."""
    frequent = {p: s for p, s in support.items() if s >= min_support}
    dominated: set[Pattern] = set()
    for pattern, count in frequent.items():
        for sub in _proper_subpatterns(pattern):
            if frequent.get(sub) == count:
                dominated.add(sub)
    return {p: s for p, s in frequent.items() if p not in dominated and len(p) >= min_len}


def _proper_subpatterns(pattern: Pattern) -> set[Pattern]:
    n = len(pattern)
    return {pattern[i:j] for i in range(n) for j in range(i + 1, n + 1) if j - i < n}


def contains(sequence: Sequence[str], pattern: Pattern) -> bool:
    n = len(pattern)
    return any(tuple(sequence[i:i + n]) == pattern for i in range(len(sequence) - n + 1))


def occurrences(sequences: Sequence[Sequence[str]], patterns: Sequence[Pattern]) -> list[list[int]]:
    """For each pattern, the indices of the sequences that contain it."""
    index: dict[Pattern, list[int]] = {p: [] for p in patterns}
    lengths = sorted({len(p) for p in patterns})
    for row, seq in enumerate(sequences):
        grams = {tuple(seq[i:i + n]) for n in lengths for i in range(len(seq) - n + 1)}
        for gram in grams & index.keys():
            index[gram].append(row)
    return [index[p] for p in patterns]
