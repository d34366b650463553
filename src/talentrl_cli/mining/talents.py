"""Talent discovery (`mine.miner=nmf|kmeans`): coarse strategies above the skills.

- `nmf` (default): non-negative matrix factorisation of the tf-idf weighted trajectory x
  skill usage matrix. Talents are the components; `w[t, s]` is a component's loading on a
  skill divided by its largest loading (so in [0, 1]); a trajectory's membership is its
  normalised activation row and its label the argmax.
- `kmeans`: k-means over L2-normalised task embeddings concatenated with tf-idf skill usage;
  `w[t, s]` is the share of a cluster's trajectories that use the skill, over its maximum.

`mine.n_talents=auto` fits every K in `mine.k_range` and keeps the one with the best mean
silhouette (cosine, on the usage features; ties go to the smaller K). A trajectory that uses
no mined skill has no usage signal; it joins the talent whose members' task embeddings are
closest on average.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from talentrl_cli.errors import ConfigError
from talentrl_cli.registry import Registry

MINERS: Registry[Callable[..., Any]] = Registry("talent miner")
SILHOUETTE_SAMPLE = 2000  # silhouette is O(n^2); a fixed-seed sample keeps 16k rows cheap


@dataclass
class TalentFit:
    membership: np.ndarray  # (n_trajectories, K), rows sum to 1
    weights: np.ndarray  # (K, n_skills), in [0, 1]
    labels: np.ndarray  # (n_trajectories,)
    k_scores: dict[int, float] = field(default_factory=dict)
    criterion: str = "fixed"


def usage_features(usage: np.ndarray) -> np.ndarray:
    from sklearn.feature_extraction.text import TfidfTransformer

    return TfidfTransformer().fit_transform(usage).toarray().astype(np.float64)


@MINERS.register("nmf")
def nmf_talents(usage: np.ndarray, embeddings: np.ndarray, k: int, seed: int) -> TalentFit:
    from sklearn.decomposition import NMF

    features = usage_features(usage)
    # nndsvd (not nndsvda): sparse starts that the cd solver can move; nndsvda stalled in a
    # mixed local minimum on planted-block tests
    model = NMF(n_components=k, init="nndsvd", random_state=seed, max_iter=1000, tol=1e-5)
    activations = model.fit_transform(features)
    weights = _unit_rows(model.components_)
    return TalentFit(_normalise_rows(activations), weights, _labels(activations))


@MINERS.register("kmeans")
def kmeans_talents(usage: np.ndarray, embeddings: np.ndarray, k: int, seed: int) -> TalentFit:
    from sklearn.cluster import KMeans
    from sklearn.preprocessing import normalize

    features = np.hstack([normalize(embeddings), normalize(usage_features(usage))])
    model = KMeans(n_clusters=k, n_init=10, random_state=seed).fit(features)
    distances = model.transform(features) ** 2
    scale = max(float(np.median(distances.min(axis=1))), 1e-6)
    membership = np.exp(-(distances - distances.min(axis=1, keepdims=True)) / scale)
    shares = np.stack([usage[model.labels_ == c].mean(axis=0) if np.any(model.labels_ == c)
                       else np.zeros(usage.shape[1]) for c in range(k)])
    return TalentFit(_normalise_rows(membership), _unit_rows(shares), model.labels_.copy())


def discover_talents(usage: np.ndarray, embeddings: np.ndarray, cfg: Any, seed: int) -> TalentFit:
    """Fit the configured miner at a fixed K, or choose K by silhouette (`n_talents=auto`)."""
    miner = MINERS.get(str(cfg.miner))
    candidates = _k_candidates(cfg, usage)
    if len(candidates) == 1:
        fit = miner(usage, embeddings, candidates[0], seed)
    else:
        fit = _best_by_silhouette(miner, usage, embeddings, candidates, seed)
    fit = _drop_empty(fit)
    _assign_unused(fit, usage, embeddings)
    return fit


def _k_candidates(cfg: Any, usage: np.ndarray) -> list[int]:
    # no more talents than distinct usage rows or than skills (NMF's nndsvd start needs
    # k <= min(samples, features): a small mine of few skills hit that as a traceback)
    cap = min(len({row.tobytes() for row in (usage > 0)}), usage.shape[1])
    if str(cfg.n_talents) != "auto":
        try:
            k = int(cfg.n_talents)
        except ValueError:
            raise ConfigError(f"mine.n_talents={cfg.n_talents!r} is neither an integer nor auto") from None
        if k < 1:
            raise ConfigError("mine.n_talents must be at least 1")
        return [max(1, min(k, cap))]
    low, high = (int(x) for x in cfg.k_range)
    if low < 2 or high < low:
        raise ConfigError(f"mine.k_range={list(cfg.k_range)} must be [low, high] with 2 <= low <= high")
    return list(range(min(low, cap), min(high, cap) + 1)) if cap >= 2 else [1]


def _best_by_silhouette(miner: Callable[..., TalentFit], usage: np.ndarray, embeddings: np.ndarray,
                        candidates: list[int], seed: int) -> TalentFit:
    from sklearn.metrics import silhouette_score

    features = usage_features(usage)
    best, best_score, scores = None, -np.inf, {}
    for k in candidates:
        fit = miner(usage, embeddings, k, seed)
        n_labels = len(set(fit.labels.tolist()))
        if n_labels < 2 or n_labels >= len(features):
            scores[k] = -1.0
        else:
            scores[k] = round(float(silhouette_score(
                features, fit.labels, metric="cosine", random_state=seed,
                sample_size=min(len(features), SILHOUETTE_SAMPLE))), 6)
        if scores[k] > best_score:
            best, best_score = fit, scores[k]
    best.k_scores, best.criterion = scores, "silhouette"
    return best


def _drop_empty(fit: TalentFit) -> TalentFit:
    """Remove talents that label no trajectory, renumbering the rest by size."""
    sizes = np.bincount(fit.labels[fit.labels >= 0], minlength=fit.weights.shape[0])
    keep = [int(c) for c in sorted(np.flatnonzero(sizes), key=lambda c: (-sizes[c], c))]
    remap = {old: new for new, old in enumerate(keep)}
    labels = np.array([remap.get(int(label), -1) for label in fit.labels])
    return TalentFit(_normalise_rows(fit.membership[:, keep]), fit.weights[keep], labels,
                     fit.k_scores, fit.criterion)


def _assign_unused(fit: TalentFit, usage: np.ndarray, embeddings: np.ndarray) -> None:
    unused = np.flatnonzero((usage.sum(axis=1) == 0) | (fit.labels < 0))
    assigned = np.setdiff1d(np.arange(len(fit.labels)), unused)
    if len(unused) == 0 or len(assigned) == 0:
        fit.labels[fit.labels < 0] = 0
        return
    centroids = np.stack([embeddings[assigned[fit.labels[assigned] == c]].mean(axis=0)
                          for c in range(fit.weights.shape[0])])
    nearest = np.argmax(embeddings[unused] @ centroids.T, axis=1)
    fit.labels[unused] = nearest
    fit.membership[unused] = np.eye(centroids.shape[0])[nearest]


def _labels(activations: np.ndarray) -> np.ndarray:
    labels = np.argmax(activations, axis=1)
    labels[activations.sum(axis=1) <= 0] = -1
    return labels


def _normalise_rows(matrix: np.ndarray) -> np.ndarray:
    totals = matrix.sum(axis=1, keepdims=True)
    return np.divide(matrix, totals, out=np.zeros_like(matrix, dtype=np.float64), where=totals > 0)


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    peaks = matrix.max(axis=1, keepdims=True)
    return np.divide(matrix, peaks, out=np.zeros_like(matrix, dtype=np.float64), where=peaks > 0)
