"""The paper-style comparison table of eval artifacts: `talentrl report`, and the end of a pipeline.

    talentrl report eval:v3 eval:v7                  # every mode of these evals, one row each
    talentrl report --pipeline paper paper.seeds=[0,1,2]   # the arms of a pipeline run, by step name

One row per arm (an eval step's name, or `<eval ref> <mode>`), pooled over its seeds:
EM, F1 and success with a bootstrap 95% CI over tasks (x seeds), routing accuracy, and the
deltas the paper reports, found from lineage rather than from names:
- an arm whose policy is an `sft` artifact: SFT - zero-shot, against the arm of the same seed
  that ran the base model (`inputs.model=none`, or eval's `<mode>@base` rows);
- an arm whose policy is an `rl` artifact: RL - SFT, against the arm of the same seed that
  evaluated the rl run's own input model (the same mode preferred).
Each delta has a paired bootstrap CI over tasks (every (seed, task) one unit) and, with two
seeds or more, a t interval over the per-seed means. Each row names its lineage (refs and
config hashes) and the report the command that made it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from talentrl_cli.errors import ArtifactError
from talentrl_cli.eval_report import SCORES, command_line, paired_diffs, percent_cell, row_scores


@dataclass
class Arm:
    """One eval mode of one eval artifact, under a row label and a seed."""

    label: str
    seed: int
    artifact: Any  # the eval artifact
    mode: str
    rows: list[dict[str, Any]]
    metrics: dict[str, Any]  # metrics.json's entry for the mode
    command: str = ""  # the command that made the eval artifact

    @property
    def policy(self) -> Any | None:
        """The model artifact the mode ran (None: the base model)."""
        if self.mode.endswith("@base"):
            return None
        return self.artifact.manifest.get("inputs", {}).get("model")


def arms_of(artifact: Any, label: str | None = None, seed: int | None = None) -> list[Arm]:
    """An eval artifact's modes as arms: labelled `label` (with ` <mode>` when it has several
    modes), else `<ref> <mode>`."""
    import json

    from talentrl_cli.jsonl import read_jsonl

    metrics = json.loads(artifact.file("metrics.json").read_text())
    by_mode: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in read_jsonl(artifact.file("results.jsonl")):
        by_mode[row["mode"]].append(row)
    seed = int(artifact.manifest["config"].get("seed", 0)) if seed is None else seed
    def name(mode: str) -> str:
        if not label:
            return f"{artifact.ref} {mode}"
        return f"{label} {mode}" if len(by_mode) > 1 else label

    return [Arm(name(mode), seed, artifact, mode, rows, metrics["modes"].get(mode, {}), metrics.get("command", ""))
            for mode, rows in by_mode.items()]


def build(arms: list[Arm], store: Any, n_bootstrap: int = 1000) -> dict[str, Any]:
    """The table's data: one entry per label (pooled over seeds), with deltas and lineage."""
    from talentrl_cli.metrics import bootstrap_ci

    by_label: dict[str, list[Arm]] = defaultdict(list)
    for arm in arms:
        by_label[arm.label].append(arm)
    table = []
    for label, group in by_label.items():
        rows = [r for arm in group for r in arm.rows]
        entry: dict[str, Any] = {"arm": label, "seeds": sorted({a.seed for a in group}), "n": len(rows)}
        for key in SCORES:
            entry[key] = [round(v, 4) for v in bootstrap_ci([row_scores(r)[key] for r in rows],
                                                           n_resamples=n_bootstrap)]
        routing = [a.metrics["routing_accuracy"][0] for a in group if "routing_accuracy" in a.metrics]
        entry["routing_accuracy"] = round(sum(routing) / len(routing), 4) if routing else None
        entry["delta"] = _delta(group, arms, store, n_bootstrap)
        entry["lineage"] = [lineage_line(a.artifact, store) for a in group]
        table.append(entry)
    return {"command": command_line(), "arms": table,
            "eval_commands": sorted({a.command for a in arms} - {""})}


