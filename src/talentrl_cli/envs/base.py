"""The environment protocol and its registry.

An environment serves tasks by split, runs one episode at a time through
`reset(task) -> observation` and `step(action) -> (observation, reward, done, info)`, describes
its tools for the prompt, and scores a final answer. Environments are created by name
(`env=worldqa`) with a deterministic seed; each instance holds one episode's state, so batched
rollouts create one instance per episode with `fork()`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from talentrl_cli.registry import Registry
from talentrl_cli.schema import Task

ENVS: Registry[type[Environment]] = Registry("environment")
EPISODE_OVER = "The episode is over; call reset() for a new task."  # a step after done


class Environment(ABC):
    name: str = ""
    action_format: str = "tool[argument]"  # how the prompt spells an action; games take a command

    @classmethod
    def availability(cls) -> str | None:
        """None when the env can run here; otherwise what it needs and how to get it."""
        return None

    def __init__(self, cfg: Any, seed: int = 0):
        self.cfg = cfg
        self.seed = seed

    @abstractmethod
    def tasks(self, split: str) -> list[Task]:
        """The tasks of a split (train, dev or test), in a fixed order."""

    @abstractmethod
    def reset(self, task: Task) -> str:
        """Start an episode on `task`; returns the first observation."""

    @abstractmethod
    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        """Apply one action string, e.g. `search[Paris]`; returns (observation, reward, done, info).
        `info["answer"]`: the episode ended on an answer; `info["truncated"]`: on the env's own
        step limit (otherwise a done episode ended by itself, e.g. a game won or lost)."""

    @abstractmethod
    def describe_tools(self) -> str:
        """A prompt-ready description of the actions this environment accepts."""

    @abstractmethod
    def score(self, task: Task, answer: str | None) -> dict[str, float]:
        """Score a final answer; must include `reward` in [0, 1]."""

    def fork(self) -> Environment:
        """A fresh instance sharing read-only resources (corpus, index) for a parallel episode."""
        return type(self)(self.cfg, self.seed)


def make_env(name: str, cfg: Any = None, seed: int = 0) -> Environment:
    import talentrl_cli.envs.builtin  # noqa: F401  (registers the built-in environments)

    return ENVS.get(name)(cfg, seed)


def env_from_config(cfg: Any) -> Environment:
    """The environment a composed stage config names (`env=` group, seeded by `seed`)."""
    return make_env(str(cfg.env.name), cfg.env, int(cfg.seed))
