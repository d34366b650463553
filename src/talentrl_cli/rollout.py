"""The rollout engine: route -> retrieve -> execute, batched, for eval and RL alike.

    dists = route_distribution(backend, tasks, talents)           # exact pi_route(t | x)
    skills = retrieve(bank, vectors, chosen_names, k, lam)        # cos + lam * w[t, s]
    episodes = [start_episode(tok, task, talent, skills, menu, rollout=i) ...]
    run_episodes(backend, env, episodes, RolloutConfig(...))      # multi-turn, batched

Why it is shaped like this (DESIGN §2):

- Routing scores every talent label teacher-forced in one batched pass: K is small, and the
  full distribution is what RL samples from and eval takes the argmax of.
- Each episode is one token sequence, built incrementally: the policy's next prompt is the
  previous ids + its completion + the observation's tokens, never a re-tokenised rendering.
  So `ids` is exactly what the policy saw and sampled, and `mask` labels each token:
  0 = prompt / observation (no loss), 1 = execution tokens the policy generated,
  2 = the talent label of the routing turn (routing advantage goes there).
- Every turn's sampler is seeded from (seed, task, rollout, step) and never from the talent,
  so rollouts of one task under different talents share random numbers (matched
  interventions), and a row's tokens do not depend on its batch (greedy eval is identical at
  any batch size).
- Only episodes still running are sent to the backend each turn.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from talentrl_cli import prompts
from talentrl_cli.generation import SamplingParams

ROUTE, EXEC, OTHER = 2, 1, 0
STOP = ("\nObservation", "Observation:")
_SENTINEL = "\x00\x01TALENTRL\x01\x00"


@dataclass(frozen=True)
class RolloutConfig:
    max_steps: int = 6
    max_new_tokens: int = 96
    max_total_tokens: int = 4096  # an episode whose sequence grows past this ends (reward 0)
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0

    def sampling(self) -> SamplingParams:
        return SamplingParams(self.max_new_tokens, self.temperature, self.top_p, STOP)


@dataclass
class Episode:
    task: Any
    rollout: int = 0
    talent: str | None = None
    skills: list[str] = field(default_factory=list)
    messages: list[dict[str, str]] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    answer: str | None = None
    reward: float = 0.0
    scores: dict[str, float] = field(default_factory=dict)
    done: bool = False
    end: str = ""  # finish | env | max_steps | max_tokens
    policy_tokens: int = 0
    route: dict[str, float] = field(default_factory=dict)  # pi_route(t | x) when routed
    env: Any = None

    def record(self) -> dict[str, Any]:
        """A JSON-ready transcript, with the token masks RL reuses."""
        return {"task_id": self.task.id, "rollout": self.rollout, "talent": self.talent,
                "skills": self.skills, "answer": self.answer, "reward": self.reward, "scores": self.scores,
                "end": self.end, "turns": len(self.steps), "policy_tokens": self.policy_tokens,
                "route": self.route, "steps": self.steps, "messages": self.messages,
                "ids": self.ids, "mask": self.mask}


def episode_seed(seed: int, task_id: str, rollout: int, step: int) -> int:
    """The sampler seed of one turn: from (seed, task, rollout, step), never the talent."""
    digest = hashlib.sha256(f"{seed}|{task_id}|{rollout}|{step}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


# -- routing ---------------------------------------------------------------------------------


def route_distribution(backend: Any, tasks: Sequence[Any], talents: Sequence[Any]) -> list[dict[str, float]]:
    """pi_route(t | x) for every task: each talent label scored teacher-forced, batched."""
    import math

    tok = backend.tokenizer
    if not talents:
        return [{} for _ in tasks]
    prompt_ids = [encode(tok, prompts.routing_messages(t.question, talents), True)[0] for t in tasks]
    labels = [tok.encode(prompts.talent_answer(t.name), add_special_tokens=False) for t in talents]
    pairs = [(p, lab) for p in prompt_ids for lab in labels]
    scores = backend.score([p for p, _ in pairs], [lab for _, lab in pairs])
    out = []
    for i in range(len(tasks)):
        row = scores[i * len(talents):(i + 1) * len(talents)]
        top = max(row)
        weights = [math.exp(s - top) for s in row]
        total = sum(weights)
        out.append({t.name: w / total for t, w in zip(talents, weights, strict=True)})
    return out


def route_generate(backend: Any, tasks: Sequence[Any], talents: Sequence[Any], seed: int = 0) -> list[str | None]:
    """Free-form routing (`eval.routing=generate`): the parsed `<talent>` answer, or None."""
    tok = backend.tokenizer
    prompt_ids = [encode(tok, prompts.routing_messages(t.question, talents), True)[0] for t in tasks]
    seeds = [episode_seed(seed, t.id, 0, -1) for t in tasks]
    outs = backend.generate(prompt_ids, seeds, SamplingParams(24, 0.0, 1.0, ("</talent>",)))
    names = [t.name for t in talents]
    return [prompts.parse_talent(o.text, names).name for o in outs]


def argmax(dist: dict[str, float]) -> str | None:
    return max(dist, key=dist.get) if dist else None


# -- retrieval -------------------------------------------------------------------------------


def retrieve(bank: Any, vectors: Any, talents: Sequence[str | None], k: int, lam: float) -> list[list[Any]]:
    """R(x, t) per task: talent-prior retrieval (flat rows: talent None or lam 0)."""
    if k <= 0 or not bank.skills:
        return [[] for _ in talents]
    hits = bank.retrieve(vectors, list(talents), k=k, lam=lam)
    return [[bank.skill_by_id[h.skill_id] for h in row] for row in hits]


# -- episodes --------------------------------------------------------------------------------


def start_episode(tokenizer: Any, task: Any, talent: Any | None, skills: Sequence[Any] | None,
                  menu: Sequence[Any] | None = None, rollout: int = 0, tools: str = "",
                  action_format: str = prompts.ACTION_FORMAT) -> Episode:
    """An episode before its first execution turn. `menu` given: talent-aware, with the
    routing turn (its label tokens masked ROUTE) in the sequence; `tools`: the env's
    `describe_tools()`, `action_format` its `action_format`; the task's first observation
    ends the context (`prompts.first_observation`). The demonstration hides the task's gold
    answers, as SFT's does: it comes from another task and can quote the answer only by
    coincidence (0.3 % of WorldQA task x talent pairs), which must not score."""
    messages = prompts.execution_messages(task.question, talent, skills, talents=menu if talent else None,
                                          tools=tools, hide=task.answers, action_format=action_format,
                                          observation=prompts.first_observation(task))
    ids, mask = encode(tokenizer, messages, True)
    return Episode(task=task, rollout=rollout, talent=talent.name if talent else None,
                   skills=[s.id for s in skills or []], messages=messages, ids=ids, mask=mask)


def run_episodes(backend: Any, env: Any, episodes: Sequence[Episode], cfg: RolloutConfig) -> list[Episode]:
    """Execute every episode to its end, one batched generation call per turn."""
    for ep in episodes:
        ep.env = env.fork()
        ep.env.reset(ep.task)
    params = cfg.sampling()
    for step in range(cfg.max_steps):
        active = [ep for ep in episodes if not ep.done]
        if not active:
            break
        seeds = [episode_seed(cfg.seed, ep.task.id, ep.rollout, step) for ep in active]
        outs = backend.generate([ep.ids for ep in active], seeds, params)
        for ep, out in zip(active, outs, strict=True):
            _advance(backend.tokenizer, ep, out, cfg)
        ended = [ep.ids for ep in active if ep.done]
        if ended and hasattr(backend, "forget"):
            backend.forget(ended)  # their cached histories will not be extended again
    for ep in episodes:
        if not ep.done:
            _close(ep, "max_steps")
        ep.env = None
    if hasattr(backend, "forget"):
        backend.forget()  # these histories will not be extended again
    return list(episodes)


def _advance(tok: Any, ep: Episode, out: Any, cfg: RolloutConfig) -> None:
    """Apply one completion: parse it, step the env, append the observation tokens."""
    text = _cut(out.text)
    turn = prompts.parse_turn(text)
    action = str(turn.action) if turn.action is not None else text
    observation, reward, done, info = ep.env.step(action)
    ep.steps.append({"thought": turn.thought, "action": action, "observation": observation,
                     "valid": bool(info.get("valid")), "finish": out.finish, "tokens": len(out.token_ids)})
    ep.ids += out.token_ids
    ep.mask += [EXEC] * len(out.token_ids)
    ep.policy_tokens += len(out.token_ids)
    eos = tok.eos_token_id
    if out.finish != "eos" and eos is not None:
        ep.ids.append(eos)
        ep.mask.append(OTHER)
    ep.messages.append({"role": "assistant", "content": text})
    if done:
        ep.answer, ep.reward, ep.done, ep.end = info.get("answer"), float(reward), True, "finish"
        ep.scores = {k: float(v) for k, v in info.items() if k in ("em", "f1", "reward")}
        # "finish": an answer; "env": the env ended it (a game won or lost); "max_steps": its step limit
        ep.end = "finish" if "answer" in info else ("max_steps" if info.get("truncated") else "env")
        return
    _append_observation(tok, ep, observation)
    if len(ep.ids) + cfg.max_new_tokens > cfg.max_total_tokens:
        _close(ep, "max_tokens")


def _append_observation(tok: Any, ep: Episode, observation: str) -> None:
    message = {"role": "user", "content": prompts.format_observation(observation)}
    text = prompts.render(tok, [*ep.messages[:-1], {"role": "assistant", "content": _SENTINEL}, message],
                          add_generation_prompt=True)
    delta = text[text.rindex(_SENTINEL) + len(_SENTINEL):]
    if tok.eos_token and delta.startswith(tok.eos_token):
        delta = delta[len(tok.eos_token):]
    new = tok.encode(delta, add_special_tokens=False)
    ep.ids += new
    ep.mask += [OTHER] * len(new)
    ep.messages.append(message)


def _close(ep: Episode, why: str) -> None:
    """End an episode the env did not end: no answer, the env's score of None."""
    ep.done, ep.end, ep.reward = True, why, 0.0
    ep.scores = {k: float(v) for k, v in ep.env.score(ep.task, None).items()}
    ep.scores["reward"] = 0.0


