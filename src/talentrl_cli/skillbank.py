"""The skill bank: skills, talents and their HNSW index, with talent-prior retrieval.

    score(s | x, t) = cos(e_x, e_s) + lam * w[t, s]        (lam = 0: the flat SkillBank)

Candidates for a query are HNSW's top `k * oversample` skills (with the cosines HNSW
computed for them) joined with those of the talent's weighted skills that could still reach
the top k, so the prior can lift a skill HNSW would not return. Every candidate is scored
exactly, and the ranking runs per query over a few dozen entries, which keeps a single
query cheap and the result independent of how queries were batched (`bench/retrieval.py`
measures the cost over plain HNSW).

Which weighted skills could still reach the top k (lam > 0): let `kth` be the k-th best
score among HNSW's candidates and `c_m` the last candidate's cosine. *If HNSW's top
`k * oversample` is exact*, a skill off that list has `cos <= c_m`, so it can reach the top
k only if `c_m + lam * w[t, s] >= kth`: a prefix of the talent's skills sorted by weight
(250-280 rows per query for the 300-skill talents of `bench/retrieval.py`). A skill of
weight 0 off the list scores at most `c_m <= kth` and is never scored.

With lam < 0 the prior only lowers scores, so the talent's list adds nothing; a query whose
k-th candidate falls below `c_m` is ranked over every skill (`brute_force_queries` counts
them). The remaining error is HNSW's own recall at `k * oversample`, which the agreement
figure of `talentrl index` (and `bench/retrieval.py`) measures against brute force.
"""

from __future__ import annotations

import bisect
import json
import operator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from talentrl_cli.errors import ArtifactError
from talentrl_cli.jsonl import iter_jsonl
from talentrl_cli.retrieval import VectorIndex, normalize_rows
from talentrl_cli.schema import Skill, Talent

INDEX_DIR, WEIGHTS_FILE, EMBEDDER_FILE = "index", "talent_weights.npy", "embedder.json"
SKILLS_FILE, TALENTS_FILE = "skills.jsonl", "talents.jsonl"
# Per talent, the embeddings of its highest-weighted skills are copied into one contiguous
# block (one matrix-vector product); rows past it are gathered only when a query reaches them.
TALENT_BLOCK_ROWS = 512
WEIGHT_SLACK = 1e-6  # HNSW's and numpy's float32 cosines of one pair differ by ~1e-7


class Hit(NamedTuple):
    skill_id: str
    cos: float
    prior: float  # lam * w[t, s]

    @property
    def score(self) -> float:
        return self.cos + self.prior


