"""The mining pipeline behind `talentrl mine`: skills -> merge -> talents -> names -> files.

Every step is deterministic for a fixed input and seed (sorted inputs, seeded scikit-learn
estimators, rounded weights), so `skills.jsonl`, `talents.jsonl` and `labels.jsonl` are
byte-identical across reruns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from talentrl_cli.errors import ConfigError, DataError
from talentrl_cli.jsonl import ReadStats, write_jsonl
from talentrl_cli.mining.evaluation import agreement
from talentrl_cli.mining.keywords import Keywords
from talentrl_cli.mining.naming import NAMERS, TalentContext, top_skill_indices
from talentrl_cli.mining.skills import EXTRACTORS, MAX_LISTED_SOURCES, merge_near_duplicates
from talentrl_cli.mining.talents import TalentFit, discover_talents
from talentrl_cli.mining.templates import abstract_action, describe_template, vocabulary
from talentrl_cli.schema import Skill, Talent, Trajectory

DIGITS = 4  # rounding of weights written to disk, so files are byte-stable


@dataclass
class MineResult:
    trajectories: list[Trajectory]
    skills: list[Skill]
    talents: list[Talent]
    fit: TalentFit
    llm_stats: dict[str, Any] = field(default_factory=dict)
    embed_stats: dict[str, Any] = field(default_factory=dict)


def mine(trajectories: list[Trajectory], cfg: Any, out_dir: Path) -> MineResult:
    from talentrl_cli.embedding import Embedder

    mine_cfg, seed = cfg.mine, int(cfg.seed)
    embedder = Embedder.from_config(cfg.embedder)
    writer = _writer(mine_cfg)
    keywords = Keywords([t.task.question for t in trajectories])
    extraction = EXTRACTORS.get(str(mine_cfg.extractor))(trajectories, mine_cfg, keywords, writer=writer)
    if not extraction.skills:
        raise DataError(f"no procedure reaches mine.min_support={mine_cfg.min_support} among "
                        f"{len(trajectories)} successful trajectories",
                        "lower mine.min_support or add trajectories")
    skill_vectors = embedder.encode([s.text() for s in extraction.skills])
    extraction = merge_near_duplicates(extraction, skill_vectors, merge_threshold(mine_cfg))
    _refresh_sources(extraction, trajectories)
    task_vectors = embedder.encode([t.task.question for t in trajectories])
    fit = discover_talents(extraction.usage, task_vectors, mine_cfg, seed)
    talents = _talents(fit, extraction.skills, trajectories, task_vectors, keywords, mine_cfg, writer)
    result = MineResult(trajectories, extraction.skills, talents, fit,
                        llm_stats=vars(writer.stats) if writer else {},
                        embed_stats=vars(embedder.stats) if hasattr(embedder, "stats") else {})
    write_outputs(out_dir, result)
    return result


def merge_threshold(mine_cfg: Any) -> float:
    """`mine.merge_cosine`, with `auto`: no merging for `template` skills, 0.95 otherwise.

    Template skills are distinct action patterns by construction, and their texts embed close
    whenever the patterns share words: at 0.95 WorldQA's bridge procedure (search, search the
    found entity, finish) merged into the single-hop one (search, finish), and talent purity
    against gold strategies fell from 0.853 to 0.766 (`talentrl pipeline paper --until mine`).
    Free-text (`llm`) skills do restate one procedure in different words; those are merged.
    """
    value = mine_cfg.merge_cosine
    if str(value) == "auto":
        return 1.0 if str(mine_cfg.extractor) == "template" else 0.95
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"mine.merge_cosine={value!r} is not a number",
                          "use a cosine in [0, 1] (1 disables merging) or auto") from None


def _writer(mine_cfg: Any) -> Any:
    if "llm" not in (str(mine_cfg.extractor), str(mine_cfg.namer)):
        return None
    from talentrl_cli.mining.llm import JsonWriter, make_generator

    return JsonWriter(make_generator(mine_cfg.llm), retries=int(mine_cfg.llm.retries))


def _refresh_sources(extraction: Any, trajectories: list[Trajectory]) -> None:
    for col, skill in enumerate(extraction.skills):
        rows = np.flatnonzero(extraction.usage[:, col])
        skill.support = len(rows)
        skill.source_trajectories = [trajectories[r].id for r in rows[:MAX_LISTED_SOURCES]]


def _talents(fit: TalentFit, skills: list[Skill], trajectories: list[Trajectory], vectors: np.ndarray,
             keywords: Keywords, mine_cfg: Any, writer: Any) -> list[Talent]:
    contexts, exemplar_rows = [], []
    for c in range(fit.weights.shape[0]):
        rows = np.flatnonzero(fit.labels == c)
        chosen = _exemplars(rows, vectors, int(mine_cfg.exemplars))
        exemplar_rows.append(chosen)
        contexts.append(TalentContext(
            index=c, top_skills=[skills[i] for i in top_skill_indices(fit.weights, c)],
            keywords=keywords.distinctive(rows, top=3),
            exemplars=[trajectories[r].task.question for r in chosen]))
    names = NAMERS.get(str(mine_cfg.namer))(contexts, writer=writer)
    return [
        Talent(name=named.name, description=named.description,
               skills={skills[i].id: round(float(fit.weights[c, i]), DIGITS)
                       for i in np.flatnonzero(fit.weights[c] >= 10 ** -DIGITS)},
               exemplars=contexts[c].exemplars, support=int(np.sum(fit.labels == c)),
               meta={"exemplar_ids": [trajectories[r].task.id for r in exemplar_rows[c]],
                     "keywords": contexts[c].keywords,
                     "demonstrations": [demonstration(trajectories[r]) for r in
                                        _diverse(np.flatnonzero(fit.labels == c), vectors, int(mine_cfg.demonstrations))]})
        for c, named in enumerate(names)
    ]


def demonstration(trajectory: Trajectory) -> dict[str, Any]:
    """An exemplar's question and actions, its final answer as a typed slot
    (`finish[<number>]`): the prompt shows it with other tasks only (`prompts`), and the slot
    keeps a coincidentally equal answer (yes, a year) out of every other task's context."""
    actions = [s.action.strip() for s in trajectory.steps]
    if actions:
        seen = set().union(*(vocabulary(s.observation) for s in trajectory.steps[:-1]))
        actions[-1] = describe_template(abstract_action(actions[-1], vocabulary(trajectory.task.question), seen))
    return {"task_id": trajectory.task.id, "question": trajectory.task.question, "actions": actions}


