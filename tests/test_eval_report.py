"""Eval metrics without a model: paired differences and the seen/unseen split, exact numbers."""

from __future__ import annotations

from talentrl_cli import eval_report


def _row(mode: str, task: str, em: float, strategy: str) -> dict:
    return {"mode": mode, "task_id": task, "reward": em, "scores": {"em": em, "f1": em},
            "strategy": strategy, "turns": 1, "policy_tokens": 1, "end": "finish", "talent": None}


def test_paired_difference_pairs_tasks_by_id_and_skips_unmatched_ones():
    a = [_row("a", "t1", 1, "x"), _row("a", "t2", 1, "x"), _row("a", "t3", 0, "y"), _row("a", "t9", 1, "y")]
    b = [_row("b", "t3", 1, "y"), _row("b", "t1", 0, "x"), _row("b", "t2", 1, "x")]
    out = eval_report.paired_difference(a, b)
    assert out["n"] == 3  # t9 ran in a only
    assert out["em"][0] == 0.0  # (1 - 0) + (1 - 1) + (0 - 1) over 3
    only_x = eval_report.paired_difference(a, b, keep=lambda r: r["strategy"] == "x")
    assert only_x == {"n": 2, "em": [0.5, 0.0, 1.0]}


def test_paired_ci_is_degenerate_when_every_task_agrees():
    a = [_row("a", f"t{i}", i % 2, "x") for i in range(10)]
    b = [_row("b", f"t{i}", i % 2, "x") for i in range(10)]
    assert eval_report.paired_difference(a, b)["em"] == [0.0, 0.0, 0.0]


def test_summarise_splits_seen_and_unseen_strategies_and_reports_the_routing_pairs():
    rows = []
    for i in range(4):
        strategy = "cmp" if i < 2 else "hop"
        rows += [_row("oracle_talent", f"t{i}", 1, strategy), _row("random_talent", f"t{i}", float(i == 3), strategy),
                 _row("talent", f"t{i}", float(i >= 1), strategy)]
    metrics = eval_report.summarise(rows, {}, "b", n_bootstrap=200, unseen=["cmp"])
    assert metrics["unseen_strategies"] == ["cmp"]
    oracle = metrics["modes"]["oracle_talent"]["transfer"]
    assert oracle["unseen"] == {"n": 2, "em": [1.0, 1.0, 1.0]} and oracle["seen"]["n"] == 2
    gap = metrics["paired"]["oracle_talent - random_talent"]
    assert [gap[g]["em"][0] for g in ("all", "seen", "unseen")] == [0.75, 0.5, 1.0]
    assert metrics["paired"]["talent - random_talent"]["all"]["em"][0] == 0.5
    text = eval_report.markdown(metrics)
    assert "| oracle_talent - random_talent | +75.0" in text and "unseen in SFT: cmp" in text


def test_summarise_without_unseen_strategies_has_no_transfer_split():
    rows = [_row("zero_shot", "t1", 1, "x")]
    metrics = eval_report.summarise(rows, {}, "b")
    assert "transfer" not in metrics["modes"]["zero_shot"] and metrics["paired"] == {}
    assert "Seen and unseen" not in eval_report.markdown(metrics)


def test_the_gold_mapped_group_leaves_out_tasks_no_talent_maps_to():
    rows = [_row("oracle_talent", "t1", 1, "hop"), _row("random_talent", "t1", 0, "hop"),
            _row("oracle_talent", "t2", 1, "count"), _row("random_talent", "t2", 1, "count")]
    gap = eval_report.summarise(rows, {"tal-a": "hop"}, "b", n_bootstrap=200)["paired"]["oracle_talent - random_talent"]
    assert gap["gold-mapped"] == {"n": 1, "em": [1.0, 1.0, 1.0]} and gap["all"]["em"][0] == 0.5
    every = eval_report.summarise(rows, {"tal-a": "hop", "tal-b": "count"}, "b", n_bootstrap=200)
    assert "gold-mapped" not in every["paired"]["oracle_talent - random_talent"]
