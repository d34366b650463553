"""A toy routing problem for the trainer, with the real tiny model and the real trainer.

Each task has a designated talent. An episode's reward is 1 only when it runs under that
talent, times execution noise: a coin flip (heads with `P_HEADS`) drawn from the rollout's
seed (task, rollout index, step), so a matched intervention shares its rollout's coin
(common random numbers). Execution is one fixed action appended as generated tokens: what
is learnt is the routing turn, through the same credit, masks and loss as a real run."""

from __future__ import annotations

from types import SimpleNamespace

from talentrl_cli.agent import Agent
from talentrl_cli.rollout import EXEC, episode_seed
from talentrl_cli.schema import Talent, Task

P_HEADS = 0.7
TALENTS = [Talent(name=n, description=d) for n, d in
           (("a", "find one fact"), ("b", "check two things"), ("c", "add up items"))]


def toy_tasks(n: int = 6) -> list[Task]:
    designated = [t.name for t in TALENTS]
    return [Task(id=f"toy-{i}", question=f"Question {i} about {designated[i % 3]}?", answers=["x"],
                 strategy=designated[i % 3]) for i in range(n)]


class ToyEnv:
    def describe_tools(self) -> str:
        return "finish[answer]"


class ToyAgent(Agent):
    def __init__(self, backend):
        super().__init__(backend, ToyEnv(), SimpleNamespace(talents=TALENTS, skills=[]), None, k=0, lam=0.0)

    def run(self, episodes, cfg):
        action = self.backend.tokenizer.encode("Action: finish[x]", add_special_tokens=False)
        for ep in episodes:
            heads = episode_seed(cfg.seed, ep.task.id, ep.rollout, 0) % 1000 < P_HEADS * 1000
            ep.reward = float(ep.talent == ep.task.strategy and heads)
            ep.scores = {"reward": ep.reward, "em": ep.reward, "f1": ep.reward}
            ep.ids, ep.mask = ep.ids + action, ep.mask + [EXEC] * len(action)
            ep.policy_tokens, ep.done, ep.end = len(action), True, "finish"
        return list(episodes)


def strategy_of() -> dict[str, str]:
    return {t.name: t.name for t in TALENTS}
