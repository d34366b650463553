"""The TalentRL training step on accelerate: collect a group per task, assign credit, update.

    trainer = Trainer(cfg, model, tokenizer, agent, tasks, accelerator)
    row = trainer.step(step)          # one optimizer step (x rl.num_iterations); a train_log row

One step (DESIGN §2), timed per phase:

1. routing: pi_route(. | x) exactly for each task (`Agent.route`); G talents sampled from it
   with a generator seeded from (seed, task, step) (`interventions`); `exhaustive`: every
   talent once.
2. rollouts: one execution rollout per sampled talent, rollout index i, through the one engine
   (`agent.run`), its sampler seeded from (step seed, task, i, turn).
3. interventions: M rollouts per sampled talent with the same index i (common random
   numbers), talent t'_{i,m} (`swap`, `swap_distinct`, `swap_other`) or the flat context (`ablate`); no gradient.
   A `swap` draw equal to t_i would replay the sampled rollout exactly, so it reuses it (with a
   confident router most draws are such: `reused_interventions` in the log). The draws are
   made before any rollout, so 2 and 3 are one engine call (one batch); the log splits its
   time between the two phases by the tokens each one's sequences hold.
4. credit: A_exec and A_route from the registries (`advantages`), as per-token weights
   (`loss.token_advantages`): A_route on talent-label tokens, A_exec on generated execution
   tokens, 0 on prompt and observation tokens. `rl.filter_groups` (DAPO's dynamic sampling)
   keeps only groups with an advantage somewhere and draws further tasks, up to
   `rl.max_gen_batches` batches, to fill the step (`collect_step`); `reward_drawn_mean` is the
   reward over everything drawn, `reward_mean` over what was trained.
5. log-probs: the reference's when beta > 0 (the starting policy: `policy.reference`), and the rollout-time old
   log-probs when num_iterations > 1 (with one pass the ratio is exactly 1 and old = new,
   detached, as in TRL). Under `models.cpu_bf16` forwards run in bf16 autocast and rollouts
   on a merged bfloat16 copy of the policy, rebuilt after each optimizer step.
6. backward + optimizer: the clipped surrogate over micro-batches, normalised by the active
   tokens of the whole step across micro-batches and processes. Without KL (beta 0), a rollout
   whose tokens all have zero advantage (an equal-reward group, no routing contrast) adds no
   gradient and is skipped; its tokens still count in the normaliser, as in TRL. A step in
   which no process has such a rollout takes no optimizer step (`optimizer_skipped` in the
   log): AdamW would still move every weight along its momentum, an update with no new
   evidence in it (the demo's 2 steps, the second of zero gradient, moved each of its 4.88 M
   LoRA weights by 1.67 lr: 1 lr in the first, 0.67 lr, bias-corrected momentum, in the second).

Why not a TRL GRPOTrainer subclass: it assumes one completion per prompt, a single
completion mask and one advantage per sequence; a TalentRL group is a multi-turn episode
whose tokens carry two different advantages (routing on the label, execution on the actions)
plus no-gradient intervention rollouts of the same task, and its generation loop is our
rollout engine. So the trainer is this loop on accelerate (DDP / DeepSpeed / FSDP through
`accelerate launch`), with TRL's `selective_log_softmax` and its loss formula (`loss`).

Processes: each takes every `world`-th task of the step, so a task's group (interventions
included) stays on one process; the token normaliser and the logged means are reduced
across processes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from talentrl_cli import models, policy
from talentrl_cli.metrics import outcome_scores
from talentrl_cli.rl import advantages as adv
from talentrl_cli.rl import interventions as iv
from talentrl_cli.rl.loss import clipped_loss, episode_scale, sequence_logps, token_advantages
from talentrl_cli.rollout import OTHER, ROUTE, RolloutConfig, episode_seed


def switch_on(value: Any) -> bool:
    """`rl.talents` / `rl.skills`: on (true) or none (false, off)."""
    return value is True or str(value).lower() in ("on", "true", "1")


MATCHED = ("matched", "matched_distinct")  # the routing credits that run matched interventions


def routing_key(rl: Any) -> str:
    """The `advantages.ROUTING` estimator the config asks for."""
    if str(rl.routing_credit) == "terminal":
        return "terminal"
    if str(rl.routing_estimator) == "exhaustive":
        return "exhaustive"
    return "matched_distinct" if str(rl.intervention) == "swap_distinct" else "matched"


def needs_reference(rl: Any) -> bool:
    """A KL term needs the reference policy: `rl.beta` on every token, `rl.route_beta` on the labels."""
    return bool(float(rl.beta) or float(rl.route_beta))


@dataclass
class Collected:
    """One step's trained rollouts (and their interventions) on this process."""

    episodes: list[Any] = field(default_factory=list)
    interventions: list[list[Any]] = field(default_factory=list)
    group: list[int] = field(default_factory=list)
    probs: list[float] = field(default_factory=list)
    tasks: list[Any] = field(default_factory=list)
    dists: list[dict[str, float]] = field(default_factory=list)
    a_exec: np.ndarray = field(default_factory=lambda: np.zeros(0))
    a_route: np.ndarray = field(default_factory=lambda: np.zeros(0))
    zero_share: float = 0.0
    reused: int = 0  # interventions under the sampled talent: its rollout, not run again
    seconds: dict[str, float] = field(default_factory=dict)
    drawn: int = 0      # groups run (`rl.filter_groups`: with those filtered out); 0: len(tasks)
    discarded: int = 0  # rollouts run for the groups filtered out
    drawn_rewards: list[float] = field(default_factory=list)  # every draw's trained-rollout rewards


