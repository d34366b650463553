"""Eval metrics and their presentation: bootstrap CIs, `report.md`, PNG plots, a rich table,
and a W&B table when tracking is on.

Kept apart from `stages/eval.py` so RL (step 7) can summarise its own eval rollouts the same
way, and so the report can be re-rendered from a `results.jsonl` without a model.
"""

from __future__ import annotations

import shlex
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SCORES = ("em", "f1", "success")


# (a, b): how much the talent choice matters (oracle vs random) and what routing gains over chance
PAIRS = (("oracle_talent", "random_talent"), ("talent", "random_talent"), ("oracle_talent", "talent"))


def summarise(rows: list[dict[str, Any]], talent_to_strategy: dict[str, str], benchmark: str,
              n_bootstrap: int = 1000, seed: int = 0, unseen: Sequence[str] = (),
              oracle: dict[str, str] | None = None) -> dict[str, Any]:
    """Per-mode metrics: each score as [mean, low, high] (bootstrap 95% CI), routing
    accuracy against gold where gold exists, talent usage, turns, tokens, per-strategy;
    with `unseen` (the strategies the policy was not trained on), EM on seen and unseen
    tasks apart; and the paired EM differences of `PAIRS` on the same tasks. `oracle`: the
    gold strategy -> talent map `oracle_talent` used (default: `talent_to_strategy` inverted)."""
    by_mode: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_mode[row["mode"]].append(row)
    modes = {m: _mode_metrics(r, talent_to_strategy, n_bootstrap, seed) for m, r in by_mode.items()}
    groups = _transfer_groups(unseen)
    if unseen:
        for mode, mode_rows in by_mode.items():
            modes[mode]["transfer"] = {g: _em(mode_rows, keep, n_bootstrap, seed) for g, keep in groups.items()}
    covered = set(oracle) if oracle else set(talent_to_strategy.values())
    groups = {"all": None, **_mapped_group(rows, covered), **groups}
    paired = {f"{a} - {b}": {g: paired_difference(by_mode[a], by_mode[b], keep, n_bootstrap, seed)
                             for g, keep in groups.items()}
              for a, b in PAIRS if a in by_mode and b in by_mode}
    return {"benchmark": benchmark, "command": command_line(), "n_tasks": max(map(len, by_mode.values()), default=0),
            "unseen_strategies": sorted(unseen), "modes": modes, "paired": paired}


def _mapped_group(rows: list[dict[str, Any]], mapped: set[str]) -> dict[str, Any]:
    """`gold-mapped`: the tasks whose gold strategy the oracle maps to a talent, when others
    exist. On the others `oracle_talent` is the best of every talent's rollout, which also
    selects rollout luck, so only this group measures the routing choice alone."""
    if not mapped or all(r.get("strategy") in mapped for r in rows if r.get("strategy")):
        return {}
    return {"gold-mapped": lambda r: r.get("strategy") in mapped}


def _transfer_groups(unseen: Sequence[str]) -> dict[str, Any]:
    if not unseen:
        return {}
    names = set(unseen)
    return {"seen": lambda r: r.get("strategy") not in names, "unseen": lambda r: r.get("strategy") in names}


def _em(rows: list[dict[str, Any]], keep: Any, n_bootstrap: int, seed: int) -> dict[str, Any]:
    from talentrl_cli.metrics import bootstrap_ci

    ems = [row_scores(r)["em"] for r in rows if keep(r)]
    return {"n": len(ems), "em": [round(v, 4) for v in bootstrap_ci(ems, n_resamples=n_bootstrap, seed=seed)]}