class SkillBank:
    def __init__(self, skills: list[Skill], talents: list[Talent], index: VectorIndex,
                 weights: np.ndarray, embedder_identity: dict[str, Any], oversample: int = 4):
        self.skills, self.talents, self.index = skills, talents, index
        self.weights = weights.astype(np.float32)  # (K, S) in index order
        self.embedder_identity = embedder_identity
        self.oversample = oversample
        self.talent_pos = {t.name: i for i, t in enumerate(talents)}
        self.skill_by_id = {s.id: s for s in skills}
        self._talent_lists = [TalentList.of(index.embeddings, row) for row in self.weights]
        self.brute_force_queries = 0  # queries ranked over every skill (lam < 0 only)

    # -- building and loading --------------------------------------------------------------

    @classmethod
    def build(cls, skills: list[Skill], talents: list[Talent], embeddings: np.ndarray,
              embedder_identity: dict[str, Any], index_params: dict[str, Any], oversample: int = 4) -> SkillBank:
        ids = [s.id for s in skills]
        index = VectorIndex.build(embeddings, ids, **index_params)
        position = {sid: i for i, sid in enumerate(ids)}
        weights = np.zeros((len(talents), len(ids)), dtype=np.float32)
        for t, talent in enumerate(talents):
            for sid, w in talent.skills.items():
                if sid in position:
                    weights[t, position[sid]] = w
        return cls(skills, talents, index, weights, embedder_identity, oversample)

    def save(self, folder: Path) -> None:
        from talentrl_cli.jsonl import write_jsonl

        self.index.save(folder / INDEX_DIR)
        np.save(folder / WEIGHTS_FILE, self.weights, allow_pickle=False)
        (folder / EMBEDDER_FILE).write_text(json.dumps(self.embedder_identity, indent=2, sort_keys=True))
        write_jsonl(folder / SKILLS_FILE, self.skills)
        write_jsonl(folder / TALENTS_FILE, self.talents)

    @classmethod
    def load(cls, folder: Path, embedder_identity: dict[str, Any] | None = None, oversample: int = 4) -> SkillBank:
        """Load an index artifact's folder; refuse a different embedder than the one it was built with."""
        stored = json.loads((folder / EMBEDDER_FILE).read_text())
        if embedder_identity is not None:
            check_same_embedder(stored, embedder_identity, folder)
        index = VectorIndex.load(folder / INDEX_DIR, dim=stored["dim"])
        skills = list(iter_jsonl(folder / SKILLS_FILE, Skill))
        talents = list(iter_jsonl(folder / TALENTS_FILE, Talent))
        weights = np.load(folder / WEIGHTS_FILE, allow_pickle=False)
        if weights.shape != (len(talents), len(index.ids)) or index.ids != [s.id for s in skills]:
            raise ArtifactError(f"{folder}: talent weights, skills and index disagree",
                                "rebuild it with `talentrl index --force`")
        return cls(skills, talents, index, weights, stored, oversample)

    # -- retrieval -------------------------------------------------------------------------

    def talent_index(self, talent: str | None) -> int | None:
        if talent is None:
            return None
        if talent not in self.talent_pos:
            from talentrl_cli.errors import ConfigError

            raise ConfigError(f"unknown talent {talent!r}", f"talents: {', '.join(self.talent_pos)}")
        return self.talent_pos[talent]

    def retrieve(self, query_vectors: np.ndarray, talents: list[str | None] | str | None = None,
                 k: int = 5, lam: float = 0.3) -> list[list[Hit]]:
        """Top-k skills per query by `cos + lam * w[t, s]`; `talents` is one per query (or one for all)."""
        queries = normalize_rows(np.atleast_2d(np.asarray(query_vectors, dtype=np.float32)))
        if talents is None or isinstance(talents, str):
            talents = [talents] * len(queries)
        if len(talents) != len(queries):
            raise ValueError(f"{len(talents)} talents for {len(queries)} queries")
        rows = [self.talent_index(name) for name in talents]  # validates names even when lam = 0
        k = min(int(k), len(self.skills))
        if k <= 0:
            return [[] for _ in queries]
        candidates, hnsw_cos = self.index.query_positions(queries, k * self.oversample, normalized=True)
        # One query at a time: HNSW dominates the cost, and a per-query path keeps the
        # re-scoring lean at batch 1 and the result independent of how queries are batched.
        return [self._rank(q, c, cos, None if lam == 0 else t, k, lam)
                for q, c, cos, t in zip(queries, candidates, hnsw_cos, rows, strict=True)]

    def _rank(self, query: np.ndarray, candidates: np.ndarray, hnsw_cos: np.ndarray,
              talent: int | None, k: int, lam: float) -> list[Hit]:
        """Rank HNSW's candidates joined with the talent's listed skills that could still make
        the top k. Plain Python over a few dozen entries and as few array operations as it
        takes: right after an HNSW search the caches are cold and each one shows in the
        latency (bench/retrieval.py times it against plain HNSW)."""
        positions, cosines = candidates.tolist(), hnsw_cos.tolist()
        if talent is None:
            return _best_distinct(self.index.ids, positions, cosines, [0.0] * len(positions), k)
        priors = [lam * w for w in self.weights[talent][candidates].tolist()]
        kth = sorted([c + p for c, p in zip(cosines, priors, strict=True)])[-k]
        everything = len(positions) == len(self.skills)
        if lam > 0 and not everything:
            # Off HNSW's list `cos <= cosines[-1]`, so only a weight with
            # cosines[-1] + lam * w >= kth can lift a skill into the top k.
            more = self._talent_lists[talent].best(query, self.index.embeddings, lam, k,
                                                   (kth - cosines[-1]) / lam - WEIGHT_SLACK)
            positions, cosines, priors = positions + more[0], cosines + more[1], priors + more[2]
        elif lam < 0 and not everything and kth < cosines[-1]:
            # A negative prior only lowers scores; a skill off HNSW's list scores at most
            # cosines[-1] and now beats the k-th candidate, so nothing short of every skill will do.
            self.brute_force_queries += 1
            return self._rank_all(query, talent, k, lam)
        return _best_distinct(self.index.ids, positions, cosines, priors, k)

    def _rank_all(self, query: np.ndarray, talent: int | None, k: int, lam: float) -> list[Hit]:
        """Brute force over every skill, without copying the embedding matrix; scores are
        float64 sums of float32 cosines and priors, as in `_rank`."""
        cosines = self.index.embeddings @ query
        priors = lam * self.weights[talent] if talent is not None else np.zeros_like(cosines)
        scores = np.add(cosines, priors, dtype=np.float64)
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        tied = np.flatnonzero(scores >= kth)  # every skill that could be in the top k, ties included
        return _best_distinct(self.index.ids, tied.tolist(), cosines[tied].tolist(), priors[tied].tolist(), k)

    def exact_topk(self, query_vector: np.ndarray, talent: str | None, k: int, lam: float) -> list[str]:
        """Brute-force reference of the same formula (tests and benchmarks)."""
        query = normalize_rows(np.atleast_2d(query_vector))[0]
        k = min(int(k), len(self.skills))
        return [h.skill_id for h in self._rank_all(query, self.talent_index(talent), k, lam)] if k > 0 else []


