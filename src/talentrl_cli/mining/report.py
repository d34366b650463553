"""`report.md` of a mine artifact: inputs, the talent table, agreement with gold, skills."""

from __future__ import annotations

from typing import Any

from talentrl_cli.jsonl import ReadStats

EXEMPLARS = [
    "How skills and talents are described: names and steps in slot words (`<task entity>`, "
    "`<found entity>`, `<number>`, ...), when-to-use and descriptions by the task words a group "
    "shares (in >= 10 % of its tasks, never a word some task capitalises past its start). "
    "Exemplars (`talents.jsonl`) are each talent's members nearest its embedding centroid. "
    "After routing, the prompt shows one as a demonstration (`meta.demonstrations`: its "
    "question and actions, its final answer as a slot such as `finish[<number>]`): the first "
    "exemplar that is not the task at hand and quotes none of its gold answers. So no prompt "
    "holds a value of its own task's trajectory, and an SFT example cannot copy its answer.",
]


def render_report(result: Any, metrics: dict[str, Any], stats: ReadStats) -> str:
    lines = ["# Mining report", ""]
    lines += _inputs(metrics, stats) + [""] + _talent_table(result) + [""] + EXEMPLARS + [""]
    lines += _agreement(metrics) + _k_selection(metrics) + _skill_table(result)
    return "\n".join(lines) + "\n"


def _inputs(metrics: dict[str, Any], stats: ReadStats) -> list[str]:
    out = [f"- trajectories: {metrics['n_trajectories']} "
           f"({metrics['n_success']} successful, {metrics['n_failed']} failed; failures yield no skills)",
           f"- skills: {metrics['n_skills']}; talents: {metrics['n_talents']}"]
    if stats.total_skipped:
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(stats.skipped.items()))
        out.append(f"- skipped input lines: {stats.total_skipped} ({reasons})")
        out += [f"  - e.g. `{example}`" for example in stats.examples]
    if "llm" in metrics:
        out.append(f"- LLM JSON requests: {metrics['llm']}")
    return out


def _talent_table(result: Any) -> list[str]:
    skills = {s.id: s for s in result.skills}
    out = ["## Talents", "", "| talent | size | description | top skills (w) |", "|---|---:|---|---|"]
    for talent in result.talents:
        top = sorted(talent.skills.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        listed = "<br>".join(f"{_cell(skills[sid].name)} ({w:.2f})" for sid, w in top)
        out.append(f"| `{talent.name}` | {talent.support} | {_cell(talent.description)} | {listed} |")
    return out


def _agreement(metrics: dict[str, Any]) -> list[str]:
    if "nmi" not in metrics:
        return ["No gold strategy labels: agreement not measured.", ""]
    return ["## Agreement with gold strategy labels", "",
            f"NMI **{metrics['nmi']:.3f}**, purity **{metrics['purity']:.3f}** over "
            f"{metrics['n_gold']} trajectories with {metrics['n_gold_classes']} gold classes.", ""]


def _k_selection(metrics: dict[str, Any]) -> list[str]:
    if not metrics.get("k_scores"):
        return []
    scores = ", ".join(f"K={k}: {v:.3f}" for k, v in metrics["k_scores"].items())
    return [f"K chosen by {metrics['k_criterion']} (higher is better): {scores}.", ""]


def _skill_table(result: Any, limit: int = 25) -> list[str]:
    out = ["## Skills (most supported first)", "", "| skill | support | when to use |", "|---|---:|---|"]
    for skill in sorted(result.skills, key=lambda s: (-s.support, s.id))[:limit]:
        out.append(f"| {_cell(skill.name)} | {skill.support} | {_cell(skill.when_to_use)} |")
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
