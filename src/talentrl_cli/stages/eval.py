"""`talentrl eval`: batched route -> retrieve -> execute over an env's tasks, per mode, with CIs.

    talentrl eval                                       # inputs.model=sft:latest (or rl), inputs.index=index:latest
    talentrl eval inputs.model=none model=smollm2 eval.modes=[zero_shot,flat] eval.limit=50
    talentrl eval env=qa env.path=.../hotpotqa_distractor_100_with_context.jsonl \\
        env.corpus=.../hotpotqa_distractor_100_corpus.jsonl eval.modes=[zero_shot,flat]

Modes: `zero_shot` (no skills, no talent), `flat` (R(x) with lam = 0), `talent` (the policy
routes: exact pi_route argmax, or `eval.routing=generate`), `oracle_talent` (the talent most of
the task's gold strategy's mined trajectories carry; without gold, the best of every talent)
and `random_talent`.

`eval.base_modes=[zero_shot]` also runs those modes on the base model (`model=`), reported as
`zero_shot@base`: the trained policy and the untrained baseline in one table.

Whether the talent matters: `report.md` gives paired bootstrap EM differences on the same
tasks (`oracle_talent - random_talent`, `talent - random_talent`, `oracle_talent - talent`),
and, for a policy trained with `sft.unseen_strategies`, EM on seen and unseen strategies.

The artifact: `results.jsonl` (one line per task and mode, with its transcript and token
masks), `metrics.json`, `report.md` (mode x benchmark table with bootstrap 95% CIs and the
command that produced it) and PNG plots (`eval_report`). The model is the `inputs.model`
artifact (an sft/rl PEFT adapter or full model, see `stages/sft.py`), or with
`inputs.model=none` the config's `model=`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from talentrl_cli.agent import talent_strategies  # noqa: F401 - part of this module's interface
from talentrl_cli.stages import Stage, register_stage

MODES = ("zero_shot", "flat", "talent", "oracle_talent", "random_talent")
TALENT_MODES = ("talent", "oracle_talent", "random_talent")


def run(cfg: Any, inputs: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    from talentrl_cli import eval_report
    from talentrl_cli.envs import env_from_config
    from talentrl_cli.generation import make_backend
    from talentrl_cli.jsonl import write_jsonl
    from talentrl_cli.progress import current

    modes = check_modes(cfg, inputs)
    env = env_from_config(cfg)
    tasks = env.tasks(str(cfg.eval.split))
    tasks = tasks[: int(cfg.eval.limit)] if cfg.eval.limit is not None else tasks
    rows: list[dict[str, Any]] = []
    for suffix, artifact, run_modes in model_runs(cfg, inputs, modes):
        label = artifact.ref if artifact else cfg.model.get("name_or_path") or cfg.model.kind
        with current().step(f"loading {label}"):
            model, tokenizer = load_model(cfg, artifact)
        backend = make_backend(model, tokenizer, str(cfg.eval.backend), int(cfg.eval.batch_size))
        ctx = Context(cfg, backend, env, tasks, inputs.get("index"))
        for mode in run_modes:
            rows += [{"mode": mode + suffix, **ep.record(), "strategy": ep.task.strategy,
                      "question": ep.task.question, "gold": ep.task.answers} for ep in ctx.evaluate(mode)]
    write_jsonl(out_dir / "results.jsonl", rows)
    metrics = eval_report.summarise(rows, ctx.talent_to_strategy, benchmark_name(cfg), int(cfg.eval.n_bootstrap),
                                    int(cfg.seed), unseen=unseen_strategies(inputs.get("model")),
                                    oracle=ctx.strategy_to_talent)
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    eval_report.write_report(out_dir, metrics, rows, ctx.talent_to_strategy)
    eval_report.print_table(metrics, current().console)
    eval_report.log_wandb_table(metrics)
    return eval_report.flat_metrics(metrics)


def model_runs(cfg: Any, inputs: dict[str, Any], modes: list[str]) -> list[tuple[str, Any, list[str]]]:
    """(row suffix, model artifact or None, modes) per model to load: `eval.base_modes` first,
    on the config's `model=` (the base an adapter was trained from), reported as
    `<mode>@base`, so one table holds the base model's zero-shot and the trained policy."""
    base = [str(m) for m in cfg.eval.get("base_modes") or []]
    runs = [("@base", None, base)] if base and inputs.get("model") is not None else []
    return runs + [("", inputs.get("model"), modes)]


def unseen_strategies(artifact: Any | None) -> list[str]:
    """The strategies the model's SFT left out (`sft.unseen_strategies`), read from its
    manifest."""
    if artifact is None:
        return []
    return list(artifact.manifest.get("config", {}).get("sft", {}).get("unseen_strategies") or [])


