"""The controlled routing problem's exact gradient and the estimate built from a step's rollouts."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from talentrl_cli.rl.controlled import coin, estimated_gradient, exact_gradient, raw_credit


def test_exact_gradient_is_the_softmax_gradient_of_the_expected_reward():
    task = SimpleNamespace(id="x")
    dist = {"a": 0.5, "b": 0.3, "c": 0.2}
    q = {"x": {"a": 0.9, "b": 0.5, "c": 0.1}}
    (g,) = exact_gradient([task], [dist], q, noise=0.5)
    np.testing.assert_allclose(g, [0.07, -0.018, -0.052], atol=1e-12)  # pi * (r - b), r = 0.5 q, b = 0.31
    z, r = np.log([0.5, 0.3, 0.2]), 0.5 * np.array([0.9, 0.5, 0.1])

    def value(logits):
        p = np.exp(logits) / np.exp(logits).sum()
        return p @ r

    numeric = [(value(z + 1e-6 * e) - value(z - 1e-6 * e)) / 2e-6 for e in np.eye(3)]
    np.testing.assert_allclose(g, numeric, atol=1e-8)


def test_the_estimate_sums_each_rollouts_credit_times_its_score_function():
    ep = lambda talent, reward: SimpleNamespace(talent=talent, reward=reward)  # noqa: E731
    out = SimpleNamespace(dists=[{"a": 0.5, "b": 0.5}], group=[0, 0], probs=[0.5, 0.5],
                          episodes=[ep("a", 1.0), ep("b", 0.0)], interventions=[[ep("b", 0.0)], [ep("a", 1.0)]])
    matched = raw_credit(out, "matched", group_size=2)
    np.testing.assert_allclose(matched, [0.5, -0.5])  # (r_i - r'_i) / G
    (g,) = estimated_gradient(out, matched)
    np.testing.assert_allclose(g, [0.5, -0.5])  # 0.5 (1 - .5, -.5) - 0.5 (-.5, 1 - .5)
    np.testing.assert_allclose(raw_credit(out, "terminal", group_size=2), [0.5, -0.5])  # (r - mean) / (G - 1)
    np.testing.assert_allclose(raw_credit(out, "exhaustive", group_size=2), [0.25, -0.25])  # pi (r - b)


def test_the_coin_fails_with_the_noise_rate_and_repeats_per_rollout():
    heads = [coin(3, "x", i, 0.25) for i in range(4000)]
    assert np.mean(heads) == pytest.approx(0.75, abs=0.03)
    assert coin(3, "x", 7, 0.25) == coin(3, "x", 7, 0.25) and coin(3, "x", 7, 0.0) == 1.0
