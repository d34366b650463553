"""`talentrl rl`: TalentRL on the env's train split (routing credit by matched interventions,
GRPO execution credit), and its baselines as switches.

    talentrl rl                                            # model rl:latest (sft:latest before any rl), index:latest
    talentrl rl model=smollm2 rl.steps=10 rl.group_size=4 rl.interventions=2 rl.lr=1e-5
    talentrl rl rl.routing_credit=terminal                 # plain GRPO credit on the talent tokens
    talentrl rl rl.intervention=ablate                     # the flat context as the matched baseline
    talentrl rl rl.intervention=swap_distinct              # every intervention another talent: swap at less variance
    talentrl rl rl.route_beta=1.0                          # a KL to the starting policy on the talent labels only
    talentrl rl rl.routing_estimator=exhaustive            # every talent once per task: the exact routing gradient
    talentrl rl rl.talents=none                            # SkillBank + GRPO; rl.skills=none: no skills
    talentrl rl inputs.model=none                          # start from the config's base model (a fresh LoRA)
    talentrl rl rl.eval_every=5 rl.eval_limit=32           # greedy EM on 32 dev tasks every 5 steps and at the end
    talentrl rl rl.max_tasks=8 rl.tasks_per_step=8         # every step on the same 8 train tasks
    talentrl rl --resume                                   # continue from the last checkpoint (= rl.resume=true)
    accelerate launch --cpu --num_processes 2 -m talentrl_cli rl

The method is `rl.trainer` (one step, its phases and why it is not a GRPOTrainer subclass),
`rl.advantages` (the estimators), `rl.interventions` and `rl.loss`.

The artifact: the policy in sft's format (`policy.save_policy`: the adapter the sft stage
trained, continued, or the full model with `rl.full_finetune=true`), so `talentrl eval
inputs.model=rl:latest` reads it; `train_log.jsonl` (one row per step: reward, EM/F1,
success, routing entropy and accuracy against gold, A_route mean/std, the zero-advantage
share, KL, clip fraction, grad norm, tokens, rollouts/s and wall time per phase; with
`rl.eval_every=N`, `dev_em` before every Nth step and `dev_em_final` after the last);
`rollouts.jsonl` (every `rl.log_rollouts_every`-th step's transcripts with token masks and
advantages); `report.md` with `curves.png` (reward and routing accuracy per step) and the execution credit by action.
Checkpoints every `rl.save_steps` steps under `<root>/.checkpoints/rl/<key>/` (see
`rl.checkpoint`); the published artifact appears only when the run finishes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from talentrl_cli.stages import Stage, checkpoint_dir, register_stage

SWITCHES = {"intervention": ("swap", "swap_distinct", "swap_other", "ablate"),
            "routing_estimator": ("contrast", "exhaustive"), "routing_credit": ("matched", "terminal"),
            "route_scale": ("reward", "contrast")}


def run(cfg: Any, inputs: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    import shutil

    from talentrl_cli.distributed import is_main_process

    check_switches(cfg)
    trainer = build_trainer(cfg, inputs)
    folder = checkpoint_dir("rl", out_dir, cfg, inputs)
    start, rows = resume_point(cfg, folder, trainer)
    rows = train_loop(cfg, trainer, folder, start, rows, out_dir)
    if not is_main_process():
        raise SystemExit(0)  # data-parallel workers: rank 0 alone publishes the artifact
    publish(cfg, trainer, rows, out_dir)
    shutil.rmtree(folder, ignore_errors=True)
    return summary(rows)


def check_switches(cfg: Any) -> None:
    from talentrl_cli.errors import ConfigError
    from talentrl_cli.rl.advantages import EXECUTION
    from talentrl_cli.rl.trainer import switch_on

    rl = cfg.rl
    for key, allowed in SWITCHES.items():
        if str(rl[key]) not in allowed:
            raise ConfigError(f"rl.{key}={rl[key]!r} is not known", f"use one of: {', '.join(allowed)}")
    for key in ("talents", "skills"):
        if str(rl[key]).lower() not in ("on", "none", "true", "false", "off"):
            raise ConfigError(f"rl.{key}={rl[key]!r} is not known", "use on or none")
    EXECUTION.get(str(rl.exec_estimator))
    if not switch_on(rl.talents) and str(rl.routing_estimator) == "exhaustive":
        raise ConfigError("rl.talents=none has no routing to estimate: rl.routing_estimator=exhaustive needs talents",
                          "drop rl.routing_estimator=exhaustive, or set rl.talents=on")
    if int(rl.group_size) < 2 and str(rl.routing_estimator) != "exhaustive":
        raise ConfigError(f"rl.group_size={rl.group_size}: a group of one has no execution advantage",
                          "use rl.group_size=2 or more")
    if int(rl.steps) < 1 or int(rl.tasks_per_step) < 1 or int(rl.num_iterations) < 1:
        raise ConfigError("rl.steps, rl.tasks_per_step and rl.num_iterations must be at least 1")


def build_trainer(cfg: Any, inputs: dict[str, Any]) -> Any:
    import torch
    from accelerate import Accelerator

    from talentrl_cli.agent import Agent, talent_strategies
    from talentrl_cli.envs import env_from_config
    from talentrl_cli.errors import DataError
    from talentrl_cli.generation import make_backend
    from talentrl_cli.policy import load_for_training
    from talentrl_cli.progress import current
    from talentrl_cli.rl.trainer import Trainer, needs_reference

    torch.manual_seed(int(cfg.seed))
    env = env_from_config(cfg)
    tasks = env.tasks(str(cfg.rl.split))
    if int(cfg.rl.max_tasks) > 0:  # the first N, as eval.limit=N picks them on the same split
        tasks = tasks[: int(cfg.rl.max_tasks)]
    if not tasks:
        raise DataError(f"env {cfg.env.name} has no task in split {cfg.rl.split!r}", "set rl.split to a split it has")
    artifact = inputs.get("model")
    with current().step(f"loading {artifact.ref if artifact else cfg.model.kind} for training"):
        model, tokenizer = load_for_training(cfg.model, artifact, bool(cfg.rl.full_finetune),
                                             reference=needs_reference(cfg.rl))
        backend = make_backend(model, tokenizer, str(cfg.rl.backend), int(cfg.rl.batch_size))
        agent = Agent.from_config(cfg, backend, env, inputs.get("index"))
    accelerator = Accelerator(cpu=not torch.cuda.is_available())
    strategy_of = talent_strategies(agent.bank, env) if agent.bank else {}
    trainer = Trainer(cfg, model, tokenizer, agent, tasks, accelerator, strategy_of)
    if int(cfg.rl.eval_every) > 0:
        trainer.eval_tasks = env.tasks(str(cfg.rl.eval_split))[: int(cfg.rl.eval_limit)]
    return trainer


def resume_point(cfg: Any, folder: Path, trainer: Any) -> tuple[int, list[dict[str, Any]]]:
    import shutil

    from talentrl_cli.distributed import is_main_process
    from talentrl_cli.progress import current
    from talentrl_cli.rl import checkpoint

    found = checkpoint.latest(folder) if bool(cfg.rl.resume) else None
    if found is not None:
        current().note(f"rl: resuming from {found}")
        return checkpoint.load(found, trainer)
    if bool(cfg.rl.resume):
        current().note(f"rl: no checkpoint under {folder}; starting from scratch")
    elif is_main_process():
        shutil.rmtree(folder, ignore_errors=True)
    return 0, []


def train_loop(cfg: Any, trainer: Any, folder: Path, start: int, rows: list[dict[str, Any]],
               out_dir: Path) -> list[dict[str, Any]]:
    from talentrl_cli.distributed import is_main_process
    from talentrl_cli.jsonl import write_jsonl
    from talentrl_cli.progress import current
    from talentrl_cli.rl import checkpoint
    from talentrl_cli.tracking import log_numbers

    steps, display = int(cfg.rl.steps), current()
    task = display.task("train", total=steps, unit="steps")
    display.update(task, completed=start)
    logged: list[dict[str, Any]] = []
    for step in range(start, steps):
        dev = _dev_em(cfg, trainer) if step % max(int(cfg.rl.eval_every), 1) == 0 else None
        row, out = trainer.step(step)
        if dev is not None:
            row["dev_em"] = dev  # the policy this step started from
        rows.append(row)
        log_numbers("rl", row, row["step"])
        if int(cfg.rl.log_rollouts_every) > 0 and step % int(cfg.rl.log_rollouts_every) == 0:
            logged += rollout_records(step, out)
        display.update(task, completed=step + 1, info=_info(row))
        if int(cfg.rl.save_steps) > 0 and (step + 1) % int(cfg.rl.save_steps) == 0 and step + 1 < steps \
                and is_main_process():
            checkpoint.save(folder, step + 1, trainer, rows)
    final = _dev_em(cfg, trainer) if rows else None
    if final is not None:
        rows[-1]["dev_em_final"] = final  # the policy the run publishes
    display.finish(task, info=_info(rows[-1]) if rows else "")
    if is_main_process():
        write_jsonl(out_dir / "rollouts.jsonl", logged)
    return rows


def _dev_em(cfg: Any, trainer: Any) -> float | None:
    if int(cfg.rl.eval_every) <= 0 or not trainer.eval_tasks:
        return None
    return trainer.evaluate(trainer.eval_tasks)


def rollout_records(step: int, out: Any) -> list[dict[str, Any]]:
    records = []
    for j, ep in enumerate(out.episodes):
        record = ep.record()
        record.update(step=step, a_exec=float(out.a_exec[j]), a_route=float(out.a_route[j]),
                      interventions=[{"talent": x.talent, "reward": x.reward} for x in out.interventions[j]])
        records.append(record)
    return records


def publish(cfg: Any, trainer: Any, rows: list[dict[str, Any]], out_dir: Path) -> None:
    from talentrl_cli import models
    from talentrl_cli.jsonl import write_jsonl
    from talentrl_cli.policy import save_policy
    from talentrl_cli.rl.report import write_report

    model = trainer.accelerator.unwrap_model(trainer.model)
    save_policy(model, trainer.tokenizer, out_dir, cfg.model, models.model_path(cfg.model))
    write_jsonl(out_dir / "train_log.jsonl", rows)
    write_report(out_dir, rows, cfg)


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    import numpy as np

    def mean(key: str, part: slice) -> float | None:
        values = [r[key] for r in rows[part] if r.get(key) is not None]
        return round(float(np.mean(values)), 4) if values else None

    # the reward over every drawn group: under rl.filter_groups the trained groups' is selected
    # for mixed outcomes, and a step that kept none has no trained reward
    third, reward = max(1, len(rows) // 3), "reward_drawn_mean" if all("reward_drawn_mean" in r for r in rows) else "reward_mean"
    return {"steps": len(rows), "reward_first": mean(reward, slice(0, third)),
            "reward_last": mean(reward, slice(-third, None)),
            "route_acc_first": mean("route_acc", slice(0, third)), "route_acc_last": mean("route_acc", slice(-third, None)),
            "route_signal_share": mean("route_signal_share", slice(None)),
            "seconds_per_step": mean("seconds", slice(None)), "peak_memory_mb": _peak_memory_mb(),
            **({"dev_em_start": rows[0]["dev_em"], "dev_em_final": rows[-1].get("dev_em_final")}
               if rows and rows[0].get("dev_em") is not None else {})}


def _peak_memory_mb() -> float:
    import resource

    import torch

    if torch.cuda.is_available():
        return round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # Linux: KiB


def _info(row: dict[str, Any]) -> str:
    """The step's progress line. Under `rl.filter_groups` the trained groups' reward is not the
    drawn one, and a step that kept no group trains nothing: its trained means are empty, not 0."""
    acc, trained, drawn = row.get("route_acc"), row.get("groups_trained", 1), row.get("groups_drawn", 1)
    reward = f"reward {row['reward_mean']:.3f}"
    if trained != drawn:
        reward = f"reward {row['reward_drawn_mean']:.3f} drawn, {row['reward_mean']:.3f} on {trained}/{drawn} groups"
    if not trained:
        reward = f"reward {row['reward_drawn_mean']:.3f} drawn, no group of {drawn} with a signal: nothing trained"
    parts = [reward, f"route acc {acc:.2f}" if acc is not None else "",
             f"H {row['route_entropy']:.2f}" if trained else "", f"{row['seconds']:.1f}s/step",
             f"dev EM {row['dev_em']:.3f}" if row.get("dev_em") is not None else ""]
    return "  ".join(p for p in parts if p)


STAGE = register_stage(Stage(
    name="rl",
    run=run,
    summary="TalentRL: matched-intervention routing credit + GRPO execution credit (baselines as switches).",
    example="talentrl rl inputs.model=sft:latest inputs.index=index:latest rl.steps=10 rl.intervention=swap",
    inputs={"model": ("rl", "sft"), "index": ("index",)},
    optional_inputs=frozenset({"model"}),
    sections=("seed", "rl", "model", "env", "index", "embedder"),
    flags={"resume": ("rl.resume=true", "Continue from the last checkpoint of this config and inputs")},
    headline=("reward_first", "reward_last", "route_acc_last"),
))
