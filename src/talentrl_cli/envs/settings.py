"""One way to read an `env:` section into an environment's settings dataclass.

Every environment keeps its settings in a dataclass whose fields are the section's keys, so
an unknown key (a typo) fails before any work with the list of known keys, and a key left at
null keeps the dataclass default.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

from talentrl_cli.errors import ConfigError

T = TypeVar("T")


def cache_folder(configured: str | None, env: str) -> Path:
    """An env's cache: `env.cache_dir` when set, else `$TALENTRL_CACHE/<env>`."""
    from talentrl_cli.models import cache_root

    return Path(configured) if configured else cache_root() / env


def settings_from_cfg(cls: type[T], cfg: Any, env: str) -> T:
    """`cls(**section)`, refusing keys `cls` does not have; `validate()` runs when defined."""
    values = section_dict(cfg, env)
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"unknown key(s) env.{', env.'.join(unknown)} for env={env}",
                          f"known keys: {', '.join(sorted(known))}")
    try:
        return cls(**{k: v for k, v in values.items() if v is not None})
    except TypeError as err:
        raise ConfigError(f"env={env}: {err}") from None


def section_dict(cfg: Any, env: str) -> dict[str, Any]:
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if cfg is None:
        return {}
    if not isinstance(cfg, DictConfig):
        return dict(cfg)
    try:
        return OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as err:  # e.g. `${embedder}` in an env section cut from its root
        raise ConfigError(f"env config for env={env} does not resolve: {err}".splitlines()[0]) from None