def _cut(text: str) -> str:
    """The completion up to a stop string (a hallucinated observation is not the model's turn)."""
    for stop in STOP:
        if stop in text:
            text = text[: text.index(stop)]
    return text.strip()


# -- token sequences -------------------------------------------------------------------------


def encode(tokenizer: Any, messages: Sequence[dict[str, str]], add_generation_prompt: bool) -> tuple[list[int], list[int]]:
    """(ids, mask) of a rendered conversation; assistant contents are tokenised on their own
    (as generation produces them) and marked ROUTE when they are a talent answer, else EXEC."""
    masked = [{**m, "content": _SENTINEL} if m["role"] == "assistant" else m for m in messages]
    pieces = prompts.render(tokenizer, masked, add_generation_prompt).split(_SENTINEL)
    answers = [m["content"] for m in messages if m["role"] == "assistant"]
    ids: list[int] = []
    mask: list[int] = []
    for i, piece in enumerate(pieces):
        part = tokenizer.encode(piece, add_special_tokens=False)
        ids, mask = ids + part, mask + [OTHER] * len(part)
        if i < len(answers):
            part = tokenizer.encode(answers[i], add_special_tokens=False)
            kind = ROUTE if answers[i].startswith("<talent>") else EXEC
            ids, mask = ids + part, mask + [kind] * len(part)
    return ids, mask