def check_modes(cfg: Any, inputs: dict[str, Any]) -> list[str]:
    from talentrl_cli.errors import ConfigError

    modes = [str(m) for m in cfg.eval.modes]
    bad = [m for m in [*modes, *(cfg.eval.get("base_modes") or [])] if m not in MODES]
    if bad or not modes:
        raise ConfigError(f"eval.modes: unknown mode(s) {', '.join(bad) or '(none given)'}",
                          f"use some of: {', '.join(MODES)}")
    if "index" not in inputs and any(m != "zero_shot" for m in modes):
        raise ConfigError("inputs.index=none allows only eval.modes=[zero_shot]")
    return modes


def benchmark_name(cfg: Any) -> str:
    if str(cfg.env.name) == "qa":
        return f"qa/{Path(str(cfg.env.path)).stem}"
    return f"{cfg.env.name}/{cfg.eval.split}"


def load_model(cfg: Any, artifact: Any | None) -> tuple[Any, Any]:
    """(model, tokenizer) for generation (`policy.load_for_generation`): the config's base
    model, or an sft/rl artifact."""
    import torch

    from talentrl_cli.policy import load_for_generation

    torch.manual_seed(int(cfg.seed))
    return load_for_generation(cfg.model, artifact)


class Metered:
    """The backend, reporting each batched call to the stage display: a bar per mode over
    episodes, with the turn and how many still run. The rollout engine makes one `generate`
    call per turn over the running episodes, so this sees progress without changing it."""

    def __init__(self, backend: Any):
        from talentrl_cli.progress import current

        self.backend, self.display = backend, current()
        self.task: Any = None
        self.done = self.batch = self.turn = 0

    def __getattr__(self, name: str) -> Any:  # tokenizer, forget, ...
        if name == "backend":  # not set yet (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self.backend, name)

    def begin(self, mode: str, episodes: int) -> None:
        self.task, self.done = self.display.task(mode, total=episodes, unit="episodes"), 0

    def start_batch(self, episodes: int) -> None:
        self.batch, self.turn = episodes, 0

    def end_batch(self) -> None:
        self.done, self.batch = self.done + self.batch, 0
        self.display.update(self.task, completed=self.done)

    def end(self) -> None:
        self.display.finish(self.task, info="")

    def generate(self, prompts: Any, seeds: Any, params: Any) -> Any:
        if self.batch:  # an execution turn (else: free-form routing)
            self.turn += 1
            info = f"turn {self.turn}, {len(prompts)} running"
            self.display.update(self.task, completed=self.done + self.batch - len(prompts), info=info)
        else:
            self.display.update(self.task, info="routing")
        return self.backend.generate(prompts, seeds, params)

    def score(self, prompts: Any, continuations: Any) -> Any:
        self.display.update(self.task, info=f"routing: scoring {len(prompts)} talent labels")
        return self.backend.score(prompts, continuations)


