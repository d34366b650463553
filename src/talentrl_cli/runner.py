"""Runs one stage: compose its config, resolve and verify its inputs, reuse or run, publish.

Every stage command and the pipeline runner go through `execute_stage`, so reuse, atomic
publishing, input verification and tracking behave the same everywhere.
"""

from __future__ import annotations

import difflib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from talentrl_cli.artifacts import Artifact, ArtifactStore
from talentrl_cli.config import (
    compose,
    config_hash,
    redact,
    resolve_sections,
    split_input_overrides,
)
from talentrl_cli.errors import ConfigError
from talentrl_cli.stages import STAGES, Stage

NONE_REF = "none"


@dataclass
class StagePlan:
    stage: Stage
    config: dict[str, Any]  # what the manifest and tracker see: credentials redacted
    run_config: dict[str, Any]  # what the stage sees
    config_hash: str
    tracking: Any
    inputs: dict[str, Artifact]
    reusable: Artifact | None


@dataclass
class StageResult:
    artifact: Artifact | None
    reused: bool
    plan: StagePlan
    seconds: float = 0.0  # wall time of planning plus (unless reused) the run and publish


def default_root() -> Path:
    return Path(os.environ.get("TALENTRL_HOME") or "artifacts")


def plan_stage(name: str, overrides: Sequence[str], store: ArtifactStore, force: bool = False) -> StagePlan:
    """Everything decided before a stage runs; raises a user error on any bad input."""
    stage = STAGES.get(name)
    hydra_overrides, input_refs = split_input_overrides(overrides)
    _check_input_names(stage, input_refs)
    cfg = compose(hydra_overrides)
    sections = resolve_sections(cfg, stage.sections)
    public = redact(sections)
    digest = config_hash(public)
    inputs = _resolve_inputs(stage, input_refs, store)
    input_digests = {k: a.digest for k, a in inputs.items()}
    reusable = None if force else store.find_reusable(stage.name, digest, input_digests)
    return StagePlan(stage, public, sections, digest, cfg.tracking, inputs, reusable)


def execute_stage(name: str, overrides: Sequence[str], store: ArtifactStore, *,
                  force: bool = False, dry_run: bool = False, log: Any = None) -> StageResult:
    started = time.perf_counter()
    plan = plan_stage(name, overrides, store, force=force)
    say = log or (lambda message: None)
    if dry_run:
        return StageResult(plan.reusable, plan.reusable is not None, plan)
    if plan.reusable is not None:
        say(f"{name}: inputs and config match {plan.reusable.ref}; reusing it (--force reruns)")
        return StageResult(plan.reusable, True, plan, time.perf_counter() - started)
    artifact = _run_and_publish(plan, store, say)
    return StageResult(artifact, False, plan, time.perf_counter() - started)


def _run_and_publish(plan: StagePlan, store: ArtifactStore, say: Any) -> Artifact:
    from omegaconf import OmegaConf

    from talentrl_cli.progress import stage_display
    from talentrl_cli.tracking import track

    stage = plan.stage
    cfg = OmegaConf.create(plan.run_config)
    OmegaConf.set_readonly(cfg, True)
    with track(plan.tracking, stage=stage.name, config=plan.config, root=store.root) as tracker:
        tracker.use_inputs(plan.inputs)
        with store.staging(stage.name) as out_dir:
            say(f"{stage.name}: running (inputs: {_describe(plan.inputs)})")
            with stage_display(stage.name):
                metrics = stage.run(cfg, dict(plan.inputs), out_dir) or {}
            artifact = store.publish(out_dir, stage=stage.name, config=plan.config,
                                     config_hash=plan.config_hash, inputs=plan.inputs,
                                     metrics=metrics)
        tracker.log_metrics(metrics)
        tracker.log_output(artifact)
    return artifact


def _check_input_names(stage: Stage, refs: dict[str, str]) -> None:
    for name in refs:
        if name not in stage.inputs:
            close = difflib.get_close_matches(name, list(stage.inputs), n=2)
            known = ", ".join(f"inputs.{k}" for k in stage.inputs) or "none"
            hint = f"did you mean inputs.{close[0]}?" if close else None
            raise ConfigError(f"unknown config key 'inputs.{name}' for stage {stage.name} "
                              f"(its inputs: {known})", hint)


def _resolve_inputs(stage: Stage, refs: dict[str, str], store: ArtifactStore) -> dict[str, Artifact]:
    inputs: dict[str, Artifact] = {}
    for name, producers in stage.inputs.items():
        ref = refs.get(name) or _default_ref(store, producers)
        if ref == NONE_REF:
            if name not in stage.optional_inputs:
                raise ConfigError(f"inputs.{name} cannot be none for stage {stage.name}")
            continue
        inputs[name] = store.resolve_verified(ref)
    return inputs


def _default_ref(store: ArtifactStore, producers: tuple[str, ...]) -> str:
    """`<producer>:latest` for the first producer that has published anything; where none
    has, the last, the most upstream (rl's and eval's model: sft, not rl), so the missing-
    artifact error names the stage to run first rather than the stage being run."""
    for producer in producers:
        if (store.root / producer / "latest").is_file():
            return f"{producer}:latest"
    return f"{producers[-1]}:latest"


def _describe(inputs: dict[str, Artifact]) -> str:
    return ", ".join(f"{k}={a.ref}" for k, a in inputs.items()) or "none"
