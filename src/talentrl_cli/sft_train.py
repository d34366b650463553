"""Training for `talentrl sft`: TRL's SFTTrainer with a PEFT LoRA adapter (or full fine-tuning).

- Loss on assistant tokens only, by TRL (`assistant_only_loss=True`) with the tokenizer's
  chat template swapped for its `{% generation %}`-marked twin (`prompts.training_chat_template`),
  which renders identically; the artifact's tokenizer keeps that template.
- CPU-safe defaults: fp32 unless the model config asks for bf16 *and* a GPU is present; no
  gradient checkpointing unless the model config turns it on (the GPU presets do).
- Checkpoints go to a persistent folder outside the staging folder (the stage passes it),
  every `sft.save_steps` optimizer steps; `resume=True` continues from the last one.
- The loss curve (TRL's log history) becomes `train_log.jsonl`, the manifest metrics, and
  W&B's run when tracking is on.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


def last_checkpoint(folder: Path) -> Path | None:
    found = [(int(m.group(1)), p) for p in folder.glob("checkpoint-*") if (m := CHECKPOINT.match(p.name))]
    return max(found)[1] if found else None


def train(cfg: Any, messages: list[list[dict[str, str]]], out_dir: Path, checkpoints: Path,
          resume: bool = False) -> dict[str, Any]:
    """Train on `messages` (one conversation per example); write the model artifact to `out_dir`."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from transformers.trainer_callback import PrinterCallback
    from trl import SFTConfig

    from talentrl_cli import models, progress, prompts

    sft, model_cfg = cfg.sft, cfg.model
    path = models.model_path(model_cfg)
    tokenizer = models.load_tokenizer(model_cfg)
    tokenizer.chat_template = prompts.training_chat_template(tokenizer)
    model = models.from_pretrained(AutoModelForCausalLM, path, model_cfg,
                                   dtype=models.weights_dtype(model_cfg, training=True))
    check_lengths(tokenizer, messages, int(sft.max_length))
    resume_from = last_checkpoint(checkpoints) if resume else None
    trainer = trainer_class(route_weight(cfg))(model=model, args=SFTConfig(**training_args(cfg, checkpoints)),
                         train_dataset=Dataset.from_list([{"messages": m} for m in messages]),
                         processing_class=tokenizer, peft_config=_peft_config(cfg),
                         callbacks=[_wandb_callback(), progress.trainer_callback()])
    if not progress.is_verbose():
        trainer.remove_callback(PrinterCallback)  # raw log dicts; the progress bar shows loss
    started = time.perf_counter()
    result = trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    seconds = time.perf_counter() - started
    history = [h for h in trainer.state.log_history if "loss" in h]
    metrics = _metrics(trainer, result, history, seconds, resume_from)
    if trainer.accelerator.is_main_process:
        save_artifact(trainer, tokenizer, cfg, path, out_dir)
    trainer.accelerator.wait_for_everyone()
    return metrics


def route_weight(cfg: Any) -> float:
    """`sft.route_weight` in talent mode (the first assistant span is the talent label), else 1."""
    return float(cfg.sft.get("route_weight", 1.0)) if str(cfg.sft.mode) == "talent" else 1.0


