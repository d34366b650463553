"""A toy routing problem for the trainer, with the real tiny model and the real trainer.

Each task has a designated talent. An episode's reward is 1 only when it runs under that
talent, times execution noise: a coin flip (heads with `P_HEADS`) drawn from the rollout's
seed (task, rollout index, step), so a matched intervention shares its rollout's coin
(common random numbers). It is `rl.controlled` with q = 1 for the designated talent and 0
for the others; what is learnt is the routing turn, through the same credit, masks and loss
as a real run."""

from __future__ import annotations

from talentrl_cli.rl.controlled import ControlledAgent
from talentrl_cli.schema import Talent, Task

P_HEADS = 0.7
TALENTS = [Talent(name=n, description=d) for n, d in
           (("a", "find one fact"), ("b", "check two things"), ("c", "add up items"))]


def toy_tasks(n: int = 6) -> list[Task]:
    designated = [t.name for t in TALENTS]
    return [Task(id=f"toy-{i}", question=f"Question {i} about {designated[i % 3]}?", answers=["x"],
                 strategy=designated[i % 3]) for i in range(n)]


class ToyAgent(ControlledAgent):
    def __init__(self, backend):
        super().__init__(backend, TALENTS, q={}, noise=1.0 - P_HEADS)

    def rate(self, task, talent):
        return float(talent == task.strategy)


def strategy_of() -> dict[str, str]:
    return {t.name: t.name for t in TALENTS}