class Context:
    """One eval run's agent (`agent.Agent`: backend, env, skill bank) over its tasks, and
    the choice of talent each mode makes."""

    def __init__(self, cfg: Any, backend: Any, env: Any, tasks: list[Any], index: Any | None):
        from talentrl_cli.agent import Agent
        from talentrl_cli.rollout import RolloutConfig

        self.cfg, self.backend, self.env, self.tasks = cfg, Metered(backend), env, tasks
        e = cfg.eval
        self.rollout = RolloutConfig(int(e.max_steps), int(e.max_new_tokens), int(e.max_total_tokens),
                                     float(e.temperature), float(e.top_p), int(cfg.seed))
        self.agent = Agent.from_config(cfg, self.backend, env, index)
        self.bank, self.talents = self.agent.bank, self.agent.talents
        self.talent_to_strategy = talent_strategies(self.bank, env) if self.bank else {}
        self.strategy_to_talent = oracle_talents(index, set(self.talents)) if self.bank else {}

    def evaluate(self, mode: str) -> list[Any]:
        """The mode's episodes, one per task (the oracle may run several per task)."""
        self.backend.begin(mode, self._n_episodes(mode))
        episodes = self._evaluate(mode)
        self.backend.end()
        return episodes

    def _n_episodes(self, mode: str) -> int:
        if mode != "oracle_talent":
            return len(self.tasks)
        known = sum(1 for name in self._oracle_names() if name)
        return known + (len(self.tasks) - known) * len(self.talents)

    def _evaluate(self, mode: str) -> list[Any]:
        if mode in ("zero_shot", "flat"):
            return self._run([None] * len(self.tasks), skills=mode == "flat")
        if mode == "oracle_talent":
            return self._oracle()
        names, dists = self._choose(mode)
        episodes = self._run(names)
        for ep, dist in zip(episodes, dists, strict=True):
            ep.route = dist
        return episodes

    def _choose(self, mode: str) -> tuple[list[str | None], list[dict[str, float]]]:
        from talentrl_cli.rollout import argmax, episode_seed, route_generate

        talents = list(self.talents.values())
        if mode == "random_talent":
            picks = [talents[episode_seed(int(self.cfg.seed), t.id, 0, -2) % len(talents)].name for t in self.tasks]
            return picks, [{} for _ in self.tasks]
        if str(self.cfg.eval.routing) == "generate":
            return route_generate(self.backend, self.tasks, talents, int(self.cfg.seed)), [{} for _ in self.tasks]
        dists = self.agent.route(self.tasks)
        return [argmax(d) for d in dists], dists

    def _run(self, names: list[str | None], tasks: list[Any] | None = None, skills: bool = True) -> list[Any]:
        episodes = self.agent.start(tasks if tasks is not None else self.tasks, names, skills=skills)
        self.backend.start_batch(len(episodes))
        episodes = self.agent.run(episodes, self.rollout)
        self.backend.end_batch()
        return episodes

    def _oracle(self) -> list[Any]:
        """The gold-mapped talent where the task has gold and some talent maps to it; else
        the best-rewarded of every talent (an upper bound on routing)."""
        names = self._oracle_names()
        known = [i for i, n in enumerate(names) if n]
        best: list[Any] = [None] * len(self.tasks)
        self._fill(best, known, [names[i] for i in known])
        unknown = [i for i, n in enumerate(names) if not n]
        for name in self.talents if unknown else ():
            self._fill(best, unknown, [name] * len(unknown))
        return best

    def _oracle_names(self) -> list[str | None]:
        by_strategy = {s: n for n, s in sorted(self.talent_to_strategy.items(), reverse=True)}
        by_strategy.update(self.strategy_to_talent)
        return [by_strategy.get(t.strategy) if t.strategy else None for t in self.tasks]

    def _fill(self, best: list[Any], rows: list[int], names: list[str]) -> None:
        """Run `names[j]` on task `rows[j]`; keep it where it beats what `best` holds."""
        if not rows:
            return
        episodes = self._run(names, [self.tasks[i] for i in rows])
        for i, ep in zip(rows, episodes, strict=True):
            if best[i] is None or ep.reward > best[i].reward:
                best[i] = ep


def oracle_talents(index: Any, names: set[str]) -> dict[str, str]:
    """gold strategy -> the talent most of its mined trajectories are labelled with, from the
    mine artifact the index was built from; empty when that artifact is gone or has no gold.

    The oracle needs a talent for every strategy; `talent_strategies` maps the other way (a
    talent to its exemplars' majority strategy) and leaves a strategy that is no talent's
    majority (WorldQA's single-hop questions, split over two talents) without one."""
    from collections import Counter, defaultdict

    from talentrl_cli.artifacts import ArtifactStore
    from talentrl_cli.jsonl import iter_jsonl

    record = index.manifest.get("inputs", {}).get("mine", {})
    try:  # the store holding the index holds its mine (resolved as `artifacts.lineage` does)
        mine = ArtifactStore(index.path.parent.parent).resolve(record["ref"])
        if mine.digest != record["digest"]:
            return {}
        strategy = {t["id"]: t["task"].get("strategy") for t in iter_jsonl(mine.file("trajectories.jsonl"))}
        labels = list(iter_jsonl(mine.file("labels.jsonl")))
    except Exception:  # noqa: BLE001 - no mine to read: the oracle falls back to talent_strategies
        return {}
    votes: dict[str, Counter] = defaultdict(Counter)
    for label in labels:
        gold = strategy.get(label["trajectory_id"])
        if gold and label["talent"] in names:
            votes[gold][label["talent"]] += 1
    return {s: sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] for s, c in sorted(votes.items())}


STAGE = register_stage(Stage(
    name="eval",
    run=run,
    summary="Evaluate a model (sft, rl or base) per mode: EM/F1/success with bootstrap CIs, report, plots.",
    example="talentrl eval inputs.model=sft:latest inputs.index=index:latest eval.modes=[zero_shot,flat,talent]",
    inputs={"model": ("rl", "sft"), "index": ("index",)},
    optional_inputs=frozenset({"model", "index"}),
    sections=("seed", "eval", "model", "env", "index", "embedder"),
    headline=("*/em",),
))
