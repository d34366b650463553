"""The shared ReAct episode loop (`SearchEnvironment`), on a minimal env with no model."""

from __future__ import annotations

from typing import Any

import pytest

from talentrl_cli.envs.qa import QAEnv
from talentrl_cli.envs.react_env import SearchEnvironment
from talentrl_cli.envs.search import Passage, SearchTool
from talentrl_cli.envs.worldqa import WorldQAEnv
from talentrl_cli.envs.worldqa.env import LexicalEmbedder
from talentrl_cli.schema import Task

PASSAGES = [
    Passage("p1", "Marie Curie", "Marie Curie was a physicist. She was born in Warsaw."),
    Passage("p2", "Warsaw", "Warsaw is the capital of Poland. It stands on the Vistula."),
]
TASK = Task(id="t1", question="Where was Marie Curie born?", answers=["Warsaw"], env="tiny")


class TinyEnv(SearchEnvironment):
    """Only what a subclass must supply: settings, tool, tasks, score, describe_tools."""

    name = "tiny"
    _tool = SearchTool(PASSAGES, LexicalEmbedder([p.embed_text() for p in PASSAGES]))

    def __init__(self, cfg: Any = None, seed: int = 0):
        super().__init__(cfg, seed)
        self.settings = type("S", (), {"max_steps": (cfg or {}).get("max_steps", 3)})()

    @property
    def tool(self) -> SearchTool:
        return self._tool

    def tasks(self, split: str) -> list[Task]:
        return [TASK]

    def describe_tools(self) -> str:
        return "search, lookup, finish"

    def score(self, task: Task, answer: str | None) -> dict[str, float]:
        hit = float(answer in task.answers)
        return {"reward": hit, "em": hit}


def test_both_text_qa_envs_use_the_shared_loop():
    for env_class in (QAEnv, WorldQAEnv):
        assert issubclass(env_class, SearchEnvironment)
        assert "step" not in vars(env_class) and "reset" not in vars(env_class)


def test_search_lookup_finish():
    env = TinyEnv()
    assert env.step("search[x]")[2] is True  # no episode started yet: harmless
    assert env.reset(TASK) == TASK.question
    obs, reward, done, info = env.step("Action: search[Marie Curie]")
    assert obs.startswith("Marie Curie: ") and (reward, done, info) == (
        0.0,
        False,
        {"valid": True, "steps": 1},
    )
    assert env.step("lookup[born]")[0] == "(Result 1 / 1) She was born in Warsaw."
    obs, reward, done, info = env.step("Finish[Warsaw]")
    assert (obs, reward, done) == ("Episode finished, reward = 1", 1.0, True)
    assert info == {"valid": True, "steps": 3, "reward": 1.0, "em": 1.0, "answer": "Warsaw"}
    assert env.answer == "Warsaw"
    assert env.step("search[x]") == (
        "The episode is over; call reset() for a new task.",
        0.0,
        True,
        {"valid": False},
    )


@pytest.mark.parametrize(
    ("action", "start"),
    [
        ("click[Buy]", "Unknown tool 'click'"),
        ("no idea", "Could not parse an action in"),
        (None, "Could not parse an action in 'None'"),
    ],
)
def test_invalid_actions_cost_a_step(action, start):
    env = TinyEnv()
    env.reset(TASK)
    obs, reward, done, info = env.step(action)
    assert obs.startswith(start) and obs.endswith(
        "Valid actions: search[query], lookup[keyword], finish[answer]."
    )
    assert (reward, done, info) == (0.0, False, {"valid": False, "steps": 1})


def test_step_limit_ends_without_reward():
    env = TinyEnv({"max_steps": 2})
    env.reset(TASK)
    env.step("search[Warsaw]")
    obs, reward, done, info = env.step("lookup[Vistula]")
    assert done and reward == 0.0 and info["reward"] == 0.0 and env.answer is None
    assert obs.endswith("\nStep limit reached (2 actions); episode ended without an answer.")


def test_fork_gets_its_own_session():
    env = TinyEnv()
    env.reset(TASK)
    other = env.fork()
    other.reset(TASK)
    assert other.tool is env.tool and other.session is not env.session