def ran_rollouts(out: Collected) -> int:
    return len(out.episodes) + sum(len(x) for x in out.interventions) - out.reused


def keep_groups(out: Collected, groups: Sequence[int]) -> Collected:
    """`out` with only `groups`, renumbered in that order; advantages are left to recompute."""
    index = {g: k for k, g in enumerate(groups)}
    rows = [j for j, g in enumerate(out.group) if g in index]
    return Collected(episodes=[out.episodes[j] for j in rows], interventions=[out.interventions[j] for j in rows],
                     group=[index[out.group[j]] for j in rows], probs=[out.probs[j] for j in rows],
                     tasks=[out.tasks[g] for g in groups], dists=[out.dists[g] for g in groups],
                     reused=sum(1 for j in rows for x in out.interventions[j] if x is out.episodes[j]))


def concat(parts: Sequence[Collected]) -> Collected:
    """One step's groups from several draws, group ids offset to stay distinct."""
    out = Collected()
    for part in parts:
        out.group += [len(out.tasks) + g for g in part.group]
        for name in ("episodes", "interventions", "probs", "tasks", "dists"):
            getattr(out, name).extend(getattr(part, name))
        out.reused += part.reused
    return out


def credit_of(out: Collected) -> adv.Credit:
    """The estimators' input from a step's rollouts: rewards, groups, intervention rewards
    (masked where a rollout has fewer), pi_route(t_i | x)."""
    m = max((len(x) for x in out.interventions), default=0)
    baseline = np.zeros((len(out.episodes), m))
    present = np.zeros((len(out.episodes), m))
    for j, eps in enumerate(out.interventions):
        for k, ep in enumerate(eps):
            baseline[j, k], present[j, k] = ep.reward, 1.0
    return adv.Credit(rewards=[ep.reward for ep in out.episodes], group=out.group, baseline=baseline,
                      baseline_mask=present, probs=out.probs)