def trainer_class(route_weight: float = 1.0) -> type:
    """TRL's SFTTrainer, with the loss computed from the trained positions only on a CPU.

    TRL 1.16 always routes the loss through its tiled "fused LM head"; on devices without
    Triton that head projects *every* position onto the 49k vocabulary, in Python-level tiles,
    and recomputes the tiles in backward, plus per-token entropy. py-spy on `talentrl sft`
    (SmolLM2, 1.4k-token rows) put 24 % of the step there, and `talentrl sft` ran at half the
    tokens/s of a plain PEFT step. Here transformers' own `logits_to_keep` (a boolean mask)
    projects only the positions whose next token is trained (assistant tokens, about a quarter
    of a row) and the loss is their summed cross-entropy over `num_items_in_batch`, as TRL's
    is; TRL's path is kept on accelerators, where its Triton kernel already skips masked rows.

    `route_weight` != 1 scales the loss of each row's first trained span, the talent label:
    the routing decision is one or two of a row's ~120 trained tokens, so with plain token
    averaging a short SFT barely trains it (this path then runs on every device).
    """
    import torch
    import torch.nn.functional as F
    from trl import SFTTrainer

    class TrainedPositionsSFTTrainer(SFTTrainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            plain = route_weight == 1.0 and self.args.device.type != "cpu"
            if plain or "labels" not in inputs:
                return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            shifted = inputs["labels"][:, 1:]
            trained = shifted != -100
            keep = F.pad(trained, (0, 1), value=False)
            forward = {k: v for k, v in inputs.items() if k not in ("labels", "shift_labels")}
            outputs = model(**forward, logits_to_keep=keep, use_cache=False)
            logits, targets = outputs.logits.float(), shifted[trained]
            per_token = F.cross_entropy(logits, targets, reduction="none")
            if route_weight != 1.0:
                per_token = per_token * _first_span_weights(trained, route_weight)[trained]
            count = trained.sum() if num_items_in_batch is None else num_items_in_batch
            loss = per_token.sum() / torch.as_tensor(count).clamp(min=1)
            if self.args.average_tokens_across_devices and num_items_in_batch is not None:
                loss = loss * self.accelerator.num_processes
            self._log_accuracy(logits, targets)
            return (loss, outputs) if return_outputs else loss

        def _log_accuracy(self, logits: Any, targets: Any) -> None:
            mode = "train" if self.model.training else "eval"
            correct = self.accelerator.gather_for_metrics((logits.argmax(-1) == targets).sum()).sum()
            total = self.accelerator.gather_for_metrics(torch.as_tensor(targets.numel())).sum()
            self._metrics[mode]["mean_token_accuracy"].append((correct / total.clamp(min=1)).item())

    return TrainedPositionsSFTTrainer


def _first_span_weights(trained: Any, weight: float) -> Any:
    """`weight` on each row's first run of trained positions, 1 elsewhere (same shape)."""
    import torch.nn.functional as F

    starts = trained & ~F.pad(trained, (1, 0), value=False)[:, :-1]
    first = trained & (starts.cumsum(dim=1) == 1)
    return 1.0 + (weight - 1.0) * first.float()  # on the mask's device


def check_lengths(tokenizer: Any, messages: list[list[dict[str, str]]], max_length: int) -> None:
    """TRL truncates examples to `max_length` tokens and drops those left with no assistant
    token; refuse up front, with a hint, when that would drop every example."""
    from talentrl_cli.errors import ConfigError

    def first_target_end(conversation: list[dict[str, str]]) -> int:
        first = next(i for i, m in enumerate(conversation) if m["role"] == "assistant")
        return len(tokenizer.apply_chat_template(conversation[: first + 1], tokenize=True, return_dict=True)["input_ids"])

    shortest = min(first_target_end(m) for m in messages)
    if shortest > max_length:
        raise ConfigError(f"sft.max_length={max_length} cuts every example before its first assistant "
                          f"turn (the shortest needs {shortest} tokens)", f"raise it, e.g. sft.max_length={2 * shortest}")


def training_args(cfg: Any, checkpoints: Path) -> dict[str, Any]:
    import torch

    sft, model_cfg = cfg.sft, cfg.model
    from talentrl_cli import models

    gpu = torch.cuda.is_available()
    # on a CPU, bf16 is Trainer's bf16 autocast over float32 weights (`models.cpu_bf16`)
    bf16 = (gpu and str(model_cfg.get("dtype")) == "bfloat16") or models.cpu_bf16(model_cfg)
    return dict(
        output_dir=str(checkpoints), num_train_epochs=float(sft.epochs), max_steps=int(sft.max_steps),
        learning_rate=float(sft.lr), per_device_train_batch_size=int(sft.batch_size),
        gradient_accumulation_steps=int(sft.grad_accum), max_length=int(sft.max_length),
        warmup_steps=int(sft.warmup_steps), lr_scheduler_type=str(sft.scheduler),
        assistant_only_loss=True, packing=False, bf16=bf16, fp16=False, use_cpu=not gpu,
        activation_checkpointing=bool(model_cfg.get("gradient_checkpointing")),
        logging_steps=int(sft.logging_steps), logging_first_step=True,
        save_strategy="steps", save_steps=int(sft.save_steps), save_total_limit=int(sft.save_total_limit),
        include_num_input_tokens_seen="non_padding", report_to="none", seed=int(cfg.seed), data_seed=int(cfg.seed), disable_tqdm=True,
        dataloader_num_workers=0, dataset_num_proc=None,
        ddp_find_unused_parameters=False,
    )


def _peft_config(cfg: Any) -> Any:
    if bool(cfg.sft.full_finetune):
        return None
    from peft import LoraConfig

    from talentrl_cli.models import lora_settings

    return LoraConfig(**lora_settings(cfg.model))


def _metrics(trainer: Any, result: Any, history: list[dict[str, Any]], seconds: float,
             resume_from: Path | None) -> dict[str, Any]:
    lengths = trainer.train_dataset["input_ids"]
    # non-padding input tokens of this train() call, summed over processes (a resume counts from its checkpoint)
    tokens = trainer.state.num_input_tokens_seen - getattr(trainer, "_initial_num_input_tokens_seen", 0)
    trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    return {
        "n_examples": len(lengths), "tokens_per_epoch": sum(len(ids) for ids in lengths), "tokens": int(tokens),
        "steps": trainer.state.global_step, "epochs": round(float(trainer.state.epoch or 0), 3),
        "loss_start": round(history[0]["loss"], 4) if history else None,
        "loss_end": round(history[-1]["loss"], 4) if history else None,
        "train_loss": round(float(result.training_loss), 4),
        "loss_curve": [[int(h["step"]), round(float(h["loss"]), 4)] for h in history],
        "seconds": round(seconds, 2), "tokens_per_s": round(tokens / seconds, 1) if seconds else None,
        "trainable_params": trainable, "resumed_from": resume_from.name if resume_from else None,
        "world_size": trainer.accelerator.num_processes,
    }


def save_artifact(trainer: Any, tokenizer: Any, cfg: Any, base_path: str, out_dir: Path) -> None:
    """The policy (`policy.save_policy`: adapter or full model, tokenizer, `base_model.json`),
    `train_log.jsonl`, and `merged/` when `sft.merge` is on."""
    from talentrl_cli.jsonl import write_jsonl
    from talentrl_cli.policy import save_policy

    model = trainer.model
    save_policy(model, tokenizer, out_dir, cfg.model, base_path)
    write_jsonl(out_dir / "train_log.jsonl", trainer.state.log_history)
    if bool(cfg.sft.merge):
        merged = model.merge_and_unload() if hasattr(model, "merge_and_unload") else model
        merged.save_pretrained(out_dir / "merged")
        tokenizer.save_pretrained(out_dir / "merged")


def _wandb_callback() -> Any:
    """Logs the loss curve to the stage's W&B run, when the runner opened one."""
    from transformers import TrainerCallback

    from talentrl_cli.tracking import log_numbers

    class WandbLoss(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
            if logs and state.is_world_process_zero:
                log_numbers("sft", logs, state.global_step)

    return WandbLoss()
