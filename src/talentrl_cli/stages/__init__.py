"""The stage framework: a stage declares its name, inputs and config sections, and a
`run(cfg, inputs, out_dir) -> metrics` function. Registering it in `STAGES` gives it a CLI
command with `--force`, `--dry-run` and Hydra overrides, a place in pipelines, reuse, and
W&B lineage, all from `talentrl_cli.runner`.

Stage modules must stay cheap to import (torch and friends are imported inside `run`),
because the CLI imports them to build its commands.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from talentrl_cli.registry import Registry

# run(cfg, inputs, out_dir) -> metrics; cfg holds only the stage's declared sections.
StageFn = Callable[[Any, dict[str, Any], Path], dict[str, Any]]

# The roadmap's stages; each module registers itself when it exists.
BUILTIN_STAGES = ("mine", "index", "sft", "rl", "eval")


@dataclass(frozen=True)
class Stage:
    name: str
    run: StageFn
    summary: str
    example: str
    # input name -> stages that can produce it, most preferred first
    inputs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # inputs that accept `none` (e.g. `inputs.model=none` for the config's base model)
    optional_inputs: frozenset[str] = frozenset()
    # top-level config sections the stage reads; they form its manifest config and hash
    sections: tuple[str, ...] = ("seed",)
    # extra boolean CLI flags, each a shorthand for one override: {"resume": ("sft.resume=true", help)}
    flags: dict[str, tuple[str, str]] = field(default_factory=dict)
    # the metrics a summary shows for this stage (fnmatch patterns, e.g. "*/em"); none: the first number
    headline: tuple[str, ...] = ()


STAGES: Registry[Stage] = Registry("stage")


def register_stage(stage: Stage) -> Stage:
    return STAGES.register(stage.name)(stage)


def load_builtin_stages() -> Registry[Stage]:
    for name in BUILTIN_STAGES:
        module = f"talentrl_cli.stages.{name}"
        if importlib.util.find_spec(module) is not None:
            importlib.import_module(module)
    return STAGES


def checkpoint_dir(stage: str, out_dir: Path, cfg: Any, inputs: dict[str, Any]) -> Path:
    """`<root>/.checkpoints/<stage>/<key>`, outside the staging folder `<root>/<stage>/<tmp>`:
    `<key>` hashes the config (without `<stage>.resume`) and the input digests, so a resumed
    run with the same overrides finds its checkpoints."""
    import hashlib
    import json

    from omegaconf import OmegaConf

    config = OmegaConf.to_container(cfg, resolve=True)
    config[stage].pop("resume", None)
    digests = {name: artifact.digest for name, artifact in sorted(inputs.items())}
    key = hashlib.sha256(json.dumps([config, digests], sort_keys=True).encode()).hexdigest()[:16]
    return out_dir.resolve().parent.parent / ".checkpoints" / stage / key
