"""The skill bank: skills, talents and their HNSW index, with talent-prior retrieval.

    score(s | x, t) = cos(e_x, e_s) + lam * w[t, s]        (lam = 0: the flat SkillBank)

Candidates for a query are HNSW's top `k * oversample` skills joined with the talent's
highest-weighted skills (so the prior can lift a skill HNSW would not return), and every
candidate is re-scored exactly from the stored float32 embeddings. The join is exact by
construction whenever the bound below holds, and falls back to scoring every skill when
it does not: a skill outside the candidates has `cos <= c_m` (the last HNSW candidate's
cosine, up to HNSW's recall) and `w <= w_m` (the largest weight not in the talent's list),
so if the k-th best candidate already scores `>= c_m + lam * w_m`, nothing outside can
overtake it.
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
        self.position = {sid: i for i, sid in enumerate(index.ids)}
        self._talent_lists = [_top_weighted(row) for row in self.weights]

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
        k = min(int(k), len(self.skills))
        if k <= 0:
            return [[] for _ in queries]
        hnsw_ids, hnsw_cos = self.index.query(queries, k * self.oversample)
        return [self._rescore(q, ids, cos, self.talent_index(t), k, lam)
                for q, ids, cos, t in zip(queries, hnsw_ids, hnsw_cos, talents, strict=True)]

    def _rescore(self, query: np.ndarray, ids: list[str], cos: np.ndarray, talent: int | None,
                 k: int, lam: float) -> list[Hit]:
        positions = [self.position[i] for i in ids]
        bound_w = 0.0
        if talent is not None and lam != 0:
            top, bound_w = self._talent_lists[talent]
            positions = list(dict.fromkeys([*positions, *top]))
        scores, cosines, priors = self._score(query, np.asarray(positions), talent, lam)
        order = np.lexsort((np.asarray(positions), -scores))[:k]
        # a negative prior only lowers scores, so it never lifts an outside skill above c_m
        floor = (float(cos[-1]) if len(cos) and len(ids) < len(self.skills) else -np.inf) + max(lam * bound_w, 0.0)
        if len(order) == k and scores[order[-1]] < floor:
            return self._rescore_all(query, talent, k, lam)
        return [Hit(self.index.ids[positions[i]], float(cosines[i]), float(priors[i])) for i in order]

    def _rescore_all(self, query: np.ndarray, talent: int | None, k: int, lam: float) -> list[Hit]:
        positions = np.arange(len(self.skills))
        scores, cosines, priors = self._score(query, positions, talent, lam)
        order = np.lexsort((positions, -scores))[:k]
        return [Hit(self.index.ids[i], float(cosines[i]), float(priors[i])) for i in order]

    def _score(self, query: np.ndarray, positions: np.ndarray, talent: int | None, lam: float):
        cosines = self.index.embeddings[positions] @ query
        priors = (lam * self.weights[talent, positions] if talent is not None
                  else np.zeros(len(positions), dtype=np.float32))
        return cosines + priors, cosines, priors

    def exact_topk(self, query_vector: np.ndarray, talent: str | None, k: int, lam: float) -> list[str]:
        """Brute-force reference of the same formula (tests and benchmarks)."""
        query = normalize_rows(np.atleast_2d(query_vector))[0]
        return [h.skill_id for h in self._rescore_all(query, self.talent_index(talent), k, lam)]


def _top_weighted(row: np.ndarray) -> tuple[list[int], float]:
    """A talent's nonzero-weight skills (at most MAX_TALENT_CANDIDATES, best first) and the
    largest weight left out (the bound used by the exactness check)."""
    nonzero = np.flatnonzero(row > 0)
    order = nonzero[np.lexsort((nonzero, -row[nonzero]))]
    kept, rest = order[:MAX_TALENT_CANDIDATES], order[MAX_TALENT_CANDIDATES:]
    return [int(i) for i in kept], float(row[rest].max()) if len(rest) else 0.0


def check_same_embedder(stored: dict[str, Any], current: dict[str, Any], folder: Path) -> None:
    for key in ("dim", "normalize", "files_hash", "name"):
        if key in stored and key in current and stored[key] != current[key]:
            raise ArtifactError(
                f"{folder} was built with embedder {stored.get('name')} ({key}={stored[key]!r}) "
                f"but the configured embedder has {key}={current[key]!r}",
                "use the same embedder.name_or_path as the index, or rebuild it with `talentrl index --force`",
            )
