"""VectorIndex: exact and HNSW top-k, growth, save/load integrity, dimension checks."""

from __future__ import annotations

import json

import numpy as np
import pytest

from talentrl_cli.errors import ArtifactError, TalentRLError
from talentrl_cli.retrieval import VectorIndex, normalize_rows


def unit_vectors(n: int, dim: int, seed: int = 0) -> np.ndarray:
    return normalize_rows(np.random.default_rng(seed).standard_normal((n, dim)))


def names(n: int, prefix: str = "v") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


@pytest.fixture(scope="module")
def big() -> tuple[np.ndarray, VectorIndex]:
    vectors = unit_vectors(5000, 64)
    return vectors, VectorIndex.build(vectors, names(5000))


def test_small_collection_uses_exact_search():
    vectors = unit_vectors(50, 16)
    index = VectorIndex.build(vectors, names(50))
    assert not index.uses_hnsw and len(index) == 50 and index.dim == 16
    ids, scores = index.query(vectors[[3, 7]], k=4)
    assert [row[0] for row in ids] == ["v3", "v7"]
    assert scores.shape == (2, 4) and scores.dtype == np.float32
    assert np.allclose(scores[:, 0], 1.0, atol=1e-5)
    assert np.all(np.diff(scores, axis=1) <= 1e-7)  # best first


def test_scores_are_cosine_of_unnormalised_inputs():
    vectors = np.array([[3.0, 0.0], [0.0, 2.0], [1.0, 1.0]], dtype=np.float32)
    index = VectorIndex.build(vectors, ["x", "y", "xy"])
    ids, scores = index.query(np.array([10.0, 0.0]), k=3)
    assert ids[0] == ["x", "xy", "y"]
    assert np.allclose(scores[0], [1.0, np.sqrt(0.5), 0.0], atol=1e-6)


def test_k_larger_than_collection_is_clipped():
    index = VectorIndex.build(unit_vectors(3, 8), names(3))
    ids, scores = index.query(unit_vectors(2, 8, seed=1), k=10)
    assert [len(row) for row in ids] == [3, 3] and scores.shape == (2, 3)


def test_hnsw_recall_against_exact(big):
    vectors, index = big
    assert index.uses_hnsw
    queries = unit_vectors(300, 64, seed=1)
    approx, approx_scores = index.query(queries, k=10)
    exact, exact_scores = index.query_exact(queries, k=10)
    recall = np.mean([len(set(a) & set(e)) / 10 for a, e in zip(approx, exact, strict=True)])
    assert recall >= 0.95, recall
    assert np.all(approx_scores[:, 0] <= exact_scores[:, 0] + 1e-5)  # exact is the upper bound


def test_hnsw_finds_stored_vectors(big):
    vectors, index = big
    ids, scores = index.query(vectors[:100], k=1)
    assert [row[0] for row in ids] == names(100)
    assert np.allclose(scores[:, 0], 1.0, atol=1e-4)


def test_add_grows_past_threshold_into_hnsw():
    vectors = unit_vectors(1300, 32)
    index = VectorIndex.build(vectors[:900], names(900), exact_below=1000)
    assert not index.uses_hnsw
    index.add(vectors[900:], names(400, prefix="new"))
    assert index.uses_hnsw and len(index) == 1300
    index.add(unit_vectors(10, 32, seed=5), names(10, prefix="more"))  # resize path
    ids, _ = index.query(vectors[[0, 950, 1299]], k=1)
    assert [row[0] for row in ids] == ["v0", "new50", "new399"]


def test_duplicate_ids_are_rejected():
    index = VectorIndex.build(unit_vectors(4, 8), names(4))
    with pytest.raises(ValueError, match="duplicate"):
        index.add(unit_vectors(1, 8), ["v2"])
    with pytest.raises(ValueError, match="duplicate"):
        VectorIndex.build(unit_vectors(2, 8), ["a", "a"])


@pytest.mark.parametrize("n", [40, 1500])  # exact path and HNSW path
def test_save_load_round_trip(tmp_path, n):
    vectors = unit_vectors(n, 24)
    index = VectorIndex.build(vectors, names(n))
    index.extra = {"embedder": {"name": "test", "dim": 24}}
    index.save(tmp_path / "ix")
    loaded = VectorIndex.load(tmp_path / "ix", dim=24)
    assert loaded.ids == index.ids and loaded.dim == 24 and loaded.uses_hnsw == index.uses_hnsw
    assert np.array_equal(loaded.embeddings, index.embeddings)
    assert loaded.extra == index.extra and loaded.params == index.params
    queries = unit_vectors(20, 24, seed=3)
    assert loaded.query(queries, 5)[0] == index.query(queries, 5)[0]
    meta = json.loads((tmp_path / "ix" / "meta.json").read_text())
    assert set(meta["sha256"]) == (
        {"ids.json", "embeddings.npy"} | ({"index.bin"} if n > 1000 else set())
    )


@pytest.mark.parametrize("name", ["index.bin", "ids.json", "embeddings.npy"])
def test_flipped_byte_is_detected_before_loading(tmp_path, name):
    VectorIndex.build(unit_vectors(1200, 8), names(1200)).save(tmp_path)
    path = tmp_path / name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match=f"{name}: sha256 mismatch") as err:
        VectorIndex.load(tmp_path)
    assert "rebuild" in str(err.value)


def test_missing_file_and_missing_meta(tmp_path):
    VectorIndex.build(unit_vectors(5, 8), names(5)).save(tmp_path)
    (tmp_path / "ids.json").unlink()
    with pytest.raises(ArtifactError, match="ids.json: missing"):
        VectorIndex.load(tmp_path)
    with pytest.raises(ArtifactError, match="meta.json: not found"):
        VectorIndex.load(tmp_path / "nowhere")


def test_pickled_npy_is_refused_even_with_a_matching_digest(tmp_path):
    VectorIndex.build(unit_vectors(5, 8), names(5)).save(tmp_path)
    np.save(tmp_path / "embeddings.npy", np.array([{"x": 1}], dtype=object), allow_pickle=True)
    meta = json.loads((tmp_path / "meta.json").read_text())
    from talentrl_cli.retrieval import sha256_file

    meta["sha256"]["embeddings.npy"] = sha256_file(tmp_path / "embeddings.npy")
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ArtifactError, match="unreadable index data"):
        VectorIndex.load(tmp_path)


def test_dimension_mismatch(tmp_path):
    index = VectorIndex.build(unit_vectors(10, 64), names(10))
    with pytest.raises(TalentRLError, match="dim 64"):
        index.query(unit_vectors(2, 32), k=3)
    with pytest.raises(TalentRLError, match="dim 64"):
        index.add(unit_vectors(2, 32), ["a", "b"])
    index.save(tmp_path)
    with pytest.raises(ArtifactError, match="index dim is 64 but 384 was expected"):
        VectorIndex.load(tmp_path, dim=384)
