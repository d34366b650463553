"""Rich terminal output for the light commands (artifacts, envs). Imported lazily."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

console = Console(highlight=False)


def print_artifact_table(artifacts: list[Any], broken: list[str] = ()) -> None:
    for message in broken:
        console.print(f"[bold red]UNREADABLE[/] {message}")
    if not artifacts:
        console.print("no readable artifacts" if broken else "no artifacts yet")
        return
    table = Table("ref", "created", "digest", "config", "inputs", "metrics")
    for a in artifacts:
        m = a.manifest
        inputs = ", ".join(f"{k}={v['ref']}" for k, v in m.get("inputs", {}).items()) or "-"
        table.add_row(a.ref, m.get("created", "?"), a.digest[:12], m["config_hash"][:8], inputs,
                      _short_metrics(m.get("metrics", {})))
    console.print(table)


def _short_metrics(metrics: dict[str, Any], limit: int = 3) -> str:
    scalars = [(k, v) for k, v in metrics.items() if isinstance(v, int | float)]
    return ", ".join(f"{k}={v:.4g}" for k, v in scalars[:limit]) or "-"


def print_verification(artifacts: list[Any], broken: list[str] = ()) -> bool:
    """Prints OK/FAILED per artifact (and per unreadable manifest); True when all are intact."""
    from talentrl_cli.artifacts import verify

    ok = not broken
    for message in broken:
        console.print(f"[bold red]FAILED[/] {message}")
    for artifact in artifacts:
        problems = verify(artifact)
        ok &= not problems
        status = "[green]OK[/]" if not problems else "[bold red]FAILED[/]"
        console.print(f"{status} {artifact.ref} ({artifact.path})")
        for problem in problems:
            console.print(f"   - {problem}")
    if not artifacts and not broken:
        console.print("nothing to verify")
    return ok


def print_lineage(node: dict[str, Any]) -> None:
    tree = Tree(_lineage_label(node))
    _add_children(tree, node)
    console.print(tree)


def _lineage_label(node: dict[str, Any]) -> str:
    if "missing" in node:
        return f"[red]{node['ref']}[/] {node['digest'][:12]} ({node['missing']})"
    return f"[bold]{node['ref']}[/] {node['digest'][:12]} {node.get('created', '')}"


def _add_children(tree: Tree, node: dict[str, Any]) -> None:
    for name, child in node.get("inputs", {}).items():
        branch = tree.add(f"{name}: {_lineage_label(child)}")
        _add_children(branch, child)


def print_env_list() -> None:
    import talentrl_cli.envs.builtin  # noqa: F401
    from talentrl_cli.envs import ENVS

    table = Table("name", "status", "about")
    for name in ENVS.names():
        env = ENVS.get(name)
        doc = (env.__doc__ or "").strip().splitlines()
        table.add_row(name, env.availability() or "ready", doc[0] if doc else "")
    console.print(table)


def print_env_sample(name: str, *, n: int, split: str, overrides: list[str]) -> None:
    """Tasks of a split and, where the env has a scripted expert, its trajectory on each.

    The trajectory is meant as a clean demonstration of the tools, so an expert that models
    realistic errors (WorldQA's `noise`, 0.2 by default for training data) runs at noise 0;
    an env without an expert shows its tasks only."""
    import inspect

    from rich.panel import Panel

    from talentrl_cli import prompts
    from talentrl_cli.config import compose
    from talentrl_cli.envs import make_env

    cfg = compose([f"env={name}", *overrides])
    env = make_env(name, cfg.env, seed=int(cfg.seed))
    expert = getattr(env, "expert_trajectory", None)
    clean = {"noise": 0.0} if expert and "noise" in inspect.signature(expert).parameters else {}
    for task in env.tasks(split)[:n]:
        facts = f"answers: {task.answers}\nstrategy: {task.strategy}\nplan: {task.plan}"
        opening = prompts.first_observation(task)
        text = f"{task.question}\n\n{opening}\n\n{facts}" if opening else f"{task.question}\n\n{facts}"
        console.print(Panel(escape(text), title=escape(task.id), expand=False))
        if expert is not None:
            _print_trajectory(expert(task, **clean))


def _print_trajectory(trajectory: Any) -> None:
    for i, step in enumerate(trajectory.steps, 1):
        if step.thought:
            console.print(f"[cyan]Thought {i}:[/] {escape(step.thought)}")
        # actions are `tool[argument]`: unescaped, rich reads `[argument]` as a markup tag and drops it
        console.print(f"[magenta]Action {i}:[/] {escape(step.action)}")
        console.print(f"[dim]Observation {i}:[/] {escape(step.observation[:300])}")
    console.print(f"success: {trajectory.success}  answer: {escape(str(trajectory.final_answer))}\n")


def print_skill_ranking(store: Any, index_ref: str, text: str, talent: str | None, k: int,
                        overrides: list[str]) -> None:
    """`talentrl index query`: the ranking with cos, prior and total per skill."""
    from talentrl_cli.config import compose
    from talentrl_cli.embedding import Embedder
    from talentrl_cli.skillbank import SkillBank

    cfg = compose(overrides)
    artifact = store.resolve_verified(index_ref)
    embedder = Embedder.from_config(cfg.embedder)
    bank = SkillBank.load(artifact.path, embedder.identity(), int(cfg.index.oversample))
    hits = bank.retrieve(embedder.encode([text]), talent, k=k, lam=float(cfg.index.lam))[0]
    if talent is not None:
        console.print(f"[bold]{talent}[/]: {bank.talents[bank.talent_pos[talent]].description}")
    table = Table("#", "skill", "cos", "prior", "total", title=f"{artifact.ref}  lam={cfg.index.lam}")
    for rank, hit in enumerate(hits, 1):
        skill = bank.skill_by_id[hit.skill_id]
        table.add_row(str(rank), f"{skill.name}\n[dim]{skill.when_to_use}[/]", f"{hit.cos:.3f}",
                      f"{hit.prior:.3f}", f"{hit.score:.3f}")
    console.print(table)


# -- stage and pipeline summaries (stderr: stdout's last line stays the published ref) ---------


def headline(result: Any) -> str:
    """The metrics the stage declares as its headline (`Stage.headline`), else its first number."""
    import fnmatch

    metrics = result.artifact.manifest.get("metrics", {}) if result.artifact else {}
    scalars = {k: v for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    patterns = result.plan.stage.headline
    if not patterns:
        return _short_metrics(scalars, limit=1) if scalars else ""
    chosen = [k for k in scalars if any(fnmatch.fnmatchcase(k, p) for p in patterns)]
    chosen.sort(key=lambda k: next(i for i, p in enumerate(patterns) if fnmatch.fnmatchcase(k, p)))
    return ", ".join(f"{k}={_number(scalars[k])}" for k in chosen)


def _number(value: float) -> str:
    """4 significant digits, without exponents for large values (tokens_per_s=22550)."""
    return f"{value:.0f}" if abs(value) >= 1e4 else f"{value:.4g}"


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m {rest:02d}s"


def stage_done_line(result: Any) -> str:
    """`sft:v2 published in 34.2 s (loss_start=6.23, loss_end=6.18)` after a stage command."""
    verb = "reused" if result.reused else "published"
    key = headline(result)
    return f"{result.artifact.ref} {verb} in {duration(result.seconds)}" + (f" ({key})" if key else "")


MAX_OUTPUT_LINES = 12


def print_pipeline_summary(results: list[Any], root: Any) -> None:
    """Each step's name (and seed), ref, whether it ran, its wall time and headline metrics;
    then where the artifacts, reports and plots are, and how to run `talentrl` directly.
    `results`: the pipeline's `PipelineResult`s."""
    from talentrl_cli.progress import stderr_console

    err = stderr_console()
    done = [p for p in results if p.result is not None]
    table = Table("step", "ref", "status", "time", "key metrics", title="pipeline summary",
                  caption=f"total {duration(sum(p.result.seconds for p in done))}", title_justify="left")
    for p in done:
        r = p.result
        table.add_row(p.label, r.artifact.ref, "reused" if r.reused else "ran", duration(r.seconds),
                      headline(r) or "-")
    err.print(table)
    err.print(f"artifacts root: {_short_path(root)}")
    outputs = _output_lines([p.result for p in done])
    for line in outputs[:MAX_OUTPUT_LINES]:
        err.print(line)
    if len(outputs) > MAX_OUTPUT_LINES:  # a long pipeline (paper.yaml): its table is the comparison report
        err.print(f"  ... and {len(outputs) - MAX_OUTPUT_LINES} more lines of earlier steps' reports "
                  "(talentrl artifacts list)")
    err.print(cli_hint())


def _output_lines(results: list[Any]) -> list[str]:
    """`<ref>: <folder>` with its report.md and PNG plots, the last step first (the eval)."""
    lines, shown = [], set()
    for r in reversed(results):
        path = r.artifact.path
        reports, plots = [p for p in [path / "report.md"] if p.is_file()], sorted(path.glob("*.png"))
        if (r is results[-1] or reports or plots) and path not in shown:
            shown.add(path)
            lines.append(f"{r.artifact.ref}: {_short_path(path)}")
            lines += [f"  report: {_short_path(p)}" for p in reports]
            lines += [f"  plot:   {_short_path(p)}" for p in plots]
    return lines


def cli_hint() -> str:
    """Where the `talentrl` executable is, for a shell that lacks it: `nox -s demo` installs
    it into `.nox/demo`, whose bin/ is on PATH only inside nox."""
    import os
    import shutil
    import sys
    from pathlib import Path

    bindir = Path(sys.prefix) / ("Scripts" if os.name == "nt" else "bin")
    exe = bindir / ("talentrl.exe" if os.name == "nt" else "talentrl")
    activated = os.environ.get("VIRTUAL_ENV") == sys.prefix and "NOX_CURRENT_SESSION" not in os.environ
    if sys.prefix != sys.base_prefix and exe.is_file() and not activated:
        return (f"run talentrl directly: {_short_path(exe)} --help  "
                f"(or put it on PATH: source {_short_path(bindir / 'activate')})")
    found = shutil.which("talentrl")
    if found:
        return f"run talentrl directly: talentrl --help  ({found})"
    return "talentrl is not installed as a command here: `pip install -e .` in the checkout installs it"


def _short_path(path: Any) -> str:
    """Relative to the working directory when below it (shorter, copy-pasteable), else absolute."""
    from pathlib import Path

    absolute = Path(path).resolve()
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)
