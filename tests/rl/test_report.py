"""rl's report: the execution credit of the logged rollouts, by action kind (exact sums)."""

from __future__ import annotations

import pytest

from talentrl_cli.rl.report import credit_by_action, credit_lines


def test_credit_by_action_sums_advantage_times_tokens_per_kind():
    records = [
        {"a_exec": 1.0, "steps": [{"action": "search[Fonem]", "valid": True, "tokens": 10},
                                  {"action": "finish[2001]", "valid": True, "tokens": 4}]},
        {"a_exec": -0.5, "steps": [{"action": "search[Fonem]", "valid": True, "tokens": 12},
                                   {"action": "Thought: the year is", "valid": False, "tokens": 48}]},
        {"a_exec": 0.0, "steps": [{"action": "go east", "valid": True, "tokens": 3}]},
    ]
    table = credit_by_action(records)
    assert list(table) == ["finish", "go", "invalid", "search"]
    assert table["search"] == {"turns": 2, "tokens": 22, "credit": 4.0, "per_token": pytest.approx(4 / 22)}
    assert table["invalid"]["credit"] == -24.0 and table["finish"]["per_token"] == 1.0
    assert table["go"]["credit"] == 0.0
    assert credit_lines(table)[-1] == "| search | 2 | 22 | +4.0 | +0.182 |"


def test_no_logged_rollouts_no_section():
    assert credit_lines(credit_by_action([])) == []
