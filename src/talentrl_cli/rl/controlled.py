"""A controlled routing problem with a known answer, for the estimator bench and the trainer tests.

    agent = ControlledAgent(backend, talents, q, noise=0.5)   # q[task_id][talent or None] in [0, 1]
    trainer = Trainer(cfg, model, tokenizer, agent, tasks, accelerator)
    g = exact_gradient(dists, q, noise)                      # the routing gradient, menu-logit space
    g_hat = estimated_gradient(collected, raw_credit(collected, key, group_size))

An episode's reward is `q(x, t) * e`: `q` a known per-(task, talent) success rate (`None`: the
flat context, for `ablate`), `e` execution noise, a coin that fails with probability `noise`,
drawn from the rollout's seed (task, rollout index, step), so a matched intervention shares
its rollout's coin (common random numbers). Execution is one fixed action appended as
generated tokens, not generated: what moves is the routing turn, through the real trainer's
routing, sampling, interventions, credit, masks and loss.

Gradients are in the menu's logit space: with pi = softmax(z) over the K talents of a task,
grad_z log pi(t) = onehot(t) - pi, and the exact routing gradient is
`sum_t pi(t) (E r(t) - b) (onehot(t) - pi)`, `E r(t) = (1 - noise) q(t)`, `b = sum_t pi(t) E r(t)`.
The trainer moves the label tokens' log-probs, whose expected gradient is the same (`rl.loss`).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from talentrl_cli.agent import Agent
from talentrl_cli.rl import advantages as adv
from talentrl_cli.rl.trainer import credit_of
from talentrl_cli.rollout import EXEC, episode_seed


class ControlledEnv:
    action_format = "tool[argument]"

    def describe_tools(self) -> str:
        return "finish[answer]"


class ControlledAgent(Agent):
    """The real agent's routing and contexts, with `run` replaced by the known reward."""

    def __init__(self, backend: Any, talents: Sequence[Any], q: dict[str, dict[str | None, float]], noise: float):
        super().__init__(backend, ControlledEnv(), SimpleNamespace(talents=list(talents), skills=[]), None, k=0, lam=0.0)
        self.q, self.noise = q, float(noise)

    def rate(self, task: Any, talent: str | None) -> float:
        """q(x, t): the known success rate of `talent` (None: the flat context) on `task`."""
        return self.q[task.id].get(talent, 0.0)

    def run(self, episodes: Sequence[Any], cfg: Any) -> list[Any]:
        action = self.backend.tokenizer.encode("Action: finish[x]", add_special_tokens=False)
        for ep in episodes:
            ep.reward = self.rate(ep.task, ep.talent) * coin(cfg.seed, ep.task.id, ep.rollout, self.noise)
            ep.scores = {"reward": ep.reward, "em": ep.reward, "f1": ep.reward}
            ep.ids, ep.mask = ep.ids + action, ep.mask + [EXEC] * len(action)
            ep.policy_tokens, ep.done, ep.end = len(action), True, "finish"
        return list(episodes)


def coin(seed: int, task_id: str, rollout: int, noise: float) -> float:
    """1 with probability 1 - noise, from the rollout's own random stream."""
    return float(episode_seed(seed, task_id, rollout, 0) % 1000 < (1.0 - noise) * 1000)


def exact_gradient(tasks: Sequence[Any], dists: Sequence[dict[str, float]], q: dict[str, dict[str | None, float]],
                   noise: float) -> np.ndarray:
    """(tasks, K): each task's exact routing gradient in its menu's logit space."""
    out = []
    for task, dist in zip(tasks, dists, strict=True):
        names = list(dist)
        pi = np.array([dist[n] for n in names])
        reward = (1.0 - noise) * np.array([q[task.id].get(n, 0.0) for n in names])
        out.append(pi * (reward - pi @ reward))  # sum_t pi_t (r_t - b) = 0 removes the -pi term
    return np.array(out)


def raw_credit(out: Any, key: str, group_size: int) -> np.ndarray:
    """Each trained rollout's routing credit in the exact gradient's units, before the
    trainer's positive per-step (matched, exhaustive) or per-group (terminal) std scale:
    matched `(r_i - mean_m r'_{i,m}) / G` (`matched_distinct`: times 1 - pi(t_i)); exhaustive
    `pi(t)(r(t) - b)`; terminal the group-centred reward `(r_i - mean_g r) / (G - 1)` (RLOO's
    correction: unbiased, so what is left of its error is variance)."""
    credit = credit_of(out)
    if key in ("matched", "matched_distinct"):
        return adv.ROUTING.get(key)(credit, scale=False) / group_size
    if key == "exhaustive":
        return adv.exhaustive(credit, scale=False)
    centred = credit.rewards.copy()
    for g in np.unique(credit.group):
        rows = credit.group == g
        centred[rows] -= centred[rows].mean()
    return centred / max(group_size - 1, 1)


def estimated_gradient(out: Any, credit: np.ndarray) -> np.ndarray:
    """(tasks, K): sum over a task's trained rollouts of credit_i (onehot(t_i) - pi)."""
    out_grad = []
    for g, dist in enumerate(out.dists):
        names = list(dist)
        pi = np.array([dist[n] for n in names])
        grad = np.zeros(len(names))
        for i in np.flatnonzero(np.asarray(out.group) == g):
            grad += credit[i] * (np.eye(len(names))[names.index(out.episodes[i].talent)] - pi)
        out_grad.append(grad)
    return np.array(out_grad)