def paired_difference(rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]], keep: Any = None,
                      n_bootstrap: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Mean EM(a) - EM(b) over the tasks both modes ran (restricted by `keep`), with a
    paired bootstrap 95% CI: each task's difference is resampled as one unit, so the
    interval is far tighter than two independent CIs when most tasks agree."""
    from talentrl_cli.metrics import bootstrap_ci

    diffs = paired_diffs(rows_a, rows_b, keep)
    return {"n": len(diffs), "em": [round(v, 4) for v in bootstrap_ci(diffs, n_resamples=n_bootstrap, seed=seed)]}


def paired_diffs(rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]], keep: Any = None) -> list[float]:
    """EM(a) - EM(b) per task both ran (rows of a kept by `keep`), in a's order."""
    em_b = {r["task_id"]: row_scores(r)["em"] for r in rows_b}
    return [row_scores(r)["em"] - em_b[r["task_id"]] for r in rows_a
            if r["task_id"] in em_b and (keep is None or keep(r))]


def row_scores(row: dict[str, Any]) -> dict[str, float]:
    from talentrl_cli.metrics import outcome_scores

    return outcome_scores(row["scores"], row["reward"])


def _mode_metrics(rows: list[dict[str, Any]], mapping: dict[str, str], n_bootstrap: int, seed: int) -> dict[str, Any]:
    from talentrl_cli.metrics import bootstrap_ci

    scores = [row_scores(r) for r in rows]
    out: dict[str, Any] = {k: [round(v, 4) for v in bootstrap_ci([s[k] for s in scores], n_resamples=n_bootstrap,
                                                                 seed=seed)] for k in SCORES}
    out["n"] = len(rows)
    out["mean_turns"] = round(sum(r["turns"] for r in rows) / max(1, len(rows)), 3)
    out["mean_tokens"] = round(sum(r["policy_tokens"] for r in rows) / max(1, len(rows)), 1)
    # gave an answer, or the env ended the episode itself (a game won or lost)
    out["finished"] = round(sum(r["end"] in ("finish", "env") for r in rows) / max(1, len(rows)), 4)
    usage = Counter(r["talent"] for r in rows if r["talent"])
    out["talent_usage"] = {t: round(c / len(rows), 4) for t, c in usage.most_common()}
    out["by_strategy"] = _by_strategy(rows, scores)
    gold = [(r, mapping.get(r["talent"])) for r in rows if r.get("strategy") and r["talent"]]
    if gold and mapping:
        hits = [float(m == r["strategy"]) for r, m in gold]
        out["routing_accuracy"] = [round(v, 4) for v in bootstrap_ci(hits, n_resamples=n_bootstrap, seed=seed)]
        out["confusion"] = _confusion(rows)
    return out


