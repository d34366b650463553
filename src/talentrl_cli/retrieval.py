"""The project's one vector index: cosine top-k over float32 embeddings (hnswlib + numpy).

Used for passage corpora (the QA search tool) and for skills (the `index` stage), so there
is exactly one hnswlib wrapper, one save format and one integrity check.

- Vectors are L2-normalised on the way in and searched by inner product, so a score is the
  cosine similarity in [-1, 1], identical for the HNSW and the exact path.
- Below `exact_below` vectors no HNSW graph is built and queries are one numpy matrix
  product: for a few hundred skills or a thousand passages that costs well under a
  millisecond per query, HNSW gains nothing there, and exact search is free and
  deterministic. HNSW takes over automatically once `add` grows the collection past it.
- Default `ef=128` (query-time beam): on 5000 random unit vectors in 64-d, the worst case
  for HNSW (no cluster structure), recall@10 against exact search is 0.90 at ef=64 and
  0.98 at ef=128, for 0.07 vs 0.12 ms per query; queries near stored items reach 1.0.
- HNSW inserts run single-threaded by default (`threads=1`): a multi-threaded build inserts
  in a racy order, so the same data could give a different graph, and different top-k,
  from run to run.
- `save(dir)` writes `index.bin` (HNSW, when built), `ids.json`, `embeddings.npy` and
  `meta.json` with the parameters and the sha256 of every file. `load(dir)` verifies each
  digest before hnswlib parses anything (a corrupt index file can crash hnswlib's C++
  reader instead of raising), and loads the `.npy` with `allow_pickle=False`.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

# The one sha256 of a file; artifacts.py imports nothing from here, so there is no cycle.
from talentrl_cli.artifacts import sha256_file
from talentrl_cli.errors import ArtifactError, TalentRLError

FORMAT_VERSION = 1
INDEX_FILE, IDS_FILE, EMB_FILE, META_FILE = "index.bin", "ids.json", "embeddings.npy", "meta.json"
_REBUILD_HINT = (
    "the file changed after it was written; rebuild the index (e.g. `talentrl index --force`)"
)


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """float32 copy with unit-length rows (zero rows stay zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class VectorIndex:
    """Cosine top-k over named vectors; HNSW above `exact_below` items, exact numpy below."""

    def __init__(
        self,
        dim: int,
        M: int = 16,
        ef_construction: int = 200,
        ef: int = 128,
        exact_below: int = 1000,
        threads: int = 1,
        seed: int = 100,
    ):
        self.dim = int(dim)
        self.params = {
            "M": M,
            "ef_construction": ef_construction,
            "ef": ef,
            "exact_below": exact_below,
            "seed": seed,
        }
        self.threads = threads
        self.ids: list[str] = []
        self.embeddings = np.zeros((0, self.dim), dtype=np.float32)
        self.extra: dict[str, Any] = {}
        self._pos: dict[str, int] = {}
        self._hnsw: Any = None

    @classmethod
    def build(cls, embeddings: np.ndarray, ids: Sequence[str], **params: Any) -> VectorIndex:
        """A new index over `embeddings` (n, dim) named by `ids` (n unique strings)."""
        embeddings = np.asarray(embeddings, dtype=np.float32)
        if embeddings.ndim != 2:
            raise ValueError(f"embeddings must be 2-D (n, dim), got shape {embeddings.shape}")
        index = cls(embeddings.shape[1], **params)
        index.add(embeddings, ids)
        return index

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def uses_hnsw(self) -> bool:
        return self._hnsw is not None

    # -- adding ---------------------------------------------------------------------------

    def add(self, embeddings: np.ndarray, ids: Sequence[str]) -> None:
        """Append vectors; ids must be new and unique."""
        vectors = normalize_rows(self._check_dim(embeddings, "added vectors"))
        ids = [str(i) for i in ids]
        if len(ids) != len(vectors):
            raise ValueError(f"{len(ids)} ids for {len(vectors)} vectors")
        self._register_ids(ids)
        start = len(self.embeddings)
        self.embeddings = np.concatenate([self.embeddings, vectors])
        if self._hnsw is not None:
            self._hnsw_add(vectors, start)
        elif len(self.ids) >= self.params["exact_below"]:
            self._hnsw_add(self.embeddings, 0)

    def _register_ids(self, ids: list[str]) -> None:
        counts = Counter(ids)
        dupes = sorted(i for i, c in counts.items() if c > 1 or i in self._pos)
        if dupes:
            raise ValueError(f"duplicate ids in the index: {dupes[:5]}")
        for i in ids:
            self._pos[i] = len(self.ids)
            self.ids.append(i)

    def _hnsw_add(self, vectors: np.ndarray, start: int) -> None:
        import hnswlib

        if self._hnsw is None:
            self._hnsw = hnswlib.Index(space="ip", dim=self.dim)
            self._hnsw.init_index(
                max_elements=max(len(self.ids), 1),
                ef_construction=self.params["ef_construction"],
                M=self.params["M"],
                random_seed=self.params["seed"],
            )
        elif self._hnsw.get_max_elements() < len(self.ids):
            self._hnsw.resize_index(max(len(self.ids), 2 * self._hnsw.get_max_elements()))
        labels = np.arange(start, start + len(vectors))
        self._hnsw.add_items(vectors, labels, num_threads=self.threads)
        self._hnsw.set_ef(self.params["ef"])

    # -- querying -------------------------------------------------------------------------

    def query(self, queries: np.ndarray, k: int) -> tuple[list[list[str]], np.ndarray]:
        """Top-k ids and cosine scores (n, k') per query, best first; k' = min(k, len)."""
        positions, scores = self.query_positions(queries, k)
        return self._names(positions), scores

    def query_positions(self, queries: np.ndarray, k: int, *,
                        normalized: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Like `query`, but row positions into `ids`/`embeddings` (n, k') instead of ids:
        callers that re-score from `embeddings` skip the id round trip (and, with
        `normalized=True`, a second normalisation of unit-length float32 queries)."""
        q = self._check_dim(queries, "query vectors")
        q = q if normalized else normalize_rows(q)
        k = min(int(k), len(self.ids))
        if self._hnsw is None or k == 0:
            return self._exact(q, k)
        self._hnsw.set_ef(max(self.params["ef"], k))
        labels, distances = self._hnsw.knn_query(q, k=k, num_threads=self.threads)
        return labels.astype(np.int64), (1.0 - distances).astype(np.float32)  # "ip" distance is 1 - dot

    def query_exact(self, queries: np.ndarray, k: int) -> tuple[list[list[str]], np.ndarray]:
        """Exact top-k by brute force (the reference for recall, and the small-index path)."""
        q = normalize_rows(self._check_dim(queries, "query vectors"))
        positions, scores = self._exact(q, min(int(k), len(self.ids)))
        return self._names(positions), scores

    def _names(self, positions: np.ndarray) -> list[list[str]]:
        ids = self.ids
        return [[ids[j] for j in row] for row in positions.tolist()]

    def _exact(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if k == 0:
            return np.zeros((len(q), 0), dtype=np.int64), np.zeros((len(q), 0), dtype=np.float32)
        positions, scores = [], []
        for start in range(0, len(q), 1024):  # bounds the (queries x items) score matrix
            sims = q[start : start + 1024] @ self.embeddings.T
            top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
            top_scores = np.take_along_axis(sims, top, axis=1)
            order = np.argsort(-top_scores, axis=1, kind="stable")
            positions.append(np.take_along_axis(top, order, axis=1))
            scores.append(np.take_along_axis(top_scores, order, axis=1))
        return np.concatenate(positions).astype(np.int64), np.concatenate(scores).astype(np.float32)

    def _check_dim(self, vectors: np.ndarray, what: str) -> np.ndarray:
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim == 1:
            vectors = vectors[None, :]
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise TalentRLError(
                f"{what} have shape {vectors.shape} but the index has dim {self.dim}",
                "embed queries and items with the same embedder (see the index's meta.json)",
            )
        return vectors

    # -- persistence ----------------------------------------------------------------------

    def save(self, directory: str | os.PathLike) -> Path:
        """Write the index files and `meta.json` (params, counts, sha256 of each file)."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        (out / IDS_FILE).write_text(json.dumps(self.ids, ensure_ascii=False), encoding="utf-8")
        np.save(out / EMB_FILE, self.embeddings, allow_pickle=False)
        files = [IDS_FILE, EMB_FILE]
        if self._hnsw is not None:
            self._hnsw.save_index(str(out / INDEX_FILE))
            files.append(INDEX_FILE)
        meta = {
            "format_version": FORMAT_VERSION,
            "space": "cosine",
            "dim": self.dim,
            "count": len(self.ids),
            "params": self.params,
            "extra": self.extra,
            "sha256": {name: sha256_file(out / name) for name in files},
        }
        (out / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True), encoding="utf-8")
        return out

    @classmethod
    def load(cls, directory: str | os.PathLike, dim: int | None = None) -> VectorIndex:
        """Read an index written by `save`, verifying every file before parsing it."""
        folder = Path(directory)
        meta = _read_meta(folder)
        for name, digest in meta["sha256"].items():
            _verify(folder / name, digest)
        if dim is not None and int(dim) != meta["dim"]:
            raise ArtifactError(
                f"{folder / META_FILE}: index dim is {meta['dim']} but {dim} was expected",
                "the index was built with a different embedder; rebuild it with the current one",
            )
        index = cls(meta["dim"], **meta["params"])
        index.extra = meta.get("extra", {})
        index._load_arrays(folder, meta)
        if INDEX_FILE in meta["sha256"]:
            index._load_hnsw(folder / INDEX_FILE)
        return index

    def _load_arrays(self, folder: Path, meta: dict) -> None:
        try:
            ids = json.loads((folder / IDS_FILE).read_text(encoding="utf-8"))
            emb = np.load(folder / EMB_FILE, allow_pickle=False)
        except (ValueError, OSError) as err:  # bad JSON, or a pickled/malformed .npy
            raise ArtifactError(f"{folder}: unreadable index data ({err})", _REBUILD_HINT) from None
        if (
            emb.dtype != np.float32
            or emb.shape != (meta["count"], self.dim)
            or len(ids) != meta["count"]
        ):
            raise ArtifactError(
                f"{folder}: embeddings {emb.shape} {emb.dtype} / {len(ids)} ids do not match "
                f"meta.json (count {meta['count']}, dim {self.dim}, float32)",
                _REBUILD_HINT,
            )
        self.ids, self.embeddings = [str(i) for i in ids], emb
        self._pos = {i: n for n, i in enumerate(self.ids)}

    def _load_hnsw(self, path: Path) -> None:
        import hnswlib

        self._hnsw = hnswlib.Index(space="ip", dim=self.dim)
        self._hnsw.load_index(str(path), max_elements=len(self.ids))
        if self._hnsw.get_current_count() != len(self.ids):
            raise ArtifactError(
                f"{path}: holds {self._hnsw.get_current_count()} vectors, expected {len(self.ids)}",
                _REBUILD_HINT,
            )
        self._hnsw.set_ef(self.params["ef"])


def _read_meta(folder: Path) -> dict:
    path = folder / META_FILE
    if not path.is_file():
        raise ArtifactError(
            f"{path}: not found; {folder} is not a saved vector index",
            "point to a folder written by VectorIndex.save / `talentrl index`",
        )
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
        int(meta["dim"]), int(meta["count"]), dict(meta["params"]), dict(meta["sha256"])
    except (ValueError, KeyError, TypeError) as err:
        raise ArtifactError(f"{path}: malformed index metadata ({err})", _REBUILD_HINT) from None
    if meta.get("format_version") != FORMAT_VERSION:
        raise ArtifactError(
            f"{path}: unsupported index format {meta.get('format_version')!r}",
            "rebuild the index with this version of talentrl",
        )
    return meta


def _verify(path: Path, expected: str) -> None:
    if not path.is_file():
        raise ArtifactError(f"{path}: missing (listed in meta.json)", _REBUILD_HINT)
    actual = sha256_file(path)
    if actual != expected:
        raise ArtifactError(
            f"{path}: sha256 mismatch (expected {expected[:12]}..., got {actual[:12]}...)",
            _REBUILD_HINT,
        )
