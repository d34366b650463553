"""The advantage estimators: exact numbers on hand-computed groups, and the routing
gradient's expectation by exact enumeration (no model)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from talentrl_cli.rl.advantages import (
    EXECUTION,
    ROUTING,
    Credit,
    informative_groups,
    zero_advantage_share,
)

PI = np.array([0.5, 0.3, 0.2])      # pi_route(t | x) over 3 talents
Q = np.array([0.9, 0.4, 0.1])       # success rate of each talent on the task
Q_FLAT = 0.3                        # ... and of the talent-free flat context
P_E = 0.8                           # execution noise: the rollout succeeds with this chance
NOISE = ((1.0, P_E), (0.0, 1 - P_E))


def score_grad(t: int) -> np.ndarray:
    """d log pi(t) / d logits of a softmax router."""
    return np.eye(len(PI))[t] - PI


def test_grpo_is_the_group_z_score_with_the_sample_std():
    a = EXECUTION.get("grpo")(Credit(rewards=[1, 0, 0, 0, 1, 1], group=[0, 0, 0, 0, 1, 1]))
    np.testing.assert_allclose(a, [1.5, -0.5, -0.5, -0.5, 0, 0], atol=1e-5)  # mean .25, std .5


def test_matched_credit_is_the_intervention_contrast_over_the_batch_std():
    credit = Credit(rewards=[1, 0, 1, 0], group=[0, 0, 1, 1], baseline=[[0, 1], [0, 0], [1, 1], [1, 0]])
    raw = ROUTING.get("matched")(credit, scale=False)
    np.testing.assert_allclose(raw, [0.5, 0.0, 0.0, -0.5])
    np.testing.assert_allclose(ROUTING.get("matched")(credit, scale_by="contrast"), [2 ** 0.5, 0, 0, -(2 ** 0.5)],
                               atol=1e-5)
    np.testing.assert_allclose(ROUTING.get("matched")(credit), [1.0, 0, 0, -1.0], atol=1e-5)  # reward std 0.5


def test_reward_scale_keeps_a_lone_contrast_at_its_size_and_contrast_scale_inflates_it():
    rewards = [1.0] + [0.0] * 15
    credit = Credit(rewards=rewards, group=[0] * 16, baseline=[[0.0]] + [[r] for r in rewards[1:]])
    contrast = ROUTING.get("matched")(credit, scale_by="contrast")
    assert contrast[0] == pytest.approx(16 / 15 ** 0.5, rel=1e-4)  # 1 / std([1, 0 x 15]) = 4.13
    assert ROUTING.get("matched")(credit)[0] == pytest.approx(1 / np.std(rewards), rel=1e-4)
    credit = Credit(rewards=[0.0, 0.0], group=[0, 0], baseline=[[0.0], [0.0]])
    np.testing.assert_allclose(ROUTING.get("matched")(credit), [0.0, 0.0])  # no spread: nothing to divide


def test_matched_credit_averages_only_the_interventions_that_ran():
    credit = Credit(rewards=[1, 1], group=[0, 0], baseline=[[1, 9], [0, 0]], baseline_mask=[[1, 0], [0, 0]])
    np.testing.assert_allclose(ROUTING.get("matched")(credit, scale=False), [0.0, 0.0])
    credit = Credit(rewards=[1], group=[0], baseline=[[0.25, 9]], baseline_mask=[[1, 0]])
    np.testing.assert_allclose(ROUTING.get("matched")(credit, scale=False), [0.75])


def test_exhaustive_weights_are_pi_times_the_reward_minus_its_expectation():
    credit = Credit(rewards=[1, 0, 1], group=[0, 0, 0], probs=PI)
    raw = ROUTING.get("exhaustive")(credit, scale=False)
    np.testing.assert_allclose(raw, [0.15, -0.21, 0.06])  # b = 0.7
    np.testing.assert_allclose(ROUTING.get("exhaustive")(credit), raw / raw.std(), atol=1e-5)


def test_terminal_credit_gives_the_talent_tokens_the_execution_advantage():
    credit = Credit(rewards=[1, 0], group=[0, 0])
    np.testing.assert_allclose(ROUTING.get("terminal")(credit, np.array([0.7, -0.7])), [0.7, -0.7])
    np.testing.assert_allclose(ROUTING.get("terminal")(credit), EXECUTION.get("grpo")(credit))


def test_groups_of_equal_rewards_give_zero_and_are_counted():
    credit = Credit(rewards=[1, 1, 0, 1], group=[0, 0, 1, 1])
    np.testing.assert_allclose(EXECUTION.get("grpo")(credit)[:2], [0, 0])
    assert zero_advantage_share(credit) == 0.5


def test_informative_groups_keep_any_execution_or_routing_signal_in_first_seen_order():
    group = np.array([3, 3, 1, 1, 7, 7, 5, 5])
    a_exec = np.array([0.0, 0.0, 0.7, -0.7, 0.0, 0.0, 0.0, 0.0])
    a_route = np.array([0.0, 0.0, 0.0, 0.0, 0.0, -0.4, 0.0, 0.0])  # group 7: a routing contrast only
    assert informative_groups(group, a_exec, a_route) == [1, 7]
    assert informative_groups(group, np.zeros(8), np.zeros(8)) == []


def test_an_unknown_estimator_is_a_config_error():
    from talentrl_cli.errors import ConfigError

    with pytest.raises(ConfigError, match="did you mean matched"):
        ROUTING.get("matchd")


# -- unbiasedness by enumeration ----------------------------------------------------------------


def exact_gradient() -> np.ndarray:
    """d E[r] / d logits = sum_t pi(t) (r(t) - b) grad log pi(t), via the exhaustive estimator."""
    credit = Credit(rewards=Q * P_E, group=[0, 0, 0], probs=PI)
    weights = ROUTING.get("exhaustive")(credit, scale=False)
    return sum(w * score_grad(t) for t, w in enumerate(weights))


def expected_matched_gradient(kind: str, m: int, moment: int = 1) -> np.ndarray:
    """E over t ~ pi, M interventions and the shared noise e (common random numbers: the
    intervention rollout succeeds exactly when the sampled one's noise lets it) of the one-rollout
    gradient estimate, or (`moment=2`) of its elementwise square."""
    total = np.zeros(len(PI))
    for t in range(len(PI)):
        for swaps in itertools.product(range(len(PI)), repeat=m):
            if kind == "swap":
                p_swaps = np.prod([PI[s] for s in swaps])
            elif kind == "swap_other":
                p_swaps = 0.0 if t in swaps else (1 / (len(PI) - 1)) ** m
            elif kind == "swap_distinct":
                p_swaps = 0.0 if t in swaps else np.prod([PI[s] / (1 - PI[t]) for s in swaps])
            else:  # ablate: one deterministic flat context
                p_swaps = 1.0 if swaps == (0,) * m else 0.0
            for e, p_e in NOISE:
                if not p_swaps:
                    continue
                baseline = [Q_FLAT * e] * m if kind == "ablate" else [Q[s] * e for s in swaps]
                credit = Credit(rewards=[Q[t] * e], group=[0], baseline=[baseline], probs=[PI[t]])
                a = ROUTING.get("matched_distinct" if kind == "swap_distinct" else "matched")(credit, scale=False)[0]
                total += PI[t] * p_swaps * p_e * (a * score_grad(t) if moment == 1 else (a * score_grad(t)) ** 2)
    return total


@pytest.mark.parametrize("m", [1, 2])
@pytest.mark.parametrize("kind", ["swap", "swap_distinct", "ablate"])
def test_swap_and_ablate_credit_are_unbiased_for_the_exact_routing_gradient(kind, m):
    np.testing.assert_allclose(expected_matched_gradient(kind, m), exact_gradient(), atol=1e-12)


@pytest.mark.parametrize("m", [1, 2])
def test_swap_other_credit_is_biased_by_k_over_k_minus_1(m):
    # uniform over the other talents: A = r(t) - (S - r(t)) / (K - 1) = (K r(t) - S) / (K - 1),
    # and the S term has zero mean, so the expected gradient is K / (K - 1) times the exact one
    k = len(PI)
    biased = expected_matched_gradient("swap_other", m)
    np.testing.assert_allclose(biased, k / (k - 1) * exact_gradient(), atol=1e-12)
    assert np.abs(biased - exact_gradient()).max() > 0.05


@pytest.mark.parametrize("m", [1, 2])
def test_swap_distinct_has_swaps_expectation_at_lower_variance(m):
    # swap_distinct is swap's credit conditioned on a distinct draw (Rao-Blackwell): the same
    # mean, so a lower second moment is a lower variance, coordinate by coordinate
    swap, distinct = (expected_matched_gradient(k, m, moment=2) for k in ("swap", "swap_distinct"))
    assert np.all(distinct < swap)
    # M=1 in closed form: E|g|^2 = sum_t pi_t w_t sum_{u != t} pi_u p_e (q_t - q_u)^2 |onehot(t) - pi|^2,
    # w_t = 1 for swap and 1 - pi_t for swap_distinct: 0.1120352 and 0.0776944 with PI, Q, P_E
    if m == 1:
        assert swap.sum() == pytest.approx(0.1120352, rel=1e-9)
        assert distinct.sum() == pytest.approx(0.0776944, rel=1e-9)
