"""RL step cost: the per-phase split of a `talentrl rl` step, TalentRL against terminal-credit
GRPO, the cost of an intervention rollout, and TRL's GRPOTrainer on the same prompts.

    python bench/rl_step.py --model tiny                 # a minute
    python bench/rl_step.py --model smollm2 --steps 2    # SmolLM2-135M on 2 CPU cores: ~15 min
    python bench/rl_step.py --model smollm2 --root /tmp/demo -- rl.max_new_tokens=48 rl.max_steps=5

Runs `talentrl mine` and `talentrl index` (WorldQA) unless the root holds them, then for
each arm builds the stage's trainer (`stages.rl.build_trainer`, inputs.model=none: the base
model with a fresh LoRA) and times `--steps` steps after one warm-up step:

- TalentRL, G=4 with M=1 and M=2 matched (swap) interventions;
- terminal-credit GRPO at the same G (4), and at the same number of rollouts (8 and 12);
- every arm with `rl.exec_estimator=bench_busy` (nonzero advantages), so each step trains
  every rollout, as TRL does;
- single-turn: ours (rl.max_steps=1, terminal credit) and TRL's `GRPOTrainer` on the same
  first-turn prompts (routing turn + execution context), same model, LoRA, G and
  max_new_tokens, with a reward of 1 when the completion writes an action.

It prints the per-phase seconds of a step, rollouts/s, trained tokens/s (the tokens the loss
covers, over the whole step), the cost of one intervention rollout against one trained
rollout (the step time it adds, against terminal G=4's step, which runs the same trained
rollouts; target <= 0.8: it needs no log-probs or backward), and our single-turn tokens/s and
time per rollout as ratios to TRL's (target >= 0.9).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

INTERVENTION_TARGET, TRL_TARGET = 0.8, 0.9
PHASES = ("routing", "rollouts", "interventions", "logprobs", "backward", "optimizer")


def arms(tasks: int) -> list[tuple[str, list[str]]]:
    return [
        ("talentrl G=4 M=1", ["rl.group_size=4", "rl.interventions=1"]),
        ("talentrl G=4 M=2", ["rl.group_size=4", "rl.interventions=2"]),
        ("terminal G=4", ["rl.group_size=4", "rl.routing_credit=terminal"]),
        ("terminal G=8 (= M=1 rollouts)", ["rl.group_size=8", "rl.routing_credit=terminal"]),
        ("terminal G=12 (= M=2 rollouts)", ["rl.group_size=12", "rl.routing_credit=terminal"]),
        ("single-turn ours (terminal G=4)", ["rl.group_size=4", "rl.routing_credit=terminal", "rl.max_steps=1"]),
    ]


def register_busy_estimator() -> None:
    """`rl.exec_estimator=bench_busy`: +1 / -1 alternating. A timed step must train every
    rollout, as TRL's does; from the base model most groups score all 0, their advantage is 0
    and the trainer rightly skips their forward and backward, which would time nothing."""
    import numpy as np

    from talentrl_cli.rl.advantages import EXECUTION

    if "bench_busy" not in EXECUTION:
        EXECUTION.register("bench_busy")(lambda credit: np.where(np.arange(len(credit.rewards)) % 2, -1.0, 1.0))


def time_arm(root: Path, overrides: list[str], steps: int) -> list[dict]:
    from talentrl_cli.artifacts import ArtifactStore
    from talentrl_cli.config import compose
    from talentrl_cli.stages.rl import build_trainer, check_switches

    register_busy_estimator()
    cfg = compose([*overrides, "rl.exec_estimator=bench_busy"])
    check_switches(cfg)
    trainer = build_trainer(cfg, {"index": ArtifactStore(root).resolve("index:latest")})
    trainer.step(0)  # warm-up: allocators, kernels, the embedder
    return [trainer.step(s)[0] for s in range(1, steps + 1)]


def summarise(rows: list[dict]) -> dict:
    mean = {k: statistics.mean(r[k] for r in rows) for k in ("seconds", "rollouts", "policy_tokens")}
    mean.update({f"t_{p}": statistics.mean(r.get(f"time_{p}", 0.0) for r in rows) for p in PHASES})
    mean["trained_tokens_per_s"] = statistics.mean(r["trained_tokens_per_s"] for r in rows)
    mean["rollouts_per_s"] = mean["rollouts"] / mean["seconds"]
    return mean


def intervention_cost(m: dict, base: dict, trained: int, extra: int) -> float:
    """Seconds per intervention rollout over seconds per trained rollout. Interventions share
    the trained rollouts' engine call, so an intervention's cost is what it adds to a step:
    the arm's step time less that of terminal credit at the same G, which runs the very same
    trained rollouts (the same sampled talents) and no interventions."""
    return ((m["seconds"] - base["seconds"]) / extra) / (base["seconds"] / trained)


def trl_reference(cfg, root: Path, tasks_per_step: int, steps: int) -> dict:
    """TRL GRPOTrainer on the first-turn prompts of the same tasks; seconds and completion
    tokens per optimizer step (after a warm-up step)."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from talentrl_cli import models
    from talentrl_cli.agent import Agent
    from talentrl_cli.artifacts import ArtifactStore
    from talentrl_cli.envs import env_from_config

    env = env_from_config(cfg)
    tasks = env.tasks("train")[: tasks_per_step * (steps + 1)]
    tokenizer = models.load_tokenizer(cfg.model)
    backend = type("TokenizerOnly", (), {"tokenizer": tokenizer})()  # start() renders; nothing generates
    agent = Agent.from_config(cfg, backend, env, ArtifactStore(root).resolve("index:latest"))
    talent = next(iter(agent.talents.values()))
    rows = [{"prompt": ep.messages} for ep in agent.start(tasks, [talent.name] * len(tasks))]
    lengths: list[int] = []

    def reward(completions, **_):
        lengths.extend(len(tokenizer.encode(c[0]["content"] if isinstance(c, list) else c)) for c in completions)
        return [float("Action" in (c[0]["content"] if isinstance(c, list) else c)) for c in completions]

    stamps: list[float] = []

    class Clock(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            stamps.append(time.perf_counter())

    g = int(cfg.rl.group_size)
    args = GRPOConfig(output_dir=str(root / ".trl-bench"), num_generations=g,
                      per_device_train_batch_size=g * tasks_per_step, gradient_accumulation_steps=1,
                      max_completion_length=int(cfg.rl.max_new_tokens), max_steps=steps + 1,
                      learning_rate=float(cfg.rl.lr), beta=0.0, temperature=1.0, logging_steps=1,
                      use_cpu=not torch.cuda.is_available(), bf16=False, report_to="none", save_strategy="no",
                      disable_tqdm=True, shuffle_dataset=False)
    model = AutoModelForCausalLM.from_pretrained(models.model_path(cfg.model), dtype=torch.float32)
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=Dataset.from_list(rows),
                          processing_class=tokenizer, peft_config=LoraConfig(**models.lora_settings(cfg.model)),
                          callbacks=[Clock()])
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # raw log dicts
    start = time.perf_counter()
    trainer.train()
    per_step = g * tasks_per_step
    timed = [b - a for a, b in zip([start, *stamps], stamps, strict=False)][1:]  # drop the warm-up step
    tokens = [sum(lengths[i * per_step:(i + 1) * per_step]) for i in range(1, steps + 1)]
    seconds = statistics.mean(timed)
    return {"seconds": seconds, "rollouts_per_s": per_step / seconds,
            "trained_tokens_per_s": statistics.mean(tokens) / seconds, "per_rollout": seconds / per_step}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("artifacts-bench-rl"))
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--steps", type=int, default=2, help="timed steps per arm (after one warm-up step)")
    parser.add_argument("--tasks", type=int, default=2, help="tasks per step")
    parser.add_argument("--skip-trl", action="store_true")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("WANDB_MODE", "disabled")
    from _cli import cli

    from talentrl_cli.config import compose

    base = [f"model={args.model}", f"rl.tasks_per_step={args.tasks}", "rl.max_new_tokens=48", "rl.max_steps=5",
            *args.overrides]
    if not (args.root / "index" / "latest").exists():
        cli(args.root, "mine", *base[:1])
        cli(args.root, "index", *base[:1])
    results = {}
    for name, extra in arms(args.tasks):
        started = time.perf_counter()
        results[name] = summarise(time_arm(args.root, [*base, *extra], args.steps))
        print(f"  {name}: {time.perf_counter() - started:.0f} s", flush=True)
    print_tables(results, args)
    if not args.skip_trl:
        trl = trl_reference(compose([*base, "rl.group_size=4"]), args.root, args.tasks, args.steps)
        ours = results["single-turn ours (terminal G=4)"]
        ours_per_rollout = ours["seconds"] / ours["rollouts"]
        ratio = ours["trained_tokens_per_s"] / trl["trained_tokens_per_s"]
        print(f"\n{'single-turn, G=4':<34}{'s/step':>8}{'rollouts/s':>12}{'tokens/s':>10}{'s/rollout':>11}")
        print(f"{'ours':<34}{ours['seconds']:>8.2f}{ours['rollouts_per_s']:>12.2f}"
              f"{ours['trained_tokens_per_s']:>10.1f}{ours_per_rollout:>11.3f}")
        print(f"{'TRL GRPOTrainer':<34}{trl['seconds']:>8.2f}{trl['rollouts_per_s']:>12.2f}"
              f"{trl['trained_tokens_per_s']:>10.1f}{trl['per_rollout']:>11.3f}")
        print(f"TARGET {'met   ' if ratio >= TRL_TARGET else 'MISSED'} ours / TRL tokens/s = {ratio:.2f} "
              f"(>= {TRL_TARGET}); time per rollout ours / TRL = {ours_per_rollout / trl['per_rollout']:.2f}")


