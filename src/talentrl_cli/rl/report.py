"""`report.md` and `curves.png` of an rl artifact: reward, routing accuracy and (with
`rl.eval_every`) held-out greedy EM per step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

COLUMNS = ("step", "reward_mean", "em_mean", "dev_em", "route_acc", "route_entropy", "a_route_std", "zero_adv_share",
           "kl", "clip_frac", "grad_norm", "seconds")


def write_report(out_dir: Path, rows: list[dict[str, Any]], cfg: Any) -> None:
    rl = cfg.rl
    lines = ["# talentrl rl", "",
             f"routing_credit={rl.routing_credit}, routing_estimator={rl.routing_estimator}, "
             f"intervention={rl.intervention}, talents={rl.talents}, skills={rl.skills}, G={rl.group_size}, "
             f"M={rl.interventions}, lr={rl.lr}, beta={rl.beta}, {len(rows)} steps", "",
             "![curves](curves.png)", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cell(r.get(c)) for c in COLUMNS) + " |" for r in rows]
    (out_dir / "report.md").write_text("\n".join(lines) + "\n")
    plot_curves(rows, out_dir / "curves.png")


def plot_curves(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r["step"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(steps, [r["reward_mean"] for r in rows], label="reward")
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
