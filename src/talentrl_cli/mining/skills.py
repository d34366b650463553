"""Skill extraction (`mine.extractor=template|llm`) and near-duplicate merging.

An extractor turns successful trajectories into skills and a trajectory x skill usage
matrix. The default `template` extractor is offline and deterministic: frequent closed
procedures over action templates, each described in slot words (name, steps) and by the
task words its trajectories share (when to use), never by one trajectory's values.
Near-duplicate skills are merged by embedding cosine.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from talentrl_cli.mining.procedures import closed_frequent, count_patterns, occurrences
from talentrl_cli.mining.templates import describe_template, pattern_name, trajectory_templates
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
        skills.append(_describe(pattern, rows, trajectories, keywords))
    return Extraction(skills, usage)


def _describe(pattern: tuple[str, ...], rows: list[int], trajectories: list[Trajectory],
              keywords: Any) -> Skill:
    """Name and steps in slot words only, and when to use it as the words its tasks share
    (`Keywords.distinctive` keeps words frequent in the group): a skill shown with any task
    quotes no entity, argument or answer of the trajectories it was mined from."""
    words = keywords.distinctive(rows, top=2)  # the talent menu already names its tasks' words
    return Skill(
        id=skill_id(pattern), name=pattern_name(pattern),
        when_to_use=", ".join(words),
        steps=[describe_template(t) for t in pattern], support=len(rows),
        source_trajectories=[trajectories[r].id for r in rows[:MAX_LISTED_SOURCES]],
        meta={"pattern": list(pattern)},
    )


def skill_id(pattern: tuple[str, ...] | str) -> str:
    text = "\n".join(pattern) if isinstance(pattern, tuple) else pattern
    return "s-" + hashlib.sha256(text.encode()).hexdigest()[:10]


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
