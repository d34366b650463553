"""Hydra composition from `conf/`, strict validation of overrides, and config hashing.

Overrides come after a command's options (`talentrl sft --force model=smollm2 sft.lr=1e-4`).
`inputs.NAME=REF` overrides are not config: they name the input artifacts of a stage and
are split off here (a stage's inputs are compared by digest, not by ref text).
Unknown keys are errors that name the key and suggest close matches.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from talentrl_cli.errors import ConfigError
from talentrl_cli.resources import conf_dir

_INPUT_OVERRIDE = re.compile(r"^inputs\.(?P<name>[A-Za-z_][\w-]*)=(?P<ref>.*)$")
# Credential-looking environment variables whose values must never reach a manifest or log.
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)


def split_input_overrides(overrides: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """Separate `inputs.NAME=REF` from the Hydra overrides."""
    hydra_overrides: list[str] = []
    inputs: dict[str, str] = {}
    for item in overrides:
        match = _INPUT_OVERRIDE.match(item)
        if match:
            inputs[match["name"]] = match["ref"]
        else:
            hydra_overrides.append(item)
    return hydra_overrides, inputs


def compose(overrides: Sequence[str] = ()) -> Any:
    """The root config composed with `overrides`, in struct mode (unknown keys fail)."""
    from omegaconf import OmegaConf

    overrides = list(overrides)
    _reject_additions(overrides)
    try:
        cfg = _hydra_compose(overrides)
    except Exception as err:  # Hydra raises several unrelated types
        raise _explain(err, overrides) from None
    _check_types(cfg, overrides)
    check_ranges(cfg)
    OmegaConf.set_struct(cfg, True)
    return cfg


def _at_least(low: float) -> tuple[Any, str]:
    return (lambda v: isinstance(v, int | float) and math.isfinite(v) and v >= low), f"a number >= {low:g}"


_POSITIVE = (lambda v: isinstance(v, int | float) and math.isfinite(v) and v > 0), "a finite number > 0"
_FINITE = (lambda v: isinstance(v, int | float) and math.isfinite(v)), "a finite number"
# keys whose bad values would otherwise pass into a run (or publish an artifact) unnoticed
RANGES: dict[str, tuple[Any, str]] = {
    "index.k": _at_least(0), "index.lam": _FINITE, "mine.min_support": _at_least(1),
    "mine.on_error": ((lambda v: v in ("fail", "skip")), "fail or skip"),
    "rl.loss_agg": ((lambda v: v in ("token", "episode")), "token or episode"),
    "sft.lr": _POSITIVE, "rl.lr": _POSITIVE, "rl.group_size": _at_least(1), "rl.interventions": _at_least(0),
    "rl.steps": _at_least(0), "rl.tasks_per_step": _at_least(1), "rl.beta": _at_least(0),
    "rl.route_beta": _at_least(0),
    "eval.n_bootstrap": _at_least(1), "eval.batch_size": _at_least(1), "rl.batch_size": _at_least(1),
    "eval.temperature": _at_least(0), "rl.temperature": _at_least(0),
}


def check_ranges(cfg: Any) -> None:
    """Out-of-range values (k < 0, lam NaN, group_size 0, ...) end here, naming the key."""
    from omegaconf import OmegaConf

    for key, (ok, expected) in RANGES.items():
        value = OmegaConf.select(cfg, key, default=None)
        if value is not None and not ok(value):
            raise ConfigError(f"{key}={value!r} is out of range: expected {expected}")


_KINDS = {bool: "true or false", int: "an integer", float: "a number"}


def _check_types(cfg: Any, overrides: list[str]) -> None:
    """An override must keep its key's type when the default is a bool, int or float, so
    `mine.min_support=abc` fails here, naming the key, and not as a traceback after the data
    has loaded. Null is always allowed; keys whose default is a string or null (e.g.
    `mine.n_talents: auto`, `eval.limit: null`) take any value their stage accepts."""
    from omegaconf import OmegaConf

    groups = set(config_groups())
    keyed = [o for o in overrides if "=" in o and o.split("=", 1)[0].lstrip("~") not in groups]
    if not keyed:
        return
    defaults = _defaults(tuple(_group_choices(overrides)))
    for item in keyed:
        key = item.split("=", 1)[0].lstrip("~")
        default = OmegaConf.select(defaults, key, default=None)
        value = OmegaConf.select(cfg, key, default=None)
        kind = type(default)
        if kind not in _KINDS or value is None:
            continue
        ok = isinstance(value, bool) if kind is bool else (
            isinstance(value, int | float) and not isinstance(value, bool) and (kind is float or isinstance(value, int)))
        if not ok:
            raise ConfigError(f"{key}={value!r}: expected {_KINDS[kind]} (the default is {default!r})",
                              f"fix the override `{item}`")


def _hydra_compose(overrides: list[str]) -> Any:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        return hydra_compose("config", overrides=overrides)


def config_groups() -> list[str]:
    return sorted(p.name for p in conf_dir().iterdir() if p.is_dir())


def _reject_additions(overrides: list[str]) -> None:
    """`+key=value` would add keys the code never reads: treat it like any unknown key."""
    for item in overrides:
        if item.startswith("+"):
            key = item.lstrip("+").split("=", 1)[0]
            raise _unknown_key(key, overrides=[o for o in overrides if o != item])


def _explain(err: Exception, overrides: list[str]) -> ConfigError:
    from hydra.errors import MissingConfigException, OverrideParseException

    text = str(err)
    if isinstance(err, MissingConfigException):
        return _missing_option(text)
    if isinstance(err, OverrideParseException):
        return _unparsable(overrides, text)
    match = re.search(r"Could not override '([^']+)'", text)
    if match:
        key = match.group(1)
        return _unknown_key(key, overrides=[o for o in overrides if not o.startswith(key + "=")])
    cause = err.__cause__ or err.__context__
    detail = (text or f"{type(cause).__name__}: {cause}" if cause else type(err).__name__).splitlines()
    return ConfigError(f"config does not compose: {detail[0] if detail else type(err).__name__}",
                       "check the overrides and the conf/ files they select")


def _missing_option(text: str) -> ConfigError:
    match = re.search(r"Could not find '([^/']+)/([^']+)'", text)
    if not match:
        return ConfigError(text.split("Config search path")[0].strip())
    group, option = match.groups()
    available = re.findall(r"^\t(\S+)$", text.split("Config search path")[0], re.MULTILINE)
    close = difflib.get_close_matches(option, available, n=1)
    hint = f"did you mean {group}={close[0]}?" if close else None
    return ConfigError(f"unknown {group} option {group}={option} (available: {', '.join(available)})", hint)


def _unparsable(overrides: list[str], text: str) -> ConfigError:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    bad = overrides[0] if overrides else ""
    for item in overrides:
        try:
            parser.parse_overrides([item])
        except Exception:
            bad = item
            break
    return ConfigError(f"cannot parse override {bad!r}: {text.splitlines()[0]}",
                       "overrides look like key=value, e.g. sft.lr=1e-4 or model=smollm2")


def _unknown_key(key: str, overrides: list[str]) -> ConfigError:
    known = _known_keys(overrides)
    close = difflib.get_close_matches(key, known, n=3, cutoff=0.6)
    hint = f"did you mean {', '.join(close)}?" if close else "see `talentrl config show STAGE`"
    return ConfigError(f"unknown config key {key!r}", hint)


def _known_keys(overrides: list[str]) -> list[str]:
    """Every dotted key of the config composed with the group choices among `overrides`."""
    try:
        cfg = _hydra_compose(_group_choices(overrides))
    except Exception:
        cfg = _hydra_compose([])
    from omegaconf import OmegaConf

    return list(_dotted_keys(OmegaConf.to_container(cfg, resolve=False)))


@functools.lru_cache(maxsize=16)
def _defaults(choices: tuple[str, ...]) -> Any:
    """The config of these group choices alone (read only): a pipeline composes each step's
    config, and its defaults need composing once."""
    return _hydra_compose(list(choices))


def _group_choices(overrides: list[str]) -> list[str]:
    groups = set(config_groups())
    return [o for o in overrides if o.split("=", 1)[0] in groups]


def _dotted_keys(node: Any, prefix: str = "") -> Iterable[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            path = f"{prefix}{key}"
            yield path
            yield from _dotted_keys(value, path + ".")


def resolve_sections(cfg: Any, sections: Sequence[str]) -> dict[str, Any]:
    """The resolved plain-dict config of the given top-level sections."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    out: dict[str, Any] = {}
    for section in sections:
        if section not in cfg:
            raise ConfigError(f"stage config section {section!r} is not in the root config")
        try:
            value = OmegaConf.select(cfg, section, throw_on_missing=True)
            out[section] = (
                OmegaConf.to_container(value, resolve=True, throw_on_missing=True)
                if OmegaConf.is_config(value)
                else value
            )
        except OmegaConfBaseException as err:
            key = getattr(err, "full_key", None) or section
            raise ConfigError(
                f"config key {key!r} has no value: {err.msg if hasattr(err, 'msg') else err}",
                f"set it on the command line, e.g. {key}=...",
            ) from None
    return out


def config_hash(config: dict[str, Any]) -> str:
    """A stable hash of a resolved config (canonical JSON, sorted keys)."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def secret_values() -> list[str]:
    """Values of credential-looking environment variables (long enough to be real secrets)."""
    import os

    return [v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 8]


def redact(obj: Any, secrets: list[str] | None = None) -> Any:
    """Replace any credential value found in `obj` with '***' (manifests and logs only)."""
    secrets = secret_values() if secrets is None else secrets
    if not secrets:
        return obj
    if isinstance(obj, dict):
        return {k: redact(v, secrets) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact(v, secrets) for v in obj]
    if isinstance(obj, str):
        for secret in secrets:
            obj = obj.replace(secret, "***")
    return obj


def to_yaml(obj: Any) -> str:
    import yaml

    return yaml.safe_dump(obj, sort_keys=False, default_flow_style=False)
