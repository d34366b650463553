"""`talentrl sft`: talent-aware supervised fine-tuning with TRL's SFTTrainer and a PEFT LoRA adapter.

    talentrl sft                                        # inputs.mine=mine:latest inputs.index=index:latest, model=tiny
    talentrl sft model=smollm2 sft.epochs=2 sft.lr=1e-4 sft.mode=flat
    talentrl sft sft.full_finetune=true sft.merge=true  # full fine-tuning; merged/ export
    talentrl sft --resume                               # continue an interrupted run (= sft.resume=true)
    accelerate launch --cpu --num_processes 2 -m talentrl_cli sft   # data-parallel on a CPU (gloo)

One example per labelled successful trajectory of the mine artifact: the routing turn
(answer: its mined talent) and its ReAct turns with `R(x, label)` from the index artifact in
context (`sft.mode=flat`: flat retrieval, no routing turn; `sft.mode=none`: no skills), and the
tools of `env=` described as eval describes them. Loss is
on assistant tokens only; observations are user turns and are masked (see `sft_data`,
`sft_train`, `prompts`).

The artifact: a standard PEFT adapter at its root (`adapter_config.json`,
`adapter_model.safetensors`; `sft.full_finetune=true` writes the full model instead), the
tokenizer, `base_model.json` (the base model's kind, id and local path), `train_log.jsonl`
(TRL's log history), `sft_data.jsonl` (the examples, for audit) and, with `sft.merge=true`,
`merged/`. Load it with `PeftModel.from_pretrained(base, artifact_path)`.

Several processes: under `accelerate launch` or `torchrun` TRL trains data-parallel (DDP;
gloo when no GPU is present); every rank builds the dataset, rank 0 alone saves and
publishes, the other ranks exit 0 after training. The artifact has the same format, with
`world_size` in its metrics; only rank 0 opens a W&B run. On a CPU, `accelerate launch --cpu
--num_processes 2 -m talentrl_cli sft` works: accelerate 1.15 would start a single process there
(it spawns CPU workers only through MPI), so the entry point re-launches itself under torchrun
(see `distributed`). `--multi_gpu` and `torchrun --nproc_per_node 2 -m talentrl_cli sft` work too.

Checkpoints live outside the run's staging folder, in
`<artifacts root>/.checkpoints/sft/<key>/checkpoint-N/`, where `<key>` hashes the config
(without `sft.resume`) and the input digests, so `sft.resume=true` with the same overrides
finds them. A run that does not resume starts that folder afresh; a finished run deletes it.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from talentrl_cli.distributed import is_main_process
from talentrl_cli.stages import Stage, checkpoint_dir, register_stage


def run(cfg: Any, inputs: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    from talentrl_cli import sft_data, sft_train
    from talentrl_cli.jsonl import write_jsonl
    from talentrl_cli.progress import current

    with current().step(f"building examples (sft.mode={cfg.sft.mode})"):
        examples = build_dataset(cfg, inputs["mine"], inputs["index"])
    write_jsonl(out_dir / sft_data.DATA_FILE, examples)
    checkpoints = checkpoint_dir("sft", out_dir, cfg, inputs)
    resume = bool(cfg.sft.resume)
    if resume and sft_train.last_checkpoint(checkpoints) is None:
        current().note(f"sft: no checkpoint under {checkpoints}; starting from scratch")
    if not resume and is_main_process():
        shutil.rmtree(checkpoints, ignore_errors=True)
    model = cfg.model.get("name_or_path") or cfg.model.kind
    current().phase(f"loading {model} and tokenizing {len(examples)} examples")  # ends as training starts
    metrics = sft_train.train(cfg, [e["messages"] for e in examples], out_dir, checkpoints, resume)
    metrics["mode"] = str(cfg.sft.mode)
    if not is_main_process():
        raise SystemExit(0)  # data-parallel workers: rank 0 alone publishes the artifact
    shutil.rmtree(checkpoints, ignore_errors=True)
    return metrics


def build_dataset(cfg: Any, mine: Any, index: Any) -> list[dict[str, Any]]:
    from talentrl_cli import sft_data
    from talentrl_cli.embedding import Embedder
    from talentrl_cli.envs import env_from_config
    from talentrl_cli.errors import DataError
    from talentrl_cli.skillbank import SkillBank

    sft_data.check_same_mine(mine, index)
    labelled = sft_data.load_labelled(mine)
    labelled = sft_data.without_strategies(labelled, list(cfg.sft.get("unseen_strategies") or []))
    if int(cfg.sft.max_examples) > 0:
        labelled = labelled[: int(cfg.sft.max_examples)]
    if not labelled:
        raise DataError(f"{mine.ref} has no labelled successful trajectory to train on")
    embedder = Embedder.from_config(cfg.embedder)
    bank = SkillBank.load(index.path, embedder.identity(), int(cfg.index.oversample))
    vectors = embedder.encode([t.task.question for t, _ in labelled]) if cfg.sft.mode != "none" else None
    env = env_from_config(cfg)
    return sft_data.build_examples(labelled, bank, vectors, str(cfg.sft.mode), int(cfg.index.k),
                                   float(cfg.index.lam), tools=env.describe_tools(),
                                   action_format=env.action_format, thoughts=bool(cfg.sft.thoughts))


STAGE = register_stage(Stage(
    name="sft",
    run=run,
    summary="Talent-aware supervised fine-tuning (TRL SFTTrainer, PEFT LoRA by default).",
    example="talentrl sft model=smollm2 sft.mode=talent sft.epochs=2 sft.lr=1e-4",
    inputs={"mine": ("mine",), "index": ("index",)},
    sections=("seed", "sft", "model", "index", "embedder", "env"),
    flags={"resume": ("sft.resume=true", "Continue from the last checkpoint of this config and inputs")},
    headline=("loss_start", "loss_end", "tokens_per_s"),
))
