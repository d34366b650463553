"""The skill bank: skills, talents and their HNSW index, with talent-prior retrieval.

    score(s | x, t) = cos(e_x, e_s) + lam * w[t, s]        (lam = 0: the flat SkillBank)

Candidates for a query are HNSW's top `k * oversample` skills joined with the talent's
highest-weighted skills (so the prior can lift a skill HNSW would not return), and every
candidate is re-scored from the stored float32 embeddings. Each talent's list is kept as a
contiguous embedding block, so a query costs two small matrix-vector products on top of the
HNSW search, and the ranking is vectorised over the queries that share a talent (the
retrieval benchmark measures the overhead).

How exact it is: a skill outside the candidates has `w <= w_m` (the largest weight off the
talent's list) and, *if HNSW's top `k * oversample` is itself exact*, `cos <= c_m` (the last
HNSW candidate's cosine). So when the k-th best candidate scores `>= c_m + lam * w_m`,
nothing outside can overtake it; when it does not, that query is re-ranked over every
skill. The remaining error is HNSW's own recall at `k * oversample`, which the agreement
figure of `talentrl index` (and `bench/retrieval.py`) measures against brute force.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from talentrl_cli.errors import ArtifactError
from talentrl_cli.jsonl import iter_jsonl
from talentrl_cli.retrieval import VectorIndex, normalize_rows
from talentrl_cli.schema import Skill, Talent

INDEX_DIR, WEIGHTS_FILE, EMBEDDER_FILE = "index", "talent_weights.npy", "embedder.json"
SKILLS_FILE, TALENTS_FILE = "skills.jsonl", "talents.jsonl"
MAX_TALENT_CANDIDATES = 256  # per talent: its top-weighted skills joined to HNSW's


@dataclass(frozen=True)
class Hit:
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
        self._talent_blocks = [_talent_block(index.embeddings, row) for row in self.weights]

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
        rows_by_talent: dict[int | None, list[int]] = {}
        for row, name in enumerate(talents):
            talent = self.talent_index(name)  # validates the name even when lam = 0
            rows_by_talent.setdefault(talent if lam != 0 else None, []).append(row)
        k = min(int(k), len(self.skills))
        if k <= 0:
            return [[] for _ in queries]
        candidates, hnsw_cos = self.index.query_positions(queries, k * self.oversample)
        rankings: list[list[Hit]] = [[] for _ in queries]
        for talent, rows in rows_by_talent.items():
            for row, ranking in zip(rows, self._rank(queries[rows], candidates[rows], hnsw_cos[rows],
                                                     talent, k, lam), strict=True):
                rankings[row] = ranking
        return rankings

    def _rank(self, queries: np.ndarray, candidates: np.ndarray, hnsw_cos: np.ndarray,
              talent: int | None, k: int, lam: float) -> list[list[Hit]]:
        """Rank one talent's queries among HNSW's candidates joined with the talent's list,
        re-scored from the stored embeddings; ranking and the floor check run on the whole group."""
        width, embeddings = candidates.shape[1], self.index.embeddings
        # one matrix-vector product per query: a batched product can round differently with
        # the batch size, and retrieval must not depend on how queries were batched
        cosines = np.stack([embeddings[c] @ q for c, q in zip(candidates, queries, strict=True)])
        if talent is None:
            priors = np.zeros_like(cosines)
        else:
            block, top, top_w, _ = self._talent_blocks[talent]
            already = (top[None, :, None] == candidates[:, None, :]).any(axis=2)
            candidates = np.concatenate([candidates, np.broadcast_to(top, (len(queries), len(top)))], axis=1)
            cosines = np.concatenate([cosines, np.stack([block @ q for q in queries])], axis=1)
            priors = lam * np.concatenate([self.weights[talent][candidates[:, :width]],
                                           np.broadcast_to(top_w, already.shape)], axis=1)
        scores = cosines + priors
        if talent is not None:
            scores[:, width:][already] = -np.inf  # a skill HNSW already returned counts once
        order = np.lexsort((candidates, -scores), axis=1)[:, :k]
        rankings = self._hits(*(np.take_along_axis(a, order, axis=1) for a in (candidates, cosines, priors)))
        if talent is not None and width < len(self.skills):
            rankings = self._check_floor(rankings, queries, scores, order, hnsw_cos, talent, k, lam)
        return rankings

    def _check_floor(self, rankings: list[list[Hit]], queries: np.ndarray, scores: np.ndarray,
                     order: np.ndarray, hnsw_cos: np.ndarray, talent: int, k: int, lam: float) -> list[list[Hit]]:
        """Re-rank over every skill the queries whose k-th score an outside skill could beat:
        outside the candidates `cos <= c_m` (HNSW's last cosine) and `w <= w_m` (the largest
        weight off the talent's list); a negative prior never lifts an outside skill."""
        floor = hnsw_cos[:, -1] + max(lam * self._talent_blocks[talent][3], 0.0)
        kth = np.take_along_axis(scores, order[:, k - 1 : k], axis=1)[:, 0]
        for row in np.flatnonzero(kth < floor):
            rankings[row] = self._rank_all(queries[row], talent, k, lam)
        return rankings

    def _rank_all(self, query: np.ndarray, talent: int | None, k: int, lam: float) -> list[Hit]:
        """Brute force over every skill, without copying the embedding matrix."""
        cosines = self.index.embeddings @ query
        priors = lam * self.weights[talent] if talent is not None else np.zeros_like(cosines)
        scores = cosines + priors
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        tied = np.flatnonzero(scores >= kth)  # every skill that could be in the top k, ties included
        best = tied[np.lexsort((tied, -scores[tied]))[:k]]
        return self._hits(best[None], cosines[best][None], priors[best][None])[0]

    def _hits(self, positions: np.ndarray, cosines: np.ndarray, priors: np.ndarray) -> list[list[Hit]]:
        ids = self.index.ids
        return [[Hit(ids[p], c, w) for p, c, w in zip(*row, strict=True)]
                for row in zip(positions.tolist(), cosines.tolist(), priors.tolist(), strict=True)]

    def exact_topk(self, query_vector: np.ndarray, talent: str | None, k: int, lam: float) -> list[str]:
        """Brute-force reference of the same formula (tests and benchmarks)."""
        query = normalize_rows(np.atleast_2d(query_vector))[0]
        k = min(int(k), len(self.skills))
        return [h.skill_id for h in self._rank_all(query, self.talent_index(talent), k, lam)] if k > 0 else []


def _talent_block(embeddings: np.ndarray, row: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """A talent's nonzero-weight skills (at most MAX_TALENT_CANDIDATES, best first) as a
    contiguous embedding block with their positions and weights, and the largest weight
    left out (the bound used by the floor check)."""
    nonzero = np.flatnonzero(row > 0)
    order = nonzero[np.lexsort((nonzero, -row[nonzero]))]
    kept, rest = order[:MAX_TALENT_CANDIDATES], order[MAX_TALENT_CANDIDATES:]
    return (np.ascontiguousarray(embeddings[kept]), kept.astype(np.int64), row[kept].astype(np.float32),
            float(row[rest].max()) if len(rest) else 0.0)


def check_same_embedder(stored: dict[str, Any], current: dict[str, Any], folder: Path) -> None:
    for key in ("dim", "normalize", "files_hash", "name"):
        if key in stored and key in current and stored[key] != current[key]:
            raise ArtifactError(
                f"{folder} was built with embedder {stored.get('name')} ({key}={stored[key]!r}) "
                f"but the configured embedder has {key}={current[key]!r}",
                "use the same embedder.name_or_path as the index, or rebuild it with `talentrl index --force`",
            )
