"""`env=webshop`: WebShop's shopping tasks over its 1,000-product catalogue (see `env.py`).

    talentrl envs sample webshop -n 2

Importing this package registers the environment; `generate_trajectories` is the expert's
entry point for `talentrl mine source=webshop`.
"""

from talentrl_cli.envs.webshop.env import WebShopEnv
from talentrl_cli.envs.webshop.expert import generate_trajectories

__all__ = ["WebShopEnv", "generate_trajectories"]
