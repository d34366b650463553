"""Imports every built-in environment module so that each registers itself."""

import talentrl_cli.envs.alfworld_env  # noqa: F401
import talentrl_cli.envs.qa  # noqa: F401
import talentrl_cli.envs.textworld_env  # noqa: F401
import talentrl_cli.envs.webshop  # noqa: F401
import talentrl_cli.envs.worldqa  # noqa: F401
