"""Where `talentrl mine` gets trajectories (`source=worldqa | textworld | react | alfworld_react | native`),
and the optional gold labels used only to measure the talents (NMI, purity).

`source.paths` mixes files; an item `KIND:PATH` reads that file with another loader, e.g.
`'source.paths=[fireact.jsonl,alfworld_react:alfworld.jsonl]'`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from talentrl_cli.errors import ConfigError, DataError
from talentrl_cli.jsonl import ReadStats, iter_jsonl
from talentrl_cli.schema import Trajectory
from talentrl_cli.trajectories import TRAJECTORY_SOURCES, load_trajectories


def source_files(source_cfg: Any) -> list[tuple[str, str]]:
    """(loader, path) pairs from `source.path` and `source.paths`."""
    items = ([source_cfg.path] if source_cfg.get("path") else []) + list(source_cfg.get("paths") or [])
    pairs = []
    for item in items:
        kind, _, path = str(item).rpartition(":") if _has_kind_prefix(str(item)) else ("", "", str(item))
        pairs.append((kind or str(source_cfg.kind), path))
    return pairs


def _has_kind_prefix(item: str) -> bool:
    head = item.split(":", 1)[0]
    return ":" in item and head in TRAJECTORY_SOURCES


def load_source(source_cfg: Any, on_error: str, stats: ReadStats, seed: int) -> list[Trajectory]:
    files = source_files(source_cfg)
    if not files:
        if str(source_cfg.kind) in EXPERT_ENVS:
            return _generate(source_cfg, seed)
        raise ConfigError(f"source={source_cfg.kind} needs a file: set source.path=FILE (or source.paths=[...])")
    trajectories: list[Trajectory] = []
    for kind, path in files:
        trajectories.extend(load_trajectories(kind, [path], on_error=on_error, stats=stats))
    _check_unique_ids(trajectories, files)
    return trajectories


# the envs whose scripted expert writes trajectories when no file is given: source=NAME, env=NAME
EXPERT_ENVS = {"worldqa": "talentrl_cli.envs.worldqa.env", "textworld": "talentrl_cli.envs.textworld_env",
               "webshop": "talentrl_cli.envs.webshop.expert", "alfworld": "talentrl_cli.envs.alfworld_env"}


def _generate(source_cfg: Any, seed: int) -> list[Trajectory]:
    import importlib

    kind, env_name = str(source_cfg.kind), source_cfg.env.get("name")
    if env_name != kind:
        raise ConfigError(f"source={kind} generates from the {kind} env settings, but env={env_name}",
                          f"use env={kind}, or give trajectories with source.path=FILE")
    generate = importlib.import_module(EXPERT_ENVS[kind]).generate_trajectories
    return generate(source_cfg.env, split=str(source_cfg.split), n=int(source_cfg.n),
                    noise=float(source_cfg.noise), seed=seed)


def _check_unique_ids(trajectories: list[Trajectory], files: list[tuple[str, str]]) -> None:
    seen: set[str] = set()
    for trajectory in trajectories:
        if trajectory.id in seen:
            names = ", ".join(p for _, p in files)
            raise DataError(f"trajectory id {trajectory.id!r} appears twice across {names}",
                            "ids must be unique across mixed files")
        seen.add(trajectory.id)


def gold_labels(trajectories: list[Trajectory], source_cfg: Any) -> list[str | None]:
    """A gold label per trajectory: the task's own strategy, else `source.gold` joined by id."""
    table = _gold_table(source_cfg) if source_cfg.get("gold") else {}
    return [t.task.strategy if t.task.strategy is not None else table.get(t.task.id) for t in trajectories]


def _gold_table(source_cfg: Any) -> dict[str, str]:
    path, key = Path(str(source_cfg.gold)), str(source_cfg.gold_key)
    table = {}
    for lineno, record in enumerate(iter_jsonl(path), 1):
        if "id" not in record or key not in record:
            raise DataError(f"{path}:{lineno}: gold label file needs fields 'id' and {key!r}",
                            "set source.gold_key to the label field")
        table[str(record["id"])] = str(record[key])
    return table
