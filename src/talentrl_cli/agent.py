"""The talent-aware agent that eval and rl both run: backend + env + skill bank, route ->
retrieve -> execute through the one rollout engine (`rollout`).

    agent = Agent.from_config(cfg, backend, env, index_artifact)
    dists = agent.route(tasks)                                      # exact pi_route(t | x)
    episodes = agent.start(tasks, names, rollouts=[0, 1, ...])      # name None: flat context
    agent.run(episodes, RolloutConfig(...))

`start` builds each episode's context: talent given, the routing turn over the whole menu
and `R(x, t)` (talent-prior retrieval, `index.lam`); talent None, the flat context with
`R(x)` (lam 0), or no skills at all with `skills=False`. Task vectors are embedded once per
task and cached.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class Agent:
    def __init__(self, backend: Any, env: Any, bank: Any | None, embedder: Any | None, k: int, lam: float):
        self.backend, self.env, self.bank, self.embedder = backend, env, bank, embedder
        self.k, self.lam = int(k), float(lam)
        self.talents = {t.name: t for t in bank.talents} if bank else {}
        self._vectors: dict[str, Any] = {}

    @classmethod
    def from_config(cls, cfg: Any, backend: Any, env: Any, index: Any | None) -> Agent:
        """`index`: the index artifact (the one way to open it: `SkillBank.load`), or None."""
        bank = embedder = None
        if index is not None:
            from talentrl_cli.embedding import Embedder
            from talentrl_cli.skillbank import SkillBank

            embedder = Embedder.from_config(cfg.embedder)
            bank = SkillBank.load(index.path, embedder.identity(), int(cfg.index.oversample))
        return cls(backend, env, bank, embedder, int(cfg.index.k), float(cfg.index.lam))

    def vectors(self, tasks: Sequence[Any]) -> Any:
        import numpy as np

        missing = [t for t in tasks if t.id not in self._vectors]
        if missing:
            for task, vector in zip(missing, self.embedder.encode([t.question for t in missing]), strict=True):
                self._vectors[task.id] = vector
        return np.stack([self._vectors[t.id] for t in tasks])

    def route(self, tasks: Sequence[Any]) -> list[dict[str, float]]:
        from talentrl_cli.rollout import route_distribution

        return route_distribution(self.backend, tasks, list(self.talents.values()))

    def start(self, tasks: Sequence[Any], names: Sequence[str | None], rollouts: Sequence[int] | None = None,
              skills: bool = True) -> list[Any]:
        """One episode per (task, talent name); None: the flat, talent-free context."""
        from talentrl_cli.rollout import retrieve, start_episode

        rollouts = rollouts if rollouts is not None else [0] * len(tasks)
        found = (retrieve(self.bank, self.vectors(tasks), list(names), self.k, self.lam)  # None: flat R(x)
                 if skills and self.bank else [[] for _ in tasks])
        menu = list(self.talents.values())
        tok, tools = self.backend.tokenizer, self.env.describe_tools()
        return [start_episode(tok, task, self.talents.get(name) if name else None, sk, menu if name else None,
                              rollout=i, tools=tools, action_format=self.env.action_format)
                for task, name, sk, i in zip(tasks, names, found, rollouts, strict=True)]

    def run(self, episodes: Sequence[Any], cfg: Any) -> list[Any]:
        from talentrl_cli.rollout import run_episodes

        return run_episodes(self.backend, self.env, episodes, cfg)


def talent_strategies(bank: Any, env: Any) -> dict[str, str]:
    """talent -> the majority gold strategy of its exemplar tasks (where the env has gold),
    for routing accuracy and the oracle; empty when no exemplar has a gold label.

    Exemplars are matched by question text, ids only where a talent has no questions: a
    generated split's ids are positions, which a change of its generator renumbers (the
    WorldQA yes/no balance did), while the mine keeps the questions it saw. A question that
    is gone gives no vote, where a renumbered id gave a wrong one: on a mine made before that
    balance, a router at 64.5 % scored 1.5 % by id, 40.5 % by question (6 of 8 talents
    still matched); rerun mine after such a change."""
    from collections import Counter

    by_question: dict[str, str] = {}
    by_id: dict[str, str] = {}
    for split in ("train", "dev", "test"):
        try:
            tasks = [t for t in env.tasks(split) if t.strategy]
        except Exception:  # noqa: BLE001 - an env without that split has no gold to offer
            continue
        by_question.update({t.question: t.strategy for t in tasks})
        by_id.update({t.id: t.strategy for t in tasks})
    out = {}
    for talent in bank.talents:
        keys, gold = (talent.exemplars, by_question) if talent.exemplars else (talent.meta.get("exemplar_ids", []), by_id)
        votes = Counter(gold[k] for k in keys if k in gold)
        if votes:
            out[talent.name] = votes.most_common(1)[0][0]
    return out