def _exemplars(rows: np.ndarray, vectors: np.ndarray, count: int) -> list[int]:
    """The members closest to the talent's embedding centroid (ties by position)."""
    if len(rows) == 0:
        return []
    centroid = vectors[rows].mean(axis=0)
    similarity = np.round(vectors[rows] @ centroid, 6)
    order = np.lexsort((rows, -similarity))
    return [int(rows[i]) for i in order[:count]]


def _diverse(rows: np.ndarray, vectors: np.ndarray, count: int) -> list[int]:
    """Up to `count` members spread over the talent: the one nearest its centroid, then each
    time the member least similar to those already chosen (farthest-point traversal). A
    talent often spans several question families (one lookup and two, say); the prompt shows
    the candidate whose question is nearest the task's (`prompts.demonstration`), so every
    family needs one."""
    chosen = _exemplars(rows, vectors, 1)
    if not chosen:
        return []
    nearest = vectors[rows] @ vectors[chosen[0]]
    while len(chosen) < min(count, len(rows)):
        pick = int(rows[int(np.argmin(np.round(nearest, 6)))])
        chosen.append(pick)
        nearest = np.maximum(nearest, vectors[rows] @ vectors[pick])
    return chosen


def write_outputs(out_dir: Path, result: MineResult) -> None:
    write_jsonl(out_dir / "skills.jsonl", result.skills)
    write_jsonl(out_dir / "talents.jsonl", result.talents)
    names = [t.name for t in result.talents]
    write_jsonl(out_dir / "labels.jsonl", (
        {"trajectory_id": t.id, "talent": names[int(result.fit.labels[i])],
         "membership": {names[c]: round(float(w), DIGITS)
                        for c, w in enumerate(result.fit.membership[i]) if w >= 10 ** -DIGITS}}
        for i, t in enumerate(result.trajectories)))
    # the labelled successes themselves, so `sft` needs only this artifact
    write_jsonl(out_dir / "trajectories.jsonl", result.trajectories)


def metrics(result: MineResult, gold: list[str | None]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "n_success": len(result.trajectories), "n_skills": len(result.skills),
        "n_talents": len(result.talents), "k_criterion": result.fit.criterion,
        "k_scores": {str(k): v for k, v in result.fit.k_scores.items()},
        "talent_sizes": {t.name: t.support for t in result.talents},
    }
    scores = agreement(result.fit.labels, gold)
    if scores:
        out.update(scores)
    if result.llm_stats:
        out["llm"] = {k: v for k, v in result.llm_stats.items() if k != "errors"}
    return out


def write_report(path: Path, result: MineResult, metrics: dict[str, Any], stats: ReadStats) -> None:
    from talentrl_cli.mining.report import render_report

    path.write_text(render_report(result, metrics, stats))
