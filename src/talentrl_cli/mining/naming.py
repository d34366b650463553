"""Talent names and one-line descriptions (`mine.namer=template|llm`), and the LLM extractor.

The `template` namer is offline and deterministic: the name is the talent's top procedure in
slot words (a reader tells strategies apart by it), the description the words its tasks
share. The `llm` namer asks an LLM for the same two fields as
JSON and falls back to the template result when the reply does not validate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from talentrl_cli.mining.skills import EXTRACTORS, Extraction, template_extractor
from talentrl_cli.mining.templates import pattern_name
from talentrl_cli.registry import Registry
from talentrl_cli.schema import Skill, Trajectory

NAMERS: Registry[Any] = Registry("talent namer")
_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass
class TalentContext:
    """What a namer sees about one talent."""

    index: int
    top_skills: list[Skill]
    keywords: list[str]
    exemplars: list[str]


class NamedTalent(BaseModel):
    name: str = Field(min_length=2, max_length=64, pattern=r"^[a-z][a-z0-9-]*$")
    description: str = Field(min_length=3, max_length=300)


class WrittenSkill(BaseModel):
    name: str = Field(min_length=3, max_length=80)
    when_to_use: str = Field(min_length=10, max_length=400)
    steps: list[str] = Field(min_length=1, max_length=12)


def slug(text: str, words: int = 3) -> str:
    parts = [p for p in _SLUG.split(text.lower()) if p][:words]
    return "-".join(parts)


@NAMERS.register("template")
def template_namer(contexts: list[TalentContext], **_: Any) -> list[NamedTalent]:
    return unique_names([_template_name(c) for c in contexts])


def _template_name(context: TalentContext) -> NamedTalent:
    """The name says what the strategy does (its top skill's procedure in slot words, e.g.
    `search-task-each-finish-number`), the description which tasks it is for (their shared
    words); neither quotes an exemplar task, which could be a prompt's own task."""
    top = context.top_skills[0] if context.top_skills else None
    procedure = (pattern_name(top.meta["pattern"]) if "pattern" in top.meta else top.name) if top else ""
    name = slug(procedure, words=8) or f"talent-{context.index + 1}"
    words = ", ".join(context.keywords)
    return NamedTalent(name=name if name[0].isalpha() else f"t-{name}",
                       description=words or "no shared task words")


@NAMERS.register("llm")
def llm_namer(contexts: list[TalentContext], writer: Any = None, **_: Any) -> list[NamedTalent]:
    fallback = template_namer(contexts)
    named = []
    for context, default in zip(contexts, fallback, strict=True):
        reply = writer.ask(_naming_prompt(context), NamedTalent)
        named.append(reply or default)
    return unique_names(named)


def _naming_prompt(context: TalentContext) -> str:
    skills = "\n".join(f"- {s.name}: {s.when_to_use}" for s in context.top_skills[:3])
    tasks = "\n".join(f"- {q}" for q in context.exemplars[:3])
    return ("These agent skills and tasks share one strategy.\nSkills:\n" + skills + "\nTasks:\n" + tasks
            + '\nName the strategy. Reply with JSON only: {"name": "two-words-lowercase", '
              '"description": "one sentence"}')


def unique_names(named: list[NamedTalent]) -> list[NamedTalent]:
    seen: dict[str, int] = {}
    out = []
    for item in named:
        seen[item.name] = seen.get(item.name, 0) + 1
        name = item.name if seen[item.name] == 1 else f"{item.name}-{seen[item.name]}"
        out.append(NamedTalent(name=name, description=item.description))
    return out


@EXTRACTORS.register("llm")
def llm_extractor(trajectories: list[Trajectory], cfg: Any, keywords: Any, writer: Any = None,
                  **_: Any) -> Extraction:
    """Mines the same frequent procedures as `template`, then has the LLM write each skill's
    name, when-to-use and steps from the procedure and an example trajectory."""
    base = template_extractor(trajectories, cfg, keywords)
    skills = []
    for skill in base.skills:
        example = next(t for t in trajectories if t.id == skill.source_trajectories[0])
        written = writer.ask(_skill_prompt(skill, example), WrittenSkill)
        skills.append(skill if written is None else skill.model_copy(update=written.model_dump()))
    return Extraction(skills, base.usage)


def _skill_prompt(skill: Skill, example: Trajectory) -> str:
    steps = "\n".join(f"{i + 1}. {s}" for i, s in enumerate(skill.steps))
    actions = "\n".join(f"Action: {s.action}" for s in example.steps[:8])
    return ("Write a reusable skill for an AI agent from this procedure.\nProcedure:\n" + steps
            + f"\nExample task: {example.task.question}\n{actions}\n"
            + 'Reply with JSON only: {"name": "...", "when_to_use": "...", "steps": ["...", "..."]}')


def top_skill_indices(weights: np.ndarray, talent: int, limit: int = 5) -> list[int]:
    row = weights[talent]
    order = np.lexsort((np.arange(len(row)), -row))
    return [int(i) for i in order[:limit] if row[i] > 0]