def _best_distinct(ids: list[str], positions: list[int], cosines: list[float], priors: list[float],
                   k: int) -> list[Hit]:
    """The k best of a few dozen entries by (score, then position), each skill once: one
    that both HNSW and the talent's list returned counts at its better score."""
    ranked = sorted([(-(c + p), pos, c, p) for pos, c, p in zip(positions, cosines, priors, strict=True)])
    seen: set[int] = set()
    best = []
    for _, position, cos, prior in ranked:
        if position not in seen:
            seen.add(position)
            best.append(Hit(ids[position], cos, prior))
            if len(best) == k:
                break
    return best


@dataclass(frozen=True)
class TalentList:
    """A talent's nonzero-weight skills, highest weight first (ties: lower position first).
    The first TALENT_BLOCK_ROWS are copied as [embedding, weight] rows into one contiguous
    block, so one matrix-vector product with [query, lam] gives their scores; the rest, which
    only a query with a low bar reaches, are gathered from the index's embeddings when needed.
    The block's positions and weights are kept as Python lists too: `bisect` and per-hit
    lookups then cost no numpy call, which right after an HNSW search costs tens of
    microseconds each."""

    positions: np.ndarray  # (m,) int64
    weights: np.ndarray  # (m,) float32, non-increasing
    block: np.ndarray  # (min(m, TALENT_BLOCK_ROWS), dim + 1) float32
    head_positions: list[int]  # the block's rows
    head_weights: list[float]  # non-increasing

    @classmethod
    def of(cls, embeddings: np.ndarray, row: np.ndarray) -> TalentList:
        nonzero = np.flatnonzero(row > 0)
        order = nonzero[np.lexsort((nonzero, -row[nonzero]))]
        weights = row[order].astype(np.float32)
        head = slice(0, TALENT_BLOCK_ROWS)
        block = np.hstack((embeddings[order[head]], weights[head, None]), dtype=np.float32)
        return cls(order, weights, np.ascontiguousarray(block), order[head].tolist(),
                   weights[head].tolist())

    def count_at_least(self, min_weight: float) -> int:
        m = bisect.bisect_right(self.head_weights, -min_weight, key=operator.neg)
        if m == len(self.head_weights) < len(self.weights):
            m = int(np.searchsorted(-self.weights, -min_weight, side="right"))
        return m

    def best(self, query: np.ndarray, embeddings: np.ndarray, lam: float, k: int,
             min_weight: float) -> tuple[list[int], list[float], list[float]]:
        """Positions, cosines and priors of the listed skills of weight >= min_weight that
        score in the top k among them (ties kept)."""
        m = self.count_at_least(min_weight)
        if m == 0:
            return [], [], []
        with_lam = np.empty(len(query) + 1, dtype=np.float32)
        with_lam[:-1], with_lam[-1] = query, lam
        totals = self.block[:m] @ with_lam  # cos + lam * w
        if m > len(self.block):
            rest = slice(len(self.block), m)
            gathered = embeddings[self.positions[rest]] @ query + lam * self.weights[rest]
            totals = np.concatenate((totals, gathered))
        rows, scores = _top_with_ties(totals, k)
        if m <= len(self.block):
            positions = [self.head_positions[i] for i in rows]
            weights = [self.head_weights[i] for i in rows]
        else:
            positions, weights = self.positions[rows].tolist(), self.weights[rows].tolist()
        priors = [lam * w for w in weights]
        return positions, [s - p for s, p in zip(scores, priors, strict=True)], priors


def _top_with_ties(scores: np.ndarray, k: int) -> tuple[list[int], list[float]]:
    """Rows and scores of the k best, plus every row tied with the k-th. One argpartition for
    the k + 1 best: only when the (k+1)-th ties the k-th is a second pass needed."""
    if len(scores) <= k + 1:
        return list(range(len(scores))), scores.tolist()
    top = np.argpartition(scores, len(scores) - k - 1)[len(scores) - k - 1 :]
    values = scores[top].tolist()  # values[0] is the (k+1)-th best, the rest are >= it
    if values[0] < min(values[1:]):
        return top.tolist(), values
    tied = np.flatnonzero(scores >= values[0])
    return tied.tolist(), scores[tied].tolist()


def check_same_embedder(stored: dict[str, Any], current: dict[str, Any], folder: Path) -> None:
    for key in ("dim", "normalize", "files_hash", "name"):
        if key in stored and key in current and stored[key] != current[key]:
            raise ArtifactError(
                f"{folder} was built with embedder {stored.get('name')} ({key}={stored[key]!r}) "
                f"but the configured embedder has {key}={current[key]!r}",
                "use the same embedder.name_or_path as the index, or rebuild it with `talentrl index --force`",
            )
