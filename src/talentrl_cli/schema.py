"""The common data model: tasks, ReAct steps, trajectories, skills and talents.

Every trajectory source (the embedded WorldQA suite, ReAct/FireAct/Reflexion logs, ALFWorld
logs, user files) is loaded into these models, so mining, SFT and eval share one code path.
JSONL reading and writing with file:line errors lives in `talentrl_cli.jsonl`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class Task(_Model):
    """One problem for an agent. `strategy` and `plan` are gold data, kept for measurement only."""

    id: str = Field(min_length=1)
    question: str
    answers: list[str] = Field(default_factory=list)
    env: str = ""
    strategy: str | None = None
    plan: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)


class Step(_Model):
    """One ReAct turn: the model's thought and action, and what the environment returned."""

    thought: str = ""
    action: str
    observation: str = ""


class Trajectory(_Model):
    """An episode of an agent on a task. Only successful ones yield skills."""

    id: str = Field(min_length=1)
    task: Task
    steps: list[Step]
    success: bool
    final_answer: str | None = None
    reward: float | None = None
    source: str = ""
    meta: dict[str, Any] = Field(default_factory=dict)


class Skill(_Model):
    """A reusable natural-language procedure distilled from successful trajectories."""

    id: str = Field(min_length=1)
    name: str
    when_to_use: str
    steps: list[str]
    support: int = 0
    source_trajectories: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)

    def text(self) -> str:
        steps = "\n".join(f"{i + 1}. {s}" for i, s in enumerate(self.steps))
        return f"{self.name}\nWhen to use: {self.when_to_use}\nSteps:\n{steps}"


class Talent(_Model):
    """A coarse strategy: a name, a one-line description and weighted skills w[t, s] in [0, 1]."""

    name: str = Field(min_length=1)
    description: str
    skills: dict[str, float] = Field(default_factory=dict)
    exemplars: list[str] = Field(default_factory=list)
    support: int = 0
    meta: dict[str, Any] = Field(default_factory=dict)
