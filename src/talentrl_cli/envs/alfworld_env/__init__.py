"""`env=alfworld`: ALFWorld's household tasks on TextWorld's PDDL engine (see `env.py`).

    talentrl envs list                    # says what the real games still need here
    talentrl eval env=alfworld eval.limit=10

Importing this package registers the environment; `generate_trajectories` is the expert's
entry point for `talentrl mine source=alfworld`.
"""

from talentrl_cli.envs.alfworld_env.env import AlfWorldEnv, generate_trajectories

__all__ = ["AlfWorldEnv", "generate_trajectories"]
