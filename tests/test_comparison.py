"""The comparison table: rows, pooled CIs, deltas found from lineage, and its files."""

from __future__ import annotations

import json

import pytest

from talentrl_cli import comparison
from talentrl_cli.artifacts import ArtifactStore


def _publish(store, stage, config, inputs=None, files=None):
    with store.staging(stage) as tmp:
        for name, text in (files or {"weights.txt": stage}).items():
            (tmp / name).write_text(text)
        return store.publish(tmp, stage=stage, config=config, config_hash=f"{stage}{json.dumps(config)}".ljust(8, "0"),
                             inputs=inputs or {}, metrics={})


def _eval(store, seed, model, modes):
    """An eval artifact: mode -> per-task EM list."""
    rows = [{"mode": mode, "task_id": f"t{i}", "reward": em, "scores": {"em": em, "f1": em}}
            for mode, ems in modes.items() for i, em in enumerate(ems)]
    metrics = {"command": f"talentrl eval seed={seed}",
               "modes": {m: {"routing_accuracy": [0.5, 0.4, 0.6]} for m in modes if "zero_shot" not in m}}
    files = {"results.jsonl": "".join(json.dumps(r) + "\n" for r in rows), "metrics.json": json.dumps(metrics)}
    return _publish(store, "eval", {"seed": seed}, {"model": model} if model else {}, files)


@pytest.fixture
def store(tmp_path):
    """Two seeds of base zero-shot, talent SFT and RL from it (lineage eval <- rl <- sft)."""
    store = ArtifactStore(tmp_path)
    for seed, (sft_em, rl_em) in enumerate([([1, 0, 1, 0], [1, 1, 1, 0]), ([1, 1, 0, 0], [1, 1, 1, 1])]):
        sft = _publish(store, "sft", {"seed": seed})
        rl = _publish(store, "rl", {"seed": seed}, {"model": sft})
        _eval(store, seed, None, {"zero_shot": [0, 0, 0, 0]})
        _eval(store, seed, sft, {"talent": sft_em})
        _eval(store, seed, rl, {"talent": rl_em})
    return store


def _arms(store):
    labels = ["zero-shot", "talent SFT", "TalentRL"] * 2
    return [arm for a, label in zip(store.list("eval"), labels, strict=True)
            for arm in comparison.arms_of(a, label=label)]


def test_rows_pool_seeds_and_deltas_follow_lineage(store):
    table = comparison.build(_arms(store), store, n_bootstrap=200)
    rows = {e["arm"]: e for e in table["arms"]}
    assert list(rows) == ["zero-shot", "talent SFT", "TalentRL"]
    assert rows["talent SFT"]["seeds"] == [0, 1] and rows["talent SFT"]["n"] == 8
    assert rows["talent SFT"]["em"][0] == pytest.approx(0.5) and rows["TalentRL"]["em"][0] == pytest.approx(0.875)
    assert rows["zero-shot"]["delta"] is None and rows["zero-shot"]["routing_accuracy"] is None
    sft, rl = rows["talent SFT"]["delta"], rows["TalentRL"]["delta"]
    assert (sft["kind"], sft["against"], sft["n"]) == ("SFT - zero-shot", ["zero-shot"], 8)
    assert sft["em_tasks"][0] == pytest.approx(0.5)
    assert (rl["kind"], rl["against"]) == ("RL - SFT", ["talent SFT"])
    assert rl["em_tasks"][0] == pytest.approx(0.375)  # seed 0: +0.25, seed 1: +0.5
    # two seeds: mean 0.375, sd 0.1768, se 0.125, t(0.975, 1) = 12.706
    assert rl["em_seeds"] == pytest.approx([0.375, 0.375 - 1.5883, 0.375 + 1.5883], abs=1e-3)
    assert rows["TalentRL"]["lineage"][0].startswith("eval:v3 [") and " <- rl:v1 [" in rows["TalentRL"]["lineage"][0]
    assert rows["TalentRL"]["lineage"][0].endswith("<- sft:v1 [sft{\"see]")
    assert rows["zero-shot"]["lineage"][0].endswith("<- base model")


def test_an_rl_arm_without_its_sft_arm_has_no_delta(store):
    arms = [a for a in _arms(store) if a.label != "talent SFT"]
    rows = {e["arm"]: e for e in comparison.build(arms, store, n_bootstrap=50)["arms"]}
    assert rows["TalentRL"]["delta"] is None


def test_t_interval_is_students():
    mean, low, high = comparison.t_interval([0.1, 0.3])
    assert (mean, low, high) == pytest.approx((0.2, 0.2 - 12.7062 * 0.1, 0.2 + 12.7062 * 0.1), abs=1e-4)
    assert comparison.t_interval([0.2, 0.2, 0.2]) == pytest.approx((0.2, 0.2, 0.2))


def test_report_command_writes_markdown_png_and_json(run_cli, store):
    run_cli.root = store.root
    code, out, err = run_cli("report", "eval:v1", "eval:v2", "eval:v3", "--out", str(store.root / "cmp"),
                             root_dir=store.root)
    assert code == 0, err
    report = (store.root / "cmp" / "report.md").read_text()
    assert "| eval:v2 talent | 0 | 4 | 50.0 [" in report and "SFT - zero-shot: +50.0 [" in report
    assert "RL - SFT: +25.0 [" in report and "- this report: `talentrl " in report
    assert (store.root / "cmp" / "comparison.png").read_bytes()[:4] == b"\x89PNG"
    assert out.strip().endswith("report.md")
    code, _, err = run_cli("report", "sft:v1", root_dir=store.root)
    assert code == 1 and "sft:v1 is a sft artifact" in err
    code, _, err = run_cli("report", root_dir=store.root)
    assert code == 1 and "nothing to report" in err