def print_tables(results: dict, args) -> None:
    print(f"\nmodel={args.model}, {args.tasks} tasks/step, mean of {args.steps} steps after a warm-up\n")
    print(f"{'arm':<34}{'s/step':>8}" + "".join(f"{p[:8]:>10}" for p in PHASES)
          + f"{'rollouts':>10}{'rollouts/s':>12}{'tokens/s':>10}")
    for name, m in results.items():
        print(f"{name:<34}{m['seconds']:>8.2f}" + "".join(f"{m['t_' + p]:>10.2f}" for p in PHASES)
              + f"{m['rollouts']:>10.0f}{m['rollouts_per_s']:>12.2f}{m['trained_tokens_per_s']:>10.1f}")
    for name in ("talentrl G=4 M=1", "talentrl G=4 M=2"):
        m = results[name]
        trained = 4 * args.tasks
        if m["rollouts"] <= trained:
            print(f"{name}: every intervention drew the sampled talent and reused its rollout")
            continue
        cost = intervention_cost(m, results["terminal G=4"], trained, m["rollouts"] - trained)  # those that ran
        print(f"TARGET {'met   ' if cost <= INTERVENTION_TARGET else 'MISSED'} {name}: an intervention rollout "
              f"costs {cost:.2f}x a trained one (<= {INTERVENTION_TARGET})")
        print(f"  generation alone: {trained / m['t_rollouts']:.2f} trained rollouts/s in the rollout phase, "
              f"{m['rollouts_per_s']:.2f} rollouts/s over the whole step")


if __name__ == "__main__":
    main()
