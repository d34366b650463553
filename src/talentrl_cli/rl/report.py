"""`report.md` and `curves.png` of an rl artifact: reward, routing accuracy and (with
`rl.eval_every`) held-out greedy EM per step, and where the execution credit of the logged
rollouts went, by action kind."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

COLUMNS = ("step", "reward_drawn_mean", "reward_mean", "groups_trained", "em_mean", "dev_em", "route_acc",
           "route_entropy", "a_route_std", "route_signal_share", "zero_adv_share", "kl", "clip_frac",
           "grad_norm", "seconds")


def write_report(out_dir: Path, rows: list[dict[str, Any]], cfg: Any) -> None:
    rl = cfg.rl
    lines = ["# talentrl rl", "",
             f"routing_credit={rl.routing_credit}, routing_estimator={rl.routing_estimator}, "
             f"intervention={rl.intervention}, talents={rl.talents}, skills={rl.skills}, G={rl.group_size}, "
             f"M={rl.interventions}, lr={rl.lr}, beta={rl.beta}, route_beta={rl.route_beta}, {len(rows)} steps", "",
             "![curves](curves.png)", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cell(r.get(c)) for c in COLUMNS) + " |" for r in rows]
    logged = out_dir / "rollouts.jsonl"
    if logged.is_file():
        with logged.open() as handle:
            lines += credit_lines(credit_by_action([json.loads(line) for line in handle]))
    (out_dir / "report.md").write_text("\n".join(lines) + "\n")
    plot_curves(rows, out_dir / "curves.png")


def credit_by_action(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per action kind (an action's leading word, `invalid` for an unparsed turn): turns,
    generated tokens, and the execution advantage they received, summed (A_exec x tokens)
    and per token. Its sign says which behaviour the step's gradient pushed up or down:
    e.g. `search` negative and `finish` positive is a run learning to stop searching."""
    table: dict[str, dict[str, float]] = defaultdict(lambda: {"turns": 0, "tokens": 0, "credit": 0.0})
    for record in records:
        for step in record.get("steps", []):
            word = re.match(r"[a-z_]+", str(step.get("action", "")).strip().lower())
            kind = word.group(0) if step.get("valid", True) and word else "invalid"
            row, tokens = table[kind], int(step.get("tokens", 0))
            row["turns"] += 1
            row["tokens"] += tokens
            row["credit"] += float(record.get("a_exec", 0.0)) * tokens
    for row in table.values():
        row["per_token"] = row["credit"] / row["tokens"] if row["tokens"] else 0.0
    return dict(sorted(table.items()))


def credit_lines(table: dict[str, dict[str, float]]) -> list[str]:
    if not table:
        return []
    lines = ["", "## Execution credit by action (the logged rollouts)", "",
             "| action | turns | tokens | sum A_exec x tokens | A_exec per token |", "|---|---|---|---|---|"]
    return lines + [f"| {kind} | {r['turns']} | {r['tokens']} | {r['credit']:+.1f} | {r['per_token']:+.3f} |"
                    for kind, r in table.items()]


def plot_curves(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r["step"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    drawn = [r.get("reward_drawn_mean", r["reward_mean"]) for r in rows]
    ax.plot(steps, drawn, label="reward (every drawn group)")
    if any(r.get("groups_trained") != r.get("groups_drawn") for r in rows):  # rl.filter_groups kept a subset
        trained = [(r["step"], r["reward_mean"]) for r in rows if r.get("groups_trained")]
        if trained:
            ax.plot(*zip(*trained, strict=True), linestyle="--", label="reward (trained groups)")
    acc = [(r["step"], r["route_acc"]) for r in rows if r.get("route_acc") is not None]
    if acc:
        ax.plot(*zip(*acc, strict=True), label="routing accuracy")
    dev = [(r["step"], r["dev_em"]) for r in rows if r.get("dev_em") is not None]
    if dev and rows[-1].get("dev_em_final") is not None:
        dev.append((rows[-1]["step"] + 1, rows[-1]["dev_em_final"]))
    if dev:
        ax.plot(*zip(*dev, strict=True), marker="o", label="held-out EM (greedy)")
    ax.set_xlabel("step")
    ax.set_ylim(0, 1)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)
