"""env=textworld: command parsing and cleaning (no engine needed), and on the real engine the
expert wins at noise 0, junk commands are survived, and splits do not share games."""

from __future__ import annotations

from pathlib import Path

import pytest

from talentrl_cli.envs import make_env
from talentrl_cli.envs.textworld_env import (
    MAX_COMMAND,
    META_REFUSAL,
    META_VERBS,
    TextWorldEnv,
    _split_tasks,
    clean,
    command_of,
)
from talentrl_cli.errors import ConfigError

SMALL = {"games": {"coin": "tw-coin_collector --level 1", "treasure": "tw-treasure_hunter --level 1"},
         "n_games": {"train": 2, "dev": 1, "test": 1}, "max_steps": 8}


@pytest.mark.parametrize(("turn", "command"), [
    ("Thought: the coin is west.\nAction: go west", "go west"),
    ("Action 3: Take the coin.\nObservation: ...", "take the coin"),
    ("open box", "open box"),
    ("Action: `insert key into chest`", "insert key into chest"),
    ("Action: ¿¿ go ☃ north ☃ ??", "go north"),
])
def test_command_of_takes_the_first_action_line_as_plain_words(turn, command):
    assert command_of(turn) == command


def test_a_long_junk_command_is_cut_to_ascii():
    command = command_of("Action: " + "ĠĠ ab😀c " * 200)
    assert len(command) <= MAX_COMMAND and command.isascii()


def test_clean_drops_the_status_bar_after_the_prompt():
    """As the engine sends it: the prompt `>` then the status bar on the same line."""
    raw = "\nThat's not a verb I recognise.\n\n>" + " " * 120 + "-= Playroom =-0/1"
    assert clean(raw) == "That's not a verb I recognise."


def test_clean_drops_the_status_bar_and_end_menu():
    raw = ("You pick up the coin.\n\n\n   *** The End ***\nYou scored 1 out of a possible 1, in 6 turns."
           "\n\nWould you like to RESTART, RESTORE a saved game, QUIT or UNDO the last command?\n"
           "-= Washroom =-0/5\n> ")
    assert clean(raw) == "You pick up the coin.\n*** The End ***\nYou scored 1 out of a possible 1, in 6 turns."


def test_bad_settings_name_the_key():
    with pytest.raises(ConfigError, match="env.games"):
        TextWorldEnv({"games": {}})
    with pytest.raises(ConfigError, match="env.gams"):
        TextWorldEnv({"gams": {}})


@pytest.fixture(scope="module")
def env():
    if TextWorldEnv.availability():
        pytest.skip(TextWorldEnv.availability())
    return make_env("textworld", SMALL, seed=0)


def test_tasks_are_games_with_their_opening_and_type(env):
    tasks = env.tasks("train")
    assert [t.strategy for t in tasks] == ["coin", "treasure"]
    assert all(t.question and t.meta["initial_observation"] and t.plan for t in tasks)
    seeds = {split: {t.meta["game_seed"] for t in env.tasks(split)} for split in ("train", "dev", "test")}
    assert not (seeds["train"] & seeds["dev"]) and not (seeds["train"] & seeds["test"])


def test_the_noise_free_expert_wins_every_game(env):
    for task in env.tasks("train") + env.tasks("dev"):
        trajectory = env.expert_trajectory(task, noise=0.0)
        assert trajectory.success and trajectory.reward == 1.0
        assert [s.action for s in trajectory.steps] == task.plan


def test_junk_commands_cost_steps_until_the_limit(env):
    task = env.tasks("dev")[0]
    env.reset(task)
    for _ in range(SMALL["max_steps"]):
        observation, reward, done, info = env.step("Action: " + "☃ zzz " * 300)
    assert done and reward == 0.0 and "Step limit reached" in observation
    assert env.score(task, None)["reward"] == 0.0


def test_interpreter_verbs_are_refused_and_write_no_file(env, tmp_path, monkeypatch):
    """Frotz's `save` and `script` wrote into the working directory before they were refused."""
    monkeypatch.chdir(tmp_path)
    task = env.tasks("dev")[0]
    env.reset(task)
    for command in ("save", "game.qzl", "script", "restore", "undo", "quit", "y"):
        observation, _, done, info = env.step(f"Action: {command}")
        if command in META_VERBS:
            assert observation.startswith(META_REFUSAL) and not info["valid"]
    assert list(tmp_path.iterdir()) == []
    assert not done and env.steps == 7
    for command in task.plan:  # the engine never saw them: the walkthrough still wins
        _, reward, done, _ = env.step(f"Action: {command}")
    assert done and reward == 1.0


def test_a_cached_game_whose_files_were_pruned_is_made_again(tmp_path):
    if TextWorldEnv.availability():
        pytest.skip(TextWorldEnv.availability())
    settings = {**SMALL, "games": {"coin": "tw-coin_collector --level 1"}, "cache_dir": str(tmp_path)}
    first = make_env("textworld", settings, seed=3).tasks("dev")[0]
    Path(first.meta["game"]).unlink()
    _split_tasks.cache_clear()
    again = make_env("textworld", settings, seed=3).tasks("dev")[0]
    assert Path(again.meta["game"]).exists() and again.plan == first.plan
