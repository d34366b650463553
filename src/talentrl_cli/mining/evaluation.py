"""How well talents recover gold strategy labels: NMI and purity (scikit-learn)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def agreement(labels: Sequence[int], gold: Sequence[str | None]) -> dict[str, float] | None:
    """NMI and purity over the trajectories that have a gold label; None when none do."""
    from sklearn.metrics import normalized_mutual_info_score
    from sklearn.metrics.cluster import contingency_matrix

    pairs = [(int(label), g) for label, g in zip(labels, gold, strict=True) if g is not None]
    if len(pairs) < 2:
        return None
    predicted, truth = zip(*pairs, strict=True)
    table = contingency_matrix(truth, predicted)
    return {
        "nmi": round(float(normalized_mutual_info_score(truth, predicted)), 4),
        "purity": round(float(np.sum(np.amax(table, axis=0)) / np.sum(table)), 4),
        "n_gold": len(pairs),
        "n_gold_classes": len(set(truth)),
    }
