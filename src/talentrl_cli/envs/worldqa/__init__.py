"""WorldQA: a generated world, its passage corpus, multi-strategy questions and a scripted
ReAct expert, all from a seed and offline (the embedded task suite of DESIGN.md section 4).

Importing the package registers `env=worldqa`.

    world.py      entities, relations, attributes        corpus.py     passages in prose
    names.py      unique pronounceable names             grammar.py    sentence templates + reader
    families.py   question families and wordings         questions.py  tasks, answers, plans, splits
    expert.py     the scripted tool-using expert         env.py        WorldQAEnv, generate_trajectories
"""

from talentrl_cli.envs.worldqa.env import WorldQAEnv, WorldQASettings, generate_trajectories

__all__ = ["WorldQAEnv", "WorldQASettings", "generate_trajectories"]
