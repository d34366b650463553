"""Skill extraction (`mine.extractor=template|llm`) and near-duplicate merging.

An extractor turns successful trajectories into skills and a trajectory x skill usage
matrix. The default `template` extractor is offline and deterministic: frequent closed
procedures over action templates, each described from the data (name, when to use, steps
with a grounded example). Near-duplicate skills are merged by embedding cosine.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from talentrl_cli.mining.procedures import closed_frequent, count_patterns, occurrences
from talentrl_cli.mining.templates import describe_template, short_template, trajectory_templates
from talentrl_cli.registry import Registry
from talentrl_cli.schema import Skill, Trajectory

EXTRACTORS: Registry[Any] = Registry("skill extractor")
MAX_LISTED_SOURCES = 20  # skills.jsonl lists this many supporting trajectory ids


@dataclass
class Extraction:
    skills: list[Skill]
    usage: np.ndarray  # (n_trajectories, n_skills), 1 where a trajectory uses a skill


@EXTRACTORS.register("template")
def template_extractor(trajectories: list[Trajectory], cfg: Any, keywords: Any, **_: Any) -> Extraction:
    sequences = [trajectory_templates(t) for t in trajectories]
    support = count_patterns(sequences, int(cfg.max_len))
    patterns = sorted(closed_frequent(support, int(cfg.min_support), int(cfg.min_len)),
                      key=lambda p: (-support[p], p))
    rows_per_pattern = occurrences(sequences, patterns)
    usage = np.zeros((len(trajectories), len(patterns)), dtype=np.float32)
    skills = []
    for col, (pattern, rows) in enumerate(zip(patterns, rows_per_pattern, strict=True)):
        usage[rows, col] = 1.0
        skills.append(_describe(pattern, rows, trajectories, sequences, keywords))
    return Extraction(skills, usage)


def _describe(pattern: tuple[str, ...], rows: list[int], trajectories: list[Trajectory],
              sequences: list[list[str]], keywords: Any) -> Skill:
    example = trajectories[rows[0]]
    steps = [_step_text(t, example, sequences[rows[0]]) for t in pattern]
    words = keywords.distinctive(rows, top=3)
    when = f"Tasks like \u201c{_clip(example.task.question)}\u201d"
    when += f" (typical words: {', '.join(words)})." if words else "."
    return Skill(
        id=skill_id(pattern), name=" \u2192 ".join(short_template(t) for t in pattern), when_to_use=when,
        steps=steps, support=len(rows),
        source_trajectories=[trajectories[r].id for r in rows[:MAX_LISTED_SOURCES]],
        meta={"pattern": list(pattern)},
    )


def _step_text(template: str, example: Trajectory, sequence: list[str]) -> str:
    """The template in words, with the example trajectory's concrete action."""
    text = describe_template(template)
    if template in sequence:
        position = _raw_index(example, sequence, template)
        if position is not None:
            text += f" \u2014 e.g. {_clip(example.steps[position].action, 80)}"
    return text


def _raw_index(example: Trajectory, sequence: list[str], template: str) -> int | None:
    """The index in the original steps of the first action behind `template`."""
    from talentrl_cli.mining.templates import abstract_action, vocabulary

    question = vocabulary(example.task.question)
    seen = vocabulary(str(example.task.meta.get("initial_observation", "")))
    for i, step in enumerate(example.steps):
        if abstract_action(step.action, question, seen) == template.rstrip("+"):
            return i
        seen |= vocabulary(step.observation)
    return None


def skill_id(pattern: tuple[str, ...] | str) -> str:
    text = "\n".join(pattern) if isinstance(pattern, tuple) else pattern
    return "s-" + hashlib.sha256(text.encode()).hexdigest()[:10]


def _clip(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def merge_near_duplicates(extraction: Extraction, embeddings: np.ndarray, threshold: float) -> Extraction:
    """Merge skills whose embedding cosine exceeds `threshold` (complete linkage, so every
    pair inside a merged group is that similar); the most supported skill represents the
    group and the group's usage is the union of its members'."""
    n = len(extraction.skills)
    if n < 2 or threshold >= 1.0:
        return extraction
    from sklearn.cluster import AgglomerativeClustering

    clustering = AgglomerativeClustering(n_clusters=None, metric="cosine", linkage="complete",
                                         distance_threshold=1.0 - threshold)
    groups = clustering.fit_predict(embeddings)
    keep, columns = [], []
    for group in sorted(set(groups), key=lambda g: min(np.flatnonzero(groups == g))):
        members = np.flatnonzero(groups == group)
        usage = extraction.usage[:, members].max(axis=1)
        best = max(members, key=lambda m: (extraction.skills[m].support, -m))
        skill = extraction.skills[best].model_copy(deep=True)
        skill.support = int(usage.sum())
        if len(members) > 1:
            skill.meta["merged"] = sorted(extraction.skills[m].id for m in members if m != best)
        keep.append(skill)
        columns.append(usage)
    return Extraction(keep, np.stack(columns, axis=1) if columns else extraction.usage[:, :0])
