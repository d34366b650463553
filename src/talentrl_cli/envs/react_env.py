"""`SearchEnvironment`: the one ReAct episode loop behind every text-QA environment.

`env=qa` (real QA sets) and `env=worldqa` (the generated suite) differ in where tasks come
from, how an answer is scored and how their `SearchTool` is built, but must run episodes
identically: trajectories recorded in one are read by the same parser, miner and prompts
as the other, so their observation texts, step counting and rewards may not drift apart.
This base class owns that shared loop, once; a subclass supplies only `tasks`, `score`,
`describe_tools`, the `tool` property and a `settings` object with `max_steps`.

An episode (`reset(task)`, then `step(action)` until done):

- the action string is parsed with `parse_action` (ReAct/FireAct/Reflexion spellings);
  `search[query]` and `lookup[keyword]` go to the episode's own `SearchSession`, and
  `finish[answer]` ends the episode with reward `score(task, answer)["reward"]`;
- an unparsable or unknown action costs a step and its observation lists the valid actions;
- after `max_steps` actions without `finish` the episode ends with reward 0, the step-limit
  note appended to that step's observation and `score(task, None)` merged into `info`;
- stepping a finished (or never started) episode is harmless: it returns done with no reward.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from talentrl_cli.envs.base import EPISODE_OVER, Environment
from talentrl_cli.envs.search import Action, SearchSession, SearchTool, parse_action
from talentrl_cli.schema import Task

TOOLS = ("search", "lookup", "finish")
VALID_ACTIONS = "Valid actions: search[query], lookup[keyword], finish[answer]."


class SearchEnvironment(Environment):
    """ReAct episodes (search / lookup / finish) over a shared, read-only `SearchTool`.

    Subclasses set `self.settings` (anything with a `max_steps` attribute) in `__init__`
    after calling this one, and implement `tool`, `tasks`, `score` and `describe_tools`.
    """

    settings: Any

    def __init__(self, cfg: Any = None, seed: int = 0):
        super().__init__(cfg, seed)
        self.task: Task | None = None
        self.session: SearchSession | None = None
        self.steps = 0
        self.done = True
        self.answer: str | None = None

    @property
    @abstractmethod
    def tool(self) -> SearchTool:
        """The search tool, shared by every instance with the same corpus and settings."""

    # -- episodes -------------------------------------------------------------------------

    def reset(self, task: Task) -> str:
        self.task, self.session = task, self.tool.session()
        self.steps, self.done, self.answer = 0, False, None
        return task.question

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        if self.task is None or self.done:
            return EPISODE_OVER, 0.0, True, {"valid": False}
        self.steps += 1
        parsed = parse_action(action)
        info: dict[str, Any] = {
            "valid": parsed is not None and parsed.tool in TOOLS,
            "steps": self.steps,
        }
        reward = 0.0
        if not info["valid"]:
            obs = self._invalid(action, parsed)
        elif parsed.tool == "finish":
            obs, reward = self._finish(parsed.arg, info)
        elif parsed.tool == "search":
            obs = self.session.search(parsed.arg)
        else:
            obs = self.session.lookup(parsed.arg)
        if not self.done and self.steps >= int(self.settings.max_steps):
            self.done = True
            obs += (
                f"\nStep limit reached ({self.settings.max_steps} actions); "
                "episode ended without an answer."
            )
            info.update(self.score(self.task, None), truncated=True)
        return obs, reward, self.done, info

    def _finish(self, answer: str, info: dict[str, Any]) -> tuple[str, float]:
        """End the episode on `answer`: its scores (and the answer) go into `info`."""
        self.done, self.answer = True, answer
        scores = self.score(self.task, answer)
        info.update(scores, answer=answer)
        return f"Episode finished, reward = {scores['reward']:g}", scores["reward"]

    @staticmethod
    def _invalid(action: Any, parsed: Action | None) -> str:
        """The observation for an unknown tool or an unparsable turn (`action` may be any
        object a caller passed, so it is shown through `str`)."""
        what = (
            f"Unknown tool {parsed.tool!r}"
            if parsed
            else f"Could not parse an action in {str(action)[:80]!r}"
        )
        return f"{what}. {VALID_ACTIONS}"
