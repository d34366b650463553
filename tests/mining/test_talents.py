"""Talent discovery recovers planted strategies from usage matrices."""

import numpy as np
import pytest
from omegaconf import OmegaConf

from talentrl_cli.errors import ConfigError
from talentrl_cli.mining.evaluation import agreement
from talentrl_cli.mining.talents import discover_talents


def _planted(n_per=20, seed=0):
    rng = np.random.default_rng(seed)
    blocks = [[0, 1, 2], [3, 4], [5, 6, 7]]
    rows, gold = [], []
    for g, skills in enumerate(blocks):
        for _ in range(n_per):
            row = np.zeros(9, dtype=np.float32)
            row[skills] = 1
            row[8] = 1  # a skill every trajectory uses
            row[rng.integers(0, 8)] = 1  # noise
            rows.append(row)
            gold.append(str(g))
    usage = np.stack(rows)
    embeddings = rng.normal(size=(len(rows), 8)).astype(np.float32)
    return usage, embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True), gold


def _cfg(**kw):
    return OmegaConf.create({"miner": "nmf", "n_talents": "auto", "k_range": [2, 6], **kw})


@pytest.mark.parametrize("miner", ["nmf", "kmeans"])
def test_planted_strategies_are_recovered(miner):
    usage, embeddings, gold = _planted()
    fit = discover_talents(usage, embeddings, _cfg(miner=miner, n_talents=3), seed=0)
    scores = agreement(fit.labels, gold)
    assert scores["nmi"] > 0.9 and scores["purity"] > 0.95
    assert fit.weights.shape == (3, 9) and fit.weights.max() == pytest.approx(1.0)
    assert np.all((fit.weights >= 0) & (fit.weights <= 1))
    assert np.allclose(fit.membership.sum(axis=1), 1.0)


def test_auto_k_finds_the_planted_number():
    usage, embeddings, gold = _planted()
    fit = discover_talents(usage, embeddings, _cfg(), seed=0)
    assert fit.criterion == "silhouette" and fit.weights.shape[0] == 3
    assert set(fit.k_scores) == {2, 3, 4, 5, 6}


def test_trajectories_without_skills_still_get_a_talent():
    usage, embeddings, gold = _planted()
    usage[0] = 0
    fit = discover_talents(usage, embeddings, _cfg(n_talents=3), seed=0)
    assert fit.labels[0] >= 0 and fit.membership[0].sum() == pytest.approx(1.0)


@pytest.mark.parametrize("bad", [{"n_talents": "many"}, {"n_talents": 0}, {"k_range": [5, 2]},
                                 {"miner": "spectral"}])
def test_bad_settings_fail_clearly(bad):
    usage, embeddings, _ = _planted()
    with pytest.raises(ConfigError):
        discover_talents(usage, embeddings, _cfg(**bad), seed=0)


@pytest.mark.parametrize("n_talents", ["auto", 5])
def test_fewer_skills_than_talents_caps_k(n_talents):
    """Three distinct rows over two skills: NMF cannot start more than two components."""
    usage = np.array([[1, 0], [0, 1], [1, 1], [1, 0], [0, 1], [1, 1]], dtype=np.float32)
    embeddings = np.eye(6, 4, dtype=np.float32)
    fit = discover_talents(usage, embeddings, _cfg(n_talents=n_talents, k_range=[3, 6]), seed=0)
    assert fit.weights.shape[0] == 2
