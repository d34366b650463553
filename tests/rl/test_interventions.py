"""Which talents a group runs: seeded draws from pi_route and the intervention variants."""

from __future__ import annotations

from collections import Counter

import pytest

from talentrl_cli.errors import ConfigError
from talentrl_cli.rl.interventions import generator, intervention_talents, sample_talents

DIST = {"a": 0.6, "b": 0.3, "c": 0.1}


def test_draws_follow_pi_route_and_repeat_from_the_same_seed():
    counts = Counter(sample_talents(DIST, 20000, generator(0, "task-1", 3)))
    assert abs(counts["a"] / 20000 - 0.6) < 0.015 and abs(counts["c"] / 20000 - 0.1) < 0.01
    assert sample_talents(DIST, 8, generator(0, "task-1", 3)) == sample_talents(DIST, 8, generator(0, "task-1", 3))
    assert sample_talents(DIST, 8, generator(0, "task-1", 3)) != sample_talents(DIST, 8, generator(0, "task-1", 4))


def test_swap_ignores_the_sampled_talent_and_swap_other_avoids_it():
    rng = generator(0, "t", 0)
    swaps = intervention_talents(DIST, ["a"] * 4000, "swap", 1, rng)
    assert abs(sum(s == ["a"] for s in swaps) / 4000 - 0.6) < 0.03  # it may equal t_i, at pi's rate
    others = intervention_talents(DIST, ["a", "b", "c"] * 500, "swap_other", 2, rng)
    assert all(t not in s for t, s in zip(["a", "b", "c"] * 500, others, strict=True))
    assert Counter(x for s in others[::3] for x in s).keys() == {"b", "c"}  # uniform, not by pi
    assert intervention_talents(DIST, ["a", "b"], "ablate", 2, rng) == [[None, None], [None, None]]


def test_swap_distinct_draws_pi_route_without_the_sampled_talent():
    rng = generator(0, "t", 0)
    draws = [x for s in intervention_talents(DIST, ["a"] * 4000, "swap_distinct", 1, rng) for x in s]
    assert "a" not in draws and abs(draws.count("b") / 4000 - 0.75) < 0.03  # 0.3 / (0.3 + 0.1)
    assert intervention_talents({"a": 1.0}, ["a"], "swap_distinct", 2, rng) == [["a", "a"]]  # a menu of one
    lone = intervention_talents({"a": 1.0, "b": 0.0, "c": 0.0}, ["a"] * 200, "swap_distinct", 1, rng)
    assert {x for s in lone for x in s} == {"b", "c"}  # no mass elsewhere: uniform over the others


def test_an_unknown_intervention_is_a_config_error():
    with pytest.raises(ConfigError, match="rl.intervention='swapp'"):
        intervention_talents(DIST, ["a"], "swapp", 1, generator(0, "t", 0))