class Trainer:
    def __init__(self, cfg: Any, model: Any, tokenizer: Any, agent: Any, tasks: Sequence[Any], accelerator: Any,
                 strategy_of: dict[str, str] | None = None):
        import torch
        from transformers import get_scheduler

        self.cfg, self.rl, self.tokenizer, self.agent, self.tasks = cfg, cfg.rl, tokenizer, agent, list(tasks)
        self.accelerator, self.strategy_of = accelerator, strategy_of or {}
        self.eval_tasks: list[Any] = []  # held-out tasks for `evaluate` (the stage sets them: rl.eval_*)
        self.backend_stale = True  # the backend does not hold the current weights yet
        self.talents_on, self.skills_on = switch_on(cfg.rl.talents) and bool(agent.talents), switch_on(cfg.rl.skills)
        # the KL reference, the starting policy: a PEFT model's frozen reference adapter (or its
        # adapter disabled, from a fresh LoRA); a fully fine-tuned model's frozen copy
        self.frozen = (policy.frozen_copy(model) if needs_reference(self.rl) and not hasattr(model, "disable_adapter")
                       else None)
        params = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(params, lr=float(self.rl.lr))
        scheduler = get_scheduler("constant_with_warmup", optimizer, num_warmup_steps=int(self.rl.warmup_steps))
        # the scheduler stays unwrapped: accelerate's would step once per process per step
        self.model, self.optimizer = accelerator.prepare(model, optimizer)
        self.scheduler = scheduler
        if int(self.rl.tasks_per_step) % accelerator.num_processes:
            from talentrl_cli.errors import ConfigError

            raise ConfigError(f"rl.tasks_per_step={self.rl.tasks_per_step} does not split over "
                              f"{accelerator.num_processes} processes",
                              "use a multiple of the process count: every process runs the same number of groups")
        # DAPO's dynamic sampling: a step owns `max_gen_batches` draws of tasks (`collect_step`)
        self.filter_groups = switch_on(self.rl.filter_groups)
        self.draws = int(self.rl.max_gen_batches) if self.filter_groups else 1
        if self.draws < 1:
            from talentrl_cli.errors import ConfigError

            raise ConfigError(f"rl.max_gen_batches={self.rl.max_gen_batches} must be at least 1",
                              "it is how many batches of rl.tasks_per_step tasks a step may draw")
        self.rollout = RolloutConfig(int(self.rl.max_steps), int(self.rl.max_new_tokens), int(self.rl.max_total_tokens),
                                     float(self.rl.temperature), float(self.rl.top_p), int(cfg.seed))

    # -- tasks --------------------------------------------------------------------------------

    def step_tasks(self, step: int, draw: int = 0) -> list[Any]:
        """This process's tasks of `step` (its `draw`-th batch under `rl.filter_groups`): epochs
        of a seeded shuffle, then every world-th. A step owns `self.draws` consecutive batches,
        so its tasks are a function of the step alone and a resumed run needs no task cursor."""
        n, per = len(self.tasks), int(self.rl.tasks_per_step)
        picked = []
        first = (step * self.draws + draw) * per
        for position in range(first, first + per):
            epoch, offset = divmod(position, n)
            order = np.random.default_rng([int(self.cfg.seed), epoch]).permutation(n)
            picked.append(self.tasks[int(order[offset])])
        world, rank = self.accelerator.num_processes, self.accelerator.process_index
        return picked[rank::world]

    # -- collection ---------------------------------------------------------------------------

    def _serve_current(self) -> None:
        """Generation mode, and the backend holds the current weights: a vLLM push (a full
        weight copy) happens once per optimizer step, not again for a `rl.eval_every` pass."""
        current = self.accelerator.unwrap_model(self.model).eval()
        if not hasattr(self.agent.backend, "sync_weights"):
            if not models.cpu_bf16(self.cfg.model):
                self.agent.backend.model = current
            elif self.backend_stale:  # a CPU with native bf16: a merged bfloat16 copy decodes 2.3x faster
                self.agent.backend.model = policy.generation_copy(current, self.cfg.model)
        elif self.backend_stale:
            self.agent.backend.sync_weights(current)  # vLLM: this step's weights
        self.backend_stale = False

    def evaluate(self, tasks: Sequence[Any]) -> float:
        """Greedy EM on `tasks` as eval's `talent` mode runs it (the argmax of pi_route; the
        flat or skill-free context under `rl.talents=none` / `rl.skills=none`), within rl's turn
        and token limits, over every process's share; `rl.eval_every`."""
        import torch

        mine = list(tasks)[self.accelerator.process_index::self.accelerator.num_processes]
        self._serve_current()
        dists = self.agent.route(mine) if self.talents_on and mine else [{} for _ in mine]
        names = [max(d, key=d.get) if d else None for d in dists]
        episodes = self._run(mine, names, [0] * len(mine), replace(self.rollout, temperature=0.0))
        em_sum = sum(outcome_scores(e.scores, e.reward)["em"] for e in episodes)
        local = torch.tensor([em_sum, float(len(episodes))], device=self.accelerator.device)
        em, n = self.accelerator.reduce(local, "sum").tolist()
        self.model.train()
        return em / max(n, 1.0)

    def collect(self, tasks: Sequence[Any], step: int) -> Collected:
        out, clock = Collected(), _Clock()
        rollout = replace(self.rollout, seed=episode_seed(int(self.cfg.seed), "rl-step", step, 0) % (2**31))
        self._serve_current()
        dists = self.agent.route(tasks) if self.talents_on else [{} for _ in tasks]
        out.tasks, out.dists = list(tasks), dists
        plan = [self._plan(task, dist, step) for task, dist in zip(tasks, dists, strict=True)]
        out.seconds["routing"] = clock.lap()
        # (group, task, talent, its interventions' talents, rollout index); exhaustive runs every
        # talent on one random stream (rollout 0), so their rewards differ by the talent alone
        same_stream = str(self.rl.routing_estimator) == "exhaustive" and self.talents_on
        specs = [(g, tasks[g], name, swaps[i], 0 if same_stream else i)
                 for g, (names, swaps) in enumerate(plan) for i, name in enumerate(names)]
        # an intervention under the sampled talent itself would replay the sampled rollout token
        # for token (same context, same random stream: tested), so it reuses it instead of running
        pairs = [(j, t) for j, spec in enumerate(specs) for t in spec[3]]
        fresh = [(j, t) for j, t in pairs if t != specs[j][2]]
        # one engine call for both: the interventions' talents are drawn before any rollout, and a
        # batch of G(1 + M) decodes far faster per rollout than G then a small batch of the rest
        ran = self._run([s[1] for s in specs] + [specs[j][1] for j, _ in fresh],
                        [s[2] for s in specs] + [t for _, t in fresh],
                        [s[4] for s in specs] + [specs[j][4] for j, _ in fresh], rollout)  # index i: stream i
        out.episodes, done = ran[:len(specs)], iter(ran[len(specs):])
        for ep, (g, *_) in zip(out.episodes, specs, strict=True):
            ep.route = dists[g]
        out.group = [s[0] for s in specs]
        out.probs = [dists[g].get(name, 0.0) if name else 0.0 for g, _, name, _, _ in specs]
        out.interventions = [[] for _ in out.episodes]
        for j, t in pairs:
            out.interventions[j].append(next(done) if t != specs[j][2] else out.episodes[j])
        out.reused = len(pairs) - len(fresh)
        out.seconds.update(_apportion(clock.lap(), [len(ep.ids) for ep in ran], len(specs)))
        self._credit(out)
        self.model.train()
        return out

    def collect_step(self, step: int) -> Collected:
        """The step's groups. Under `rl.filter_groups` (DAPO's dynamic sampling) only groups
        with an advantage somewhere are kept, and further batches of tasks are drawn, up to
        `rl.max_gen_batches`, to fill this process's share: at a low success rate most groups
        are all-zero and would teach nothing. What was filtered out is logged, not trained."""
        if not self.filter_groups:
            return self.collect(self.step_tasks(step), step)
        quota, parts, seconds = len(self.step_tasks(step)), [], {}
        kept = drawn = flat = discarded = 0
        rewards: list[float] = []
        for draw in range(self.draws):
            out = self.collect(self.step_tasks(step, draw), step)
            rewards += [ep.reward for ep in out.episodes]
            part = keep_groups(out, adv.informative_groups(out.group, out.a_exec, out.a_route)[:quota - kept])
            parts.append(part)
            kept += len(part.tasks)
            drawn, flat = drawn + len(out.tasks), flat + round(out.zero_share * len(out.tasks))
            discarded += ran_rollouts(out) - ran_rollouts(part)
            for k, v in out.seconds.items():
                seconds[k] = seconds.get(k, 0.0) + v
            if kept >= quota:
                break
        merged = concat(parts)
        self._credit(merged)
        merged.zero_share, merged.drawn, merged.discarded, merged.seconds = flat / max(drawn, 1), drawn, discarded, seconds
        merged.drawn_rewards = rewards
        return merged

    def _plan(self, task: Any, dist: dict[str, float], step: int) -> tuple[list[str | None], list[list[str | None]]]:
        """(talents of the trained rollouts, their intervention talents) for one task."""
        g = int(self.rl.group_size)
        if not self.talents_on:
            return [None] * g, [[] for _ in range(g)]
        if str(self.rl.routing_estimator) == "exhaustive":
            return list(dist), [[] for _ in dist]
        rng = iv.generator(int(self.cfg.seed), task.id, step)
        sampled = iv.sample_talents(dist, g, rng)
        if routing_key(self.rl) not in MATCHED or int(self.rl.interventions) <= 0:
            return list(sampled), [[] for _ in sampled]
        return list(sampled), iv.intervention_talents(dist, sampled, str(self.rl.intervention),
                                                      int(self.rl.interventions), rng)

    def _run(self, tasks: list[Any], names: list[str | None], rollouts: list[int], rollout: RolloutConfig) -> list[Any]:
        if not tasks:
            return []
        episodes = self.agent.start(tasks, names, rollouts=rollouts, skills=self.skills_on)
        return self.agent.run(episodes, rollout)

    def _credit(self, out: Collected) -> None:
        credit = credit_of(out)
        out.a_exec = adv.EXECUTION.get(str(self.rl.exec_estimator))(credit)
        key = routing_key(self.rl)
        scale = {"scale_by": str(self.rl.route_scale)} if key in MATCHED else {}
        out.a_route = (adv.ROUTING.get(key)(credit, out.a_exec, **scale) if self.talents_on
                       else np.zeros(len(out.episodes)))
        out.zero_share = adv.zero_advantage_share(credit)

    # -- update -------------------------------------------------------------------------------

    def update(self, out: Collected) -> dict[str, float]:
        import torch

        clock, stats = _Clock(), {"kl_sum": 0.0, "clipped_sum": 0.0, "tokens": 0.0, "loss": 0.0, "grad_norm": 0.0,
                                   "skipped": 0.0}
        batches = self._batches(out)
        by_episode = str(self.rl.loss_agg) == "episode"
        for b in batches:
            b["scale"] = episode_scale(b["active"]) if by_episode else None
        local = sum(float((b["active"].sum(dim=1) > 0).sum() if by_episode else b["active"].sum()) for b in batches)
        n_active = float(self.accelerator.reduce(torch.tensor(local, device=self.accelerator.device), "sum"))
        # without KL on every token, a rollout with no advantage anywhere adds no gradient; the
        # `route_beta` anchor rides on the rollouts that do (a row for its 1-3 label tokens alone
        # would cost a whole forward and backward)
        if not float(self.rl.beta):
            batches = [b for b in batches if bool(b["weights"].abs().sum() > 0)]
            signal = float(self.accelerator.reduce(torch.tensor(float(len(batches)), device=self.accelerator.device), "sum"))
            if not signal:
                return {**stats, "skipped": 1.0, "seconds": {"logprobs": clock.lap(), "backward": 0.0, "optimizer": 0.0}}
        with torch.no_grad():
            for b in batches:
                b["ref"] = self._ref_logps(b) if needs_reference(self.rl) else None
                b["old"] = self._logps(b).detach() if int(self.rl.num_iterations) > 1 else None
        seconds = {"logprobs": clock.lap(), "backward": 0.0, "optimizer": 0.0}
        world = self.accelerator.num_processes
        for _ in range(int(self.rl.num_iterations)):
            for i, b in enumerate(batches):
                logps = self._logps(b)
                old = b["old"] if b["old"] is not None else logps.detach()
                loss, s = clipped_loss(logps, old, b["ref"], b["weights"], b["active"], n_active,
                                       float(self.rl.clip_eps_low), float(self.rl.clip_eps_high), float(self.rl.beta),
                                       scale=b["scale"], route_beta=float(self.rl.route_beta), route=b["route"])
                # processes hold different numbers of micro-batches: only the last backward syncs
                sync = self.accelerator.no_sync(self.model) if i < len(batches) - 1 else nullcontext()
                with sync:
                    self.accelerator.backward(loss * world)  # DDP averages over processes; the normaliser is global
                stats["loss"] += float(loss.detach())
                for key in ("kl_sum", "clipped_sum", "tokens"):
                    stats[key] += s[key]
            if not batches:  # nothing to learn on this process: its one synced backward, of zeros
                self.accelerator.backward(sum(p.sum() for p in self.model.parameters() if p.requires_grad) * 0.0)
            seconds["backward"] += clock.lap()
            stats["grad_norm"] = float(self.accelerator.clip_grad_norm_(
                [p for p in self.model.parameters() if p.requires_grad], float(self.rl.max_grad_norm)))
            self.optimizer.step()
            self.backend_stale = True
            self.scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
            seconds["optimizer"] += clock.lap()
        stats["seconds"] = seconds
        return stats

    def _batches(self, out: Collected) -> list[dict[str, Any]]:
        """Right-padded micro-batches of the trained rollouts, tensors aligned to the
        predicted tokens (position t predicts ids[t + 1])."""
        import torch

        weights = token_advantages([ep.mask for ep in out.episodes], out.a_route, out.a_exec)
        rows = list(range(len(out.episodes)))
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        device, size = self.accelerator.device, max(1, int(self.rl.micro_batch))
        batches = []
        for start in range(0, len(rows), size):
            chunk = rows[start:start + size]
            width = max(len(out.episodes[j].ids) for j in chunk)
            ids = torch.full((len(chunk), width), pad, dtype=torch.long)
            attention = torch.zeros((len(chunk), width), dtype=torch.long)
            w = torch.zeros((len(chunk), width - 1))
            active = torch.zeros((len(chunk), width - 1))
            route = torch.zeros((len(chunk), width - 1), dtype=torch.bool)
            for r, j in enumerate(chunk):
                ep, n = out.episodes[j], len(out.episodes[j].ids)
                ids[r, :n] = torch.tensor(ep.ids)
                attention[r, :n] = 1
                w[r, : n - 1] = torch.tensor(weights[j][1:])
                active[r, : n - 1] = torch.tensor([float(m != OTHER) for m in ep.mask[1:]])
                route[r, : n - 1] = torch.tensor([m == ROUTE for m in ep.mask[1:]])
            batches.append({"ids": ids.to(device), "attention": attention.to(device),
                            "weights": w.to(device), "active": active.to(device), "route": route.to(device)})
        return batches

    def _logps(self, b: dict[str, Any], model: Any = None) -> Any:
        with models.autocast(self.cfg.model):  # bf16 autocast on a CPU with native bf16 (`models.cpu_bf16`)
            return sequence_logps(self.model if model is None else model, b["ids"], b["attention"],
                                  float(self.rl.temperature), b["route"], b["active"] > 0)

    def _ref_logps(self, b: dict[str, Any]) -> Any:
        """The reference's log-probs on the trained tokens (B, T - 1). Under `route_beta` alone
        only the talent-label tokens are scored, from a forward cut after the last one: the
        routing turn comes before the execution turns, so that prefix is a fraction of the row."""
        import torch.nn.functional as F

        width = b["weights"].shape[1]
        if not float(self.rl.beta):
            labels = b["route"].any(dim=0).nonzero()
            cut = int(labels.max()) + 1 if len(labels) else 1
            b = {**b, "ids": b["ids"][:, :cut + 1], "attention": b["attention"][:, :cut + 1],
                 "route": b["route"][:, :cut], "active": b["route"][:, :cut].float()}
        if self.frozen is not None:
            ref = self._logps(b, self.frozen)
        else:
            model = self.accelerator.unwrap_model(self.model)
            with policy.reference(model):
                ref = self._logps(b, model)
        return F.pad(ref, (0, width - ref.shape[1]))

    # -- one step -----------------------------------------------------------------------------

    def step(self, step: int) -> tuple[dict[str, Any], Collected]:
        started = time.perf_counter()
        out = self.collect_step(step)
        stats = self.update(out)
        row = self._row(step, out, stats, time.perf_counter() - started)
        return row, out

    def _row(self, step: int, out: Collected, stats: dict[str, Any], seconds: float) -> dict[str, Any]:
        import torch

        eps = out.episodes
        outcomes = [outcome_scores(e.scores, e.reward) for e in eps]
        local = {
            "n": len(eps), "reward": sum(e.reward for e in eps), "reward_sq": sum(e.reward ** 2 for e in eps),
            **{k: sum(s[k] for s in outcomes) for k in ("em", "f1", "success")},
            "policy_tokens": sum(e.policy_tokens for e in eps),
            "a_route": float(np.sum(out.a_route)), "a_route_sq": float(np.sum(out.a_route ** 2)),
            "route_signal": float(np.count_nonzero(out.a_route)),
            "drawn_reward": sum(out.drawn_rewards or [e.reward for e in eps]), "n_drawn": len(out.drawn_rewards or eps),
            "rollouts": ran_rollouts(out) + out.discarded, "reused": out.reused,
            "tasks": len(out.dists), "drawn": out.drawn or len(out.dists),
            "zero_groups": out.zero_share * (out.drawn or len(out.dists)),
            "entropy": sum(_entropy(d) for d in out.dists),
            "route_hits": sum(self._route_hit(task, d) for task, d in zip(out.tasks, out.dists, strict=True)),
            "route_known": sum(1 for task, d in zip(out.tasks, out.dists, strict=True)
                               if d and task.strategy and self.strategy_of),
            **{k: stats[k] for k in ("kl_sum", "clipped_sum", "tokens", "loss")},
        }
        keys = sorted(local)
        total = self.accelerator.reduce(torch.tensor([float(local[k]) for k in keys], device=self.accelerator.device), "sum")
        t = dict(zip(keys, total.tolist(), strict=True))
        n = max(t["n"], 1.0)
        row = {
            "step": step, "reward_mean": t["reward"] / n, "reward_std": _std(t["reward"], t["reward_sq"], n),
            "success_mean": t["success"] / n, "em_mean": t["em"] / n, "f1_mean": t["f1"] / n,
            "route_entropy": t["entropy"] / max(t["tasks"], 1.0),
            "route_acc": t["route_hits"] / t["route_known"] if t["route_known"] else None,
            "a_route_mean": t["a_route"] / n, "a_route_std": _std(t["a_route"], t["a_route_sq"], n),
            # a 0 routing advantage teaches the router nothing; under matched credit that is every swap
            # that drew the sampled talent or earned its reward, most of them with a confident router
            "route_signal_share": t["route_signal"] / n,
            "reward_drawn_mean": t["drawn_reward"] / max(t["n_drawn"], 1.0),  # = reward_mean unless filtered
            "zero_adv_share": t["zero_groups"] / max(t["drawn"], 1.0), "groups_drawn": int(t["drawn"]),
            "groups_trained": int(t["tasks"]),
            "kl": t["kl_sum"] / max(t["tokens"], 1.0), "clip_frac": t["clipped_sum"] / max(t["tokens"], 1.0),
            "grad_norm": stats["grad_norm"], "optimizer_skipped": bool(stats["skipped"]), "loss": t["loss"], "policy_tokens": int(t["policy_tokens"]),
            "rollouts": int(t["rollouts"]), "reused_interventions": int(t["reused"]), "rollouts_per_s": t["rollouts"] / seconds if seconds else None,
            "trained_tokens_per_s": t["tokens"] / seconds if seconds else None, "seconds": round(seconds, 3),
        }
        row.update({f"time_{k}": round(v, 3) for k, v in {**out.seconds, **stats["seconds"]}.items()})
        return row

    def _route_hit(self, task: Any, dist: dict[str, float]) -> float:
        if not dist or not task.strategy or not self.strategy_of:
            return 0.0
        return float(self.strategy_of.get(max(dist, key=dist.get)) == task.strategy)


class _Clock:
    def __init__(self) -> None:
        self.last = time.perf_counter()

    def lap(self) -> float:
        now = time.perf_counter()
        seconds, self.last = now - self.last, now
        return seconds


def _apportion(seconds: float, lengths: Sequence[int], trained: int) -> dict[str, float]:
    """The shared engine call's time split into `rollouts` and `interventions` by the tokens
    each part's sequences hold (prompt and generated: what the forward passes process)."""
    total = sum(lengths) or 1
    share = sum(lengths[trained:]) / total
    return {"rollouts": seconds * (1.0 - share), "interventions": seconds * share}


def _entropy(dist: dict[str, float]) -> float:
    p = np.array([v for v in dist.values() if v > 0])
    return float(-(p * np.log(p)).sum()) if len(p) else 0.0


def _std(total: float, squares: float, n: float) -> float:
    mean = total / n
    return float(max(squares / n - mean * mean, 0.0) ** 0.5)