def _delta(group: list[Arm], arms: list[Arm], store: Any, n_bootstrap: int) -> dict[str, Any] | None:
    """This arm against its lineage parent (per seed), pooled: SFT - zero-shot or RL - SFT."""
    from talentrl_cli.metrics import bootstrap_ci

    kind, diffs, per_seed, against = None, [], [], set()
    for arm in group:
        found = parent(arm, arms, store)
        if found is None:
            continue
        kind, base = found
        seed_diffs = paired_diffs(arm.rows, base.rows)
        diffs += seed_diffs
        per_seed.append(sum(seed_diffs) / max(1, len(seed_diffs)))
        against.add(base.label)
    if not diffs:
        return None
    out = {"kind": kind, "against": sorted(against), "n": len(diffs),
           "em_tasks": [round(v, 4) for v in bootstrap_ci(diffs, n_resamples=n_bootstrap)]}
    if len(per_seed) > 1:
        out["em_seeds"] = [round(v, 4) for v in t_interval(per_seed)]
    return out


def parent(arm: Arm, arms: list[Arm], store: Any) -> tuple[str, Arm] | None:
    """(kind, the arm it is compared with): the base model's zero-shot arm for an SFT policy,
    the arm of the rl run's input model for an RL policy; same seed."""
    policy = arm.policy
    if policy is None or policy.get("stage") not in ("sft", "rl"):
        return None
    same_seed = [a for a in arms if a.seed == arm.seed and a is not arm]
    if policy["stage"] == "sft":
        base = [a for a in same_seed if a.policy is None and a.mode.split("@")[0] == "zero_shot"]
        return ("SFT - zero-shot", base[0]) if base else None
    source = _input_model(policy, store)
    candidates = [a for a in same_seed if a.policy and source and a.policy.get("digest") == source.get("digest")]
    candidates.sort(key=lambda a: a.mode != arm.mode)  # the same eval mode first
    return ("RL - SFT", candidates[0]) if candidates else None


def _input_model(record: dict[str, Any], store: Any) -> dict[str, Any] | None:
    """The model input of the artifact `record` names (by ref: the store may have moved)."""
    try:
        return store.resolve(record["ref"]).manifest.get("inputs", {}).get("model")
    except ArtifactError:  # a deleted artifact has no lineage to follow
        return None


def lineage_line(artifact: Any, store: Any) -> str:
    """`eval:v9 [3fa2c1d0] <- rl:v3 [9b1c0e2a] <- sft:v1 [...]`: the model chain and config hashes."""
    parts = [f"{artifact.ref} [{artifact.manifest['config_hash'][:8]}]"]
    record = artifact.manifest.get("inputs", {}).get("model")
    while record:
        try:
            current = store.resolve(record["ref"])
        except ArtifactError:  # a deleted input still names its ref
            parts.append(f"{record['ref']} (missing)")
            break
        parts.append(f"{current.ref} [{current.manifest['config_hash'][:8]}]")
        record = current.manifest.get("inputs", {}).get("model")
    if len(parts) == 1:
        parts.append("base model")
    return " <- ".join(parts)


def t_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): Student's t interval of the mean, for a handful of seeds."""
    import numpy as np
    from scipy import stats

    data = np.asarray(values, dtype=float)
    mean = float(data.mean())
    if np.ptp(data) == 0:
        return mean, mean, mean
    spread = float(data.std(ddof=1)) / np.sqrt(data.size)
    half = float(stats.t.ppf(0.5 + confidence / 2, data.size - 1)) * spread
    return mean, mean - half, mean + half


# -- presentation -------------------------------------------------------------------------------


def _signed(triple: list[float]) -> str:
    return f"{100 * triple[0]:+.1f} [{100 * triple[1]:+.1f}, {100 * triple[2]:+.1f}]"


def _cells(e: dict[str, Any]) -> dict[str, str]:
    """One arm's table cells, shared by report.md and the terminal table."""
    d = e["delta"]
    return {"seeds": ",".join(map(str, e["seeds"])), **{k: percent_cell(e[k]) for k in SCORES},
            "routing": f"{100 * e['routing_accuracy']:.1f}" if e["routing_accuracy"] is not None else "-",
            "delta": f"{d['kind']}: {_signed(d['em_tasks'])}" if d else "-",
            "against": ", ".join(d["against"]) if d else "-",
            "seeds_ci": _signed(d["em_seeds"]) if d and "em_seeds" in d else "-"}


