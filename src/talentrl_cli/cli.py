"""The `talentrl` command line: a thin Typer layer that parses, then calls one function.

    talentrl [--artifacts-root PATH] [-v] COMMAND ...

Stage commands (mine, index, sft, rl, eval) are generated from the stage registry; each
gets `--force`, `--dry-run` and Hydra overrides after its options. Heavy libraries are
imported inside the commands only, so `talentrl --help` stays fast.
"""

from __future__ import annotations

import errno
import os
import re
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from talentrl_cli import __version__
from talentrl_cli.errors import TalentRLError
from talentrl_cli.stages import Stage, load_builtin_stages

_state: dict[str, Any] = {"root": None, "verbose": False}

OverridesArg = Annotated[
    list[str] | None,
    typer.Argument(help="Hydra overrides after the options, e.g. model=smollm2 sft.lr=1e-4, "
                        "and input refs, e.g. inputs.mine=mine:v3", show_default=False),
]


def _version(value: bool) -> None:
    if value:
        print(f"talentrl {__version__}")
        raise typer.Exit()


def _global_options(
    artifacts_root: Annotated[Path | None, typer.Option(
        "--artifacts-root", envvar="TALENTRL_HOME",
        help="Artifact store root (default ./artifacts).")] = None,
    verbose: Annotated[bool, typer.Option("-v", "--verbose", help="Debug logs and full tracebacks.")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """TalentRL: train LLM agents to pick a talent (strategy) before they act.

    Stages: mine -> index -> sft -> rl -> eval, each publishing a versioned artifact.
    Example: talentrl pipeline stages/demo.yaml
    """
    from talentrl_cli.progress import quiet_libraries

    _state["root"] = artifacts_root
    _state["verbose"] = verbose
    quiet_libraries(verbose)  # every command passes here; the stages' displays replace the noise
    if verbose:
        import logging

        logging.basicConfig(level=logging.DEBUG)


def _store():
    from talentrl_cli.artifacts import ArtifactStore
    from talentrl_cli.runner import default_root

    return ArtifactStore(_state["root"] or default_root())


def _stderr(message: str) -> None:
    from rich.console import Console

    Console(stderr=True, highlight=False, soft_wrap=True).print(message)


# -- stage commands ---------------------------------------------------------------------------


def _stage_command(stage: Stage):
    def command(
        force: Annotated[bool, typer.Option("--force", help="Rerun even if a matching artifact exists.")] = False,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the resolved config and inputs; run nothing.")] = False,
        overrides: OverridesArg = None,
        **flags: bool,
    ) -> None:
        from talentrl_cli.runner import execute_stage

        extra = [stage.flags[name][0] for name, on in flags.items() if on]
        result = execute_stage(stage.name, [*extra, *(overrides or [])], _store(), force=force,
                               dry_run=dry_run, log=_stderr)
        if dry_run:
            _print_plan(result.plan)
            return
        from talentrl_cli.report import stage_done_line

        _stderr(_escape(stage_done_line(result)))
        print(result.artifact.ref)

    command.__doc__ = stage.summary
    return _with_flags(command, stage)


def _with_flags(command: Any, stage: Stage) -> Any:
    """Declare each of the stage's `flags` as a boolean `--NAME` option of its command."""
    import inspect

    signature = inspect.signature(command, eval_str=True)
    params = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    for name, (override, help_) in stage.flags.items():
        option = Annotated[bool, typer.Option(f"--{name}", help=f"{help_} (same as {override})")]
        params.insert(-1, inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=False,
                                            annotation=option))
        command.__annotations__[name] = option
    command.__signature__ = signature.replace(parameters=params)
    return command


def _stage_group(stage: Stage, subcommands: dict[str, Any]) -> typer.Typer:
    """A stage that also has subcommands (`talentrl index query ...`): the group takes the
    stage's options; any first argument that is not a subcommand runs the stage."""
    from typer.core import TyperGroup

    class StageGroup(TyperGroup):
        def resolve_command(self, ctx: Any, args: list[str]) -> Any:
            if args and args[0] in subcommands:
                return super().resolve_command(ctx, args)
            return "run", self.commands["run"], args

    group = typer.Typer(cls=StageGroup, invoke_without_command=True, no_args_is_help=False)
    run_stage = _stage_command(stage)

    @group.callback(epilog=f"Example: {stage.example}\n\nSubcommands: {', '.join(subcommands)}")
    def options(
        ctx: typer.Context,
        force: Annotated[bool, typer.Option("--force", help="Rerun even if a matching artifact exists.")] = False,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the resolved config and inputs; run nothing.")] = False,
    ) -> None:
        ctx.obj = {"force": force, "dry_run": dry_run}
        if ctx.invoked_subcommand is None:
            run_stage(force=force, dry_run=dry_run, overrides=[])

    @group.command("run", hidden=True, epilog=f"Example: {stage.example}")
    def run(ctx: typer.Context, overrides: OverridesArg = None) -> None:
        run_stage(overrides=overrides, **ctx.obj)

    options.__doc__ = f"{stage.summary} Options come before OVERRIDES (key=value)."
    for name, command in subcommands.items():
        group.command(name, epilog=f"Example: {command.example}")(command)
    return group


def index_query(
    text: Annotated[str, typer.Argument(help="The task text to retrieve skills for.")],
    talent: Annotated[str | None, typer.Option("--talent", help="Raise this talent's skills (the prior).")] = None,
    k: Annotated[int, typer.Option("-k", help="How many skills.")] = 5,
    index_ref: Annotated[str, typer.Option("--index", help="The index artifact.")] = "index:latest",
    overrides: OverridesArg = None,
) -> None:
    """Rank skills for TEXT by cos + lam * w(t, s), showing each component."""
    from talentrl_cli import report

    report.print_skill_ranking(_store(), index_ref, text, talent, k, overrides or [])


index_query.example = ('talentrl index query "Who directed the film?" --talent search-found-finish-found -k 5 index.lam=0.5'
                       '   (a talent of the demo index; an unknown name lists the index\'s talents)')
STAGE_SUBCOMMANDS = {"index": {"query": index_query}}


def _print_plan(plan: Any) -> None:
    from talentrl_cli.config import to_yaml

    inputs = {k: f"{a.ref} ({a.digest[:12]})" for k, a in plan.inputs.items()}
    reuse = plan.reusable.ref if plan.reusable else "no (would run)"
    print(to_yaml({"stage": plan.stage.name, "inputs": inputs, "config_hash": plan.config_hash,
                   "reuses": reuse, "config": plan.config}), end="")


# -- pipeline ---------------------------------------------------------------------------------


def pipeline(
    spec: Annotated[str, typer.Argument(help="A spec file, or the name of a shipped spec (demo, paper).")],
    until: Annotated[str | None, typer.Option("--until", help="Stop after this step (a step's name or stage).")] = None,
    from_stage: Annotated[str | None, typer.Option("--from-stage", help="Start at this step; earlier inputs resolve to latest.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Rerun every step even when reusable.")] = False,
    overrides: OverridesArg = None,
) -> None:
    """Run the steps of a pipeline spec (once per seed), wiring each step's inputs to earlier
    outputs; a rerun reuses what is published. With two eval steps or more, the comparison table
    of their arms goes to <root>/reports/<spec>[-<scale>]/ (report.md, comparison.png)."""
    from talentrl_cli.comparison import arms_from_pipeline, pipeline_report_dir, write_report
    from talentrl_cli.pipeline import load_spec, run_pipeline, spec_params
    from talentrl_cli.report import print_pipeline_summary

    store = _store()
    loaded, extra = spec_params(load_spec(spec), overrides or [])
    results = run_pipeline(loaded, store, extra=extra, from_stage=from_stage, until=until, force=force, log=_stderr)
    if sum(r.step.stage == "eval" for r in results) > 1:  # one eval's own table says it all
        written = write_report(arms_from_pipeline(results), store, pipeline_report_dir(store.root, loaded, extra))
        _stderr(f"comparison: {written[0]}  ({written[-1].name})")
    print_pipeline_summary(results, store.root)
    print(results[-1].result.artifact.ref)


def report(
    items: Annotated[list[str] | None, typer.Argument(
        help="Eval refs (eval:v3 eval:latest); with --pipeline, the pipeline's overrides.")] = None,
    pipeline_spec: Annotated[str | None, typer.Option(
        "--pipeline", help="Report the eval steps a run of this spec published (nothing runs).")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Folder for report.md and comparison.png.")] = None,
) -> None:
    """The paper-style comparison of eval artifacts: EM, F1, success (bootstrap CIs), routing
    accuracy, SFT - zero-shot and RL - SFT deltas found from lineage, each row's lineage."""
    from talentrl_cli.comparison import (
        arms_from_pipeline,
        arms_of,
        pipeline_report_dir,
        write_report,
    )
    from talentrl_cli.errors import ConfigError

    store = _store()
    if pipeline_spec:
        from talentrl_cli.pipeline import load_spec, run_pipeline, spec_params

        loaded, extra = spec_params(load_spec(pipeline_spec), items or [])
        results = run_pipeline(loaded, store, extra=extra, dry_run=True)
        missing = [r.label for r in results if r.result is None and r.step.stage == "eval"]
        if missing:
            _stderr(f"not run yet (left out): {', '.join(missing)}")
        arms = arms_from_pipeline(results)
        folder = out or pipeline_report_dir(store.root, loaded, extra)
    else:
        arms = []
        for ref in items or []:
            artifact = store.resolve_verified(ref)
            if artifact.stage != "eval":
                raise ConfigError(f"{ref} is a {artifact.stage} artifact", "talentrl report reads eval artifacts")
            arms += arms_of(artifact)
        folder = out or store.root / "reports" / "adhoc"
    if not arms:
        raise ConfigError("nothing to report: no eval artifacts", "pass eval refs, or --pipeline SPEC after running it")
    written = write_report(arms, store, folder)
    _stderr(f"comparison: {written[0]}  ({written[-1].name})")
    print(written[0])


# -- artifacts --------------------------------------------------------------------------------

artifacts_app = typer.Typer(help="Inspect and verify the artifact store.", no_args_is_help=True)


@artifacts_app.command("list", epilog="Example: talentrl artifacts list mine")
def artifacts_list(stage: Annotated[str | None, typer.Argument(help="Only this stage.")] = None) -> None:
    """List artifacts with their digests and inputs."""
    from talentrl_cli import report

    artifacts, broken = _store().scan(stage)
    report.print_artifact_table(artifacts, broken)


@artifacts_app.command("show", epilog="Example: talentrl artifacts show mine:latest")
def artifacts_show(ref: Annotated[str, typer.Argument(help="stage:latest, stage:vN or a path.")]) -> None:
    """Print an artifact's manifest."""
    import json

    print(json.dumps(_store().resolve(ref).manifest, indent=2))


@artifacts_app.command("verify", epilog="Example: talentrl artifacts verify --all")
def artifacts_verify(
    ref: Annotated[str | None, typer.Argument(help="stage:latest, stage:vN or a path.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Verify every artifact in the store.")] = False,
) -> None:
    """Recompute every file's sha256; exit 1 if any artifact fails."""
    from talentrl_cli import report

    if (ref is None) == (not all_):
        raise typer.BadParameter("give a REF or --all (not both)")
    store = _store()
    targets, broken = store.scan() if all_ else ([store.resolve(ref)], [])
    if not report.print_verification(targets, broken):
        raise typer.Exit(1)


@artifacts_app.command("lineage", epilog="Example: talentrl artifacts lineage eval:latest")
def artifacts_lineage(ref: Annotated[str, typer.Argument(help="stage:latest, stage:vN or a path.")]) -> None:
    """Show the tree of inputs an artifact was built from."""
    from talentrl_cli import report
    from talentrl_cli.artifacts import lineage

    store = _store()
    report.print_lineage(lineage(store, store.resolve(ref)))


# -- config -----------------------------------------------------------------------------------

config_app = typer.Typer(help="Show composed configs.", no_args_is_help=True)


@config_app.command("show", epilog="Example: talentrl config show sft model=smollm2 sft.lr=1e-4")
def config_show(
    stage: Annotated[str, typer.Argument(help="A stage (mine, index, ...) or a config section.")],
    overrides: OverridesArg = None,
) -> None:
    """Print the composed, resolved config a stage would record, as YAML."""
    from talentrl_cli.config import compose, resolve_sections, split_input_overrides, to_yaml
    from talentrl_cli.stages import STAGES

    hydra_overrides, inputs = split_input_overrides(overrides or [])
    cfg = compose(hydra_overrides)
    if stage in STAGES:
        sections = STAGES.get(stage).sections
    elif stage in cfg:
        sections = ("seed", stage)
    else:
        raise _unknown_name("stage or config section", stage, [*STAGES.names(), *cfg])
    out = resolve_sections(cfg, sections)
    if inputs:
        out = {"inputs": inputs, **out}
    print(to_yaml(out), end="")


# -- envs -------------------------------------------------------------------------------------

envs_app = typer.Typer(help="Task suites and environments.", no_args_is_help=True)


@envs_app.command("list", epilog="Example: talentrl envs list")
def envs_list() -> None:
    """List the registered environments."""
    from talentrl_cli import report

    report.print_env_list()


@envs_app.command("sample", epilog="Example: talentrl envs sample worldqa -n 3 env.seed=1")
def envs_sample(
    name: Annotated[str, typer.Argument(help="Environment name, e.g. worldqa.")],
    n: Annotated[int, typer.Option("-n", help="How many tasks.")] = 3,
    split: Annotated[str, typer.Option("--split", help="train, dev or test.")] = "train",
    overrides: OverridesArg = None,
) -> None:
    """Pretty-print tasks and, where the environment has one, an expert trajectory."""
    from talentrl_cli import report

    report.print_env_sample(name, n=n, split=split, overrides=overrides or [])


# -- app --------------------------------------------------------------------------------------


def build_app() -> typer.Typer:
    """The Typer app, with one command per registered stage (tests register their own)."""
    app = typer.Typer(name="talentrl", no_args_is_help=True, add_completion=False,
                      pretty_exceptions_enable=False, rich_markup_mode="rich")
    app.callback()(_global_options)
    for stage in load_builtin_stages().values():
        if stage.name in STAGE_SUBCOMMANDS:
            app.add_typer(_stage_group(stage, STAGE_SUBCOMMANDS[stage.name]), name=stage.name)
        else:
            app.command(stage.name, epilog=f"Example: {stage.example}")(_stage_command(stage))
    app.command(epilog="Example: talentrl pipeline stages/demo.yaml --until index model=tiny\n\n"
                "talentrl pipeline paper paper.scale=cpu paper.seeds=[0,1,2]")(pipeline)
    app.command(epilog="Example: talentrl report eval:v3 eval:v5 --out reports/sft\n\n"
                "talentrl report --pipeline paper paper.seeds=[0,1,2]")(report)
    app.add_typer(artifacts_app, name="artifacts")
    app.add_typer(config_app, name="config")
    app.add_typer(envs_app, name="envs")
    return app


def main(argv: list[str] | None = None) -> None:
    app = build_app()
    try:
        if argv is None:  # a real process entry, not a call from Python
            from talentrl_cli.distributed import relaunch_under_torchrun

            relaunch_under_torchrun(sys.argv[1:])
        app(args=argv, prog_name="talentrl")
    except OSError as err:
        if err.errno not in _STORAGE_ERRNOS:
            raise
        _report(TalentRLError(f"cannot write {err.filename or 'an output file'}: {os.strerror(err.errno)}",
                              "free space (or raise the quota or file-size limit) and rerun: nothing "
                              "half-written was published"))
    except RuntimeError as err:
        if not _TORCH_WRITE_FAILURE.search(str(err)):
            raise
        _report(TalentRLError("cannot write a checkpoint or weights file: torch's writer stopped short "
                              f"({str(err).splitlines()[0][:120]})",
                              "free space (or raise the quota or file-size limit) and rerun: nothing "
                              "half-written was published"))
    except TalentRLError as err:
        _report(err)


# torch.save's zip writer reports a full disk as a RuntimeError without an errno (seen under
# `ulimit -f` in sft's checkpoint): "[enforce fail at inline_container.cc:...] unexpected pos"
_TORCH_WRITE_FAILURE = re.compile(r"inline_container\.cc|file write failed|unexpected pos")

# storage failures a user fixes outside the program: one message, not a traceback
_STORAGE_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS}


def _report(err: TalentRLError) -> None:
    if _state["verbose"]:
        import traceback

        traceback.print_exc()
    _stderr(f"[bold red]error:[/] {_escape(err.message)}")
    if err.hint:
        _stderr(f"  hint: {_escape(err.hint)}")
    sys.exit(1)


def _unknown_name(kind: str, name: str, known: list[str]) -> TalentRLError:
    import difflib

    from talentrl_cli.errors import ConfigError

    close = difflib.get_close_matches(name, known, n=3)
    hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(sorted(known))}"
    return ConfigError(f"unknown {kind} {name!r}", hint)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