def _by_strategy(rows: list[dict[str, Any]], scores: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for row, s in zip(rows, scores, strict=True):
        groups[row.get("strategy") or "unknown"].append(s)
    return {g: {"n": len(v), **{k: round(sum(s[k] for s in v) / len(v), 4) for k in SCORES}}
            for g, v in sorted(groups.items())}


def _confusion(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """gold strategy -> chosen talent -> count."""
    table: dict[str, Counter] = defaultdict(Counter)
    for r in rows:
        if r.get("strategy") and r["talent"]:
            table[r["strategy"]][r["talent"]] += 1
    return {g: dict(c) for g, c in sorted(table.items())}


def command_line() -> str:
    args = sys.argv[1:] if sys.argv and Path(sys.argv[0]).name in ("talentrl", "__main__.py") else sys.argv[1:]
    return "talentrl " + " ".join(shlex.quote(a) for a in args)


def flat_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    """The manifest's summary: `<mode>/<score>` means and CIs, plus the benchmark."""
    out: dict[str, Any] = {"benchmark": metrics["benchmark"], "n_tasks": metrics["n_tasks"]}
    for mode, m in metrics["modes"].items():
        for key in (*SCORES, "routing_accuracy"):
            if key in m:
                out[f"{mode}/{key}"], out[f"{mode}/{key}_ci"] = m[key][0], m[key][1:]
        out[f"{mode}/mean_turns"], out[f"{mode}/mean_tokens"] = m["mean_turns"], m["mean_tokens"]
        out[f"{mode}/finished"] = m.get("finished")
    return out


def _share(mode_metrics: dict[str, Any]) -> str:
    """% of episodes that ended with an answer (results from older versions lack it)."""
    share = mode_metrics.get("finished")
    return "-" if share is None else f"{100 * share:.0f}%"


def percent_cell(triple: list[float]) -> str:
    """`35.8 [26.7, 45.0]`: a [mean, low, high] share in %."""
    return f"{100 * triple[0]:.1f} [{100 * triple[1]:.1f}, {100 * triple[2]:.1f}]"


def markdown(metrics: dict[str, Any]) -> str:
    bench = metrics["benchmark"]
    lines = ["# talentrl eval", "", f"Command: `{metrics['command']}`", "",
             f"Benchmark `{bench}`, {metrics['n_tasks']} tasks; scores in %, bootstrap 95% CI.", "",
             f"| mode | {bench} EM | F1 | success | routing acc. | finished | turns | tokens |",
             "|---|---|---|---|---|---|---|---|"]
    for mode, m in metrics["modes"].items():
        route = percent_cell(m["routing_accuracy"]) if "routing_accuracy" in m else "-"
        lines.append(f"| {mode} | {percent_cell(m['em'])} | {percent_cell(m['f1'])} | "
                     f"{percent_cell(m['success'])} | {route} | {_share(m)} | {m['mean_turns']} | {m['mean_tokens']} |")
    lines += ["", "## Per strategy (EM %)", ""]
    strategies = sorted({s for m in metrics["modes"].values() for s in m["by_strategy"]})
    lines += ["| mode | " + " | ".join(strategies) + " |", "|---|" + "---|" * len(strategies)]
    for mode, m in metrics["modes"].items():
        cells = [f"{100 * m['by_strategy'][s]['em']:.1f}" if s in m["by_strategy"] else "-" for s in strategies]
        lines.append(f"| {mode} | " + " | ".join(cells) + " |")
    lines += _transfer_lines(metrics) + _paired_lines(metrics)
    lines += ["", "## Talent usage", ""]
    for mode, m in metrics["modes"].items():
        if m["talent_usage"]:
            lines.append(f"- {mode}: " + ", ".join(f"{t} {100 * p:.0f}%" for t, p in m["talent_usage"].items()))
    lines += ["", "Plots: `scores.png` (EM/F1 with 95% CIs)" +
              (", `routing_confusion.png` (gold strategy x chosen talent)" if _confusion_mode(metrics) else ""), ""]
    return "\n".join(lines)


def _transfer_lines(metrics: dict[str, Any]) -> list[str]:
    if not metrics.get("unseen_strategies"):
        return []
    lines = ["", f"## Seen and unseen strategies (EM %; unseen in SFT: {', '.join(metrics['unseen_strategies'])})", "",
             "| mode | seen | unseen |", "|---|---|---|"]
    for mode, m in metrics["modes"].items():
        t = m.get("transfer", {})
        lines.append(f"| {mode} | " + " | ".join(f"{percent_cell(t[g]['em'])} (n={t[g]['n']})" if g in t else "-"
                                               for g in ("seen", "unseen")) + " |")
    return lines


def _paired_lines(metrics: dict[str, Any]) -> list[str]:
    if not metrics.get("paired"):
        return []
    groups = sorted({g for by_group in metrics["paired"].values() for g in by_group},
                    key=("all", "gold-mapped", "seen", "unseen").index)
    lines = ["", "## Does the talent matter? Paired EM differences (points, paired bootstrap 95% CI)", "",
             "| a - b | " + " | ".join(groups) + " |", "|---|" + "---|" * len(groups)]
    for pair, by_group in metrics["paired"].items():
        cells = [_signed(by_group[g]) if g in by_group else "-" for g in groups]
        lines.append(f"| {pair} | " + " | ".join(cells) + " |")
    return lines


def _signed(diff: dict[str, Any]) -> str:
    mean, low, high = (100 * v for v in diff["em"])
    return f"{mean:+.1f} [{low:+.1f}, {high:+.1f}] (n={diff['n']})"


def _confusion_mode(metrics: dict[str, Any]) -> str | None:
    for mode in ("talent", "random_talent", "oracle_talent"):
        if metrics["modes"].get(mode, {}).get("confusion"):
            return mode
    return None


def write_report(out_dir: Path, metrics: dict[str, Any], rows: list[dict[str, Any]], mapping: dict[str, str]) -> None:
    (out_dir / "report.md").write_text(markdown(metrics))
    plot_scores(metrics, out_dir / "scores.png")
    mode = _confusion_mode(metrics)
    if mode:
        plot_confusion(metrics["modes"][mode]["confusion"], mode, out_dir / "routing_confusion.png")


def plot_scores(metrics: dict[str, Any], path: Path) -> None:
    """Grouped bars (EM, F1) per mode, with the bootstrap CI as error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    modes = list(metrics["modes"])
    x = np.arange(len(modes))
    fig, ax = plt.subplots(figsize=(1.6 * len(modes) + 2, 3.5))
    for j, key in enumerate(("em", "f1")):
        vals = np.array([metrics["modes"][m][key] for m in modes]) * 100
        err = np.abs(vals[:, 1:].T - vals[:, 0])
        ax.bar(x + (j - 0.5) * 0.38, vals[:, 0], 0.38, yerr=err, capsize=3, label=key.upper())
    ax.set_xticks(x, modes)
    ax.set_ylabel("%")
    ax.set_title(f"{metrics['benchmark']} (95% bootstrap CI)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_confusion(confusion: dict[str, dict[str, int]], mode: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    gold = sorted(confusion)
    talents = sorted({t for row in confusion.values() for t in row})
    grid = np.array([[confusion[g].get(t, 0) for t in talents] for g in gold])
    fig, ax = plt.subplots(figsize=(1.0 * len(talents) + 3, 0.5 * len(gold) + 2))
    ax.imshow(grid, cmap="Blues")
    ax.set_xticks(range(len(talents)), talents, rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(len(gold)), gold, fontsize=8)
    for (i, j), v in np.ndenumerate(grid):
        ax.text(j, i, str(v), ha="center", va="center", fontsize=7)
    ax.set_xlabel(f"chosen talent ({mode})")
    ax.set_ylabel("gold strategy")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def print_table(metrics: dict[str, Any], console: Any = None) -> None:
    """The mode x score table on stderr (stdout's last line stays the published ref); pass the
    stage display's console while it is live, so the table prints above it, not through it."""
    from rich.table import Table

    from talentrl_cli.progress import stderr_console

    table = Table(title=f"talentrl eval: {metrics['benchmark']} ({metrics['n_tasks']} tasks, 95% CI)")
    for col in ("mode", "EM", "F1", "success", "routing acc.", "finished", "turns", "tokens"):
        table.add_column(col)
    for mode, m in metrics["modes"].items():
        route = percent_cell(m["routing_accuracy"]) if "routing_accuracy" in m else "-"
        table.add_row(mode, percent_cell(m["em"]), percent_cell(m["f1"]), percent_cell(m["success"]), route,
                      _share(m),
                      str(m["mean_turns"]), str(m["mean_tokens"]))
    (console or stderr_console()).print(table)


def log_wandb_table(metrics: dict[str, Any]) -> None:
    """A W&B table of the results, into the run the stage runner opened (if any)."""
    from talentrl_cli.tracking import active_run

    run = active_run()
    if run is None:
        return
    import wandb

    columns = ["mode", "benchmark", "em", "em_low", "em_high", "f1", "success", "routing_accuracy"]
    rows = [[mode, metrics["benchmark"], *m["em"], m["f1"][0], m["success"][0],
             m.get("routing_accuracy", [None])[0]] for mode, m in metrics["modes"].items()]
    run.log({"eval/results": wandb.Table(columns=columns, rows=rows)})
