"""Environments behind one protocol, chosen by name with `env=...`.

Importing this package registers the built-in environments.
"""

from talentrl_cli.envs.base import ENVS, Environment, env_from_config, make_env

__all__ = ["ENVS", "Environment", "env_from_config", "make_env"]