def markdown(table: dict[str, Any]) -> str:
    lines = ["# Comparison", "", "EM, F1 and success in %, with 95% bootstrap CIs over tasks (pooled over seeds).",
             "Deltas are paired: the same tasks and seed, against the arm named.", "",
             "| arm | seeds | n | EM | F1 | success | routing acc. | delta | against | delta CI over seeds |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for e in table["arms"]:
        c = _cells(e)
        lines.append(f"| {e['arm']} | {c['seeds']} | {e['n']} | {c['em']} | {c['f1']} | {c['success']} | "
                     f"{c['routing']} | {c['delta']} | {c['against']} | {c['seeds_ci']} |")
    lines += ["", "## Lineage", ""]
    lines += [f"- {e['arm']}: " + "; ".join(e["lineage"]) for e in table["arms"]]
    lines += ["", "## Commands", "", f"- this report: `{table['command']}`"]
    lines += [f"- eval: `{c}`" for c in table["eval_commands"]]
    return "\n".join(lines) + "\n"


def plot(table: dict[str, Any], path: Path) -> None:
    """Horizontal EM bars per arm with the bootstrap CI as error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    arms = table["arms"]
    vals = np.array([e["em"] for e in arms]) * 100
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(arms) + 1.5))
    y = np.arange(len(arms))[::-1]
    ax.barh(y, vals[:, 0], xerr=np.abs(vals[:, 1:].T - vals[:, 0]), capsize=3, color="tab:blue")
    ax.set_yticks(y, [e["arm"] for e in arms], fontsize=8)
    ax.set_xlabel("EM % (95% bootstrap CI)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write(table: dict[str, Any], out_dir: Path) -> list[Path]:
    """report.md, comparison.png and comparison.json into `out_dir`, each replaced atomically."""
    import json
    import os

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, render in (("report.md", lambda p: p.write_text(markdown(table))),
                         ("comparison.json", lambda p: p.write_text(json.dumps(table, indent=2) + "\n")),
                         ("comparison.png", lambda p: plot(table, p))):
        target = out_dir / name
        tmp = target.with_name(f".{name}.{os.getpid()}.tmp{target.suffix}")
        render(tmp)
        os.replace(tmp, target)
        written.append(target)
    return written


def print_table(table: dict[str, Any]) -> None:
    from rich.table import Table

    from talentrl_cli.progress import stderr_console

    out = Table(title="comparison (EM, F1, success %; 95% CI)", title_justify="left")
    for name in ("arm", "seeds", "EM", "F1", "success", "routing", "delta"):
        out.add_column(name, no_wrap=name in ("arm", "delta"))
    for e in table["arms"]:
        c = _cells(e)
        out.add_row(e["arm"], c["seeds"], c["em"], c["f1"], c["success"], c["routing"], c["delta"])
    stderr_console().print(out)


# -- sources: refs, or a pipeline run ----------------------------------------------------------


def arms_from_pipeline(results: list[Any]) -> list[Arm]:
    """The arms of a pipeline's eval steps (`PipelineResult`s), labelled by step name."""
    arms = []
    for done in results:
        if done.step.stage == "eval" and done.result is not None:
            arms += arms_of(done.result.artifact, label=done.step.name, seed=done.seed)
    return arms


def pipeline_report_dir(root: Path, spec: Any, extra: list[str]) -> Path:
    """`<root>/reports/<spec>[-<scale>][-<hash of the command-line overrides>]`: a run with other
    overrides (e.g. env.seed=7) gets its own folder rather than replacing another's table."""
    import hashlib

    name = spec.name + (f"-{spec.scale}" if spec.scale else "")
    if extra:
        name += "-" + hashlib.sha256("\n".join(sorted(extra)).encode()).hexdigest()[:8]
    return Path(root) / "reports" / name


def write_report(arms: list[Arm], store: Any, out_dir: Path) -> list[Path]:
    table = build(arms, store)
    print_table(table)
    return write(table, out_dir)
