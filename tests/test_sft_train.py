"""`sft_train.training_args`: the GPU presets train in bf16 with activation checkpointing; the
same config on a CPU trains under bf16 autocast only where the CPU has native bf16, else fp32,
without either being asked for twice."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.parametrize("native_bf16", [False, True])
@pytest.mark.parametrize("preset", ["qwen2.5-7b", "qwen3-8b", "llama3.1-8b"])
def test_gpu_presets_give_bf16_and_checkpointing_on_a_gpu_and_cpu_bf16_only_where_native(
        preset, native_bf16, monkeypatch, tmp_path):
    import torch

    from talentrl_cli import models
    from talentrl_cli.config import compose
    from talentrl_cli.sft_train import training_args

    cfg = compose([f"model={preset}"])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    gpu = training_args(cfg, Path(tmp_path))
    assert gpu["bf16"] is True and gpu["use_cpu"] is False and gpu["activation_checkpointing"] is True
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(models, "native_bf16_cpu", lambda: native_bf16)
    cpu = training_args(cfg, Path(tmp_path))
    assert cpu["bf16"] is native_bf16 and cpu["use_cpu"] is True


def test_tiny_model_trains_in_fp32_without_checkpointing(tmp_path):
    from talentrl_cli.config import compose
    from talentrl_cli.sft_train import training_args

    args = training_args(compose(["model=tiny"]), Path(tmp_path))
    assert args["bf16"] is False and args["activation_checkpointing"] is False and args["fp16"] is False


def test_cpu_loss_over_trained_positions_equals_trls_fused_head_loss(tmp_path):
    """The CPU loss (logits only where the next token is trained) is TRL's loss, to fp32 noise."""
    import torch
    from datasets import Dataset
    from omegaconf import OmegaConf
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    from talentrl_cli import models, prompts
    from talentrl_cli.config import compose
    from talentrl_cli.sft_train import trainer_class, training_args

    cfg = compose(["model=tiny", "sft.batch_size=2", "sft.grad_accum=1"])
    tokenizer = models.load_tokenizer(cfg.model)
    tokenizer.chat_template = prompts.training_chat_template(tokenizer)
    conversations = [[{"role": "system", "content": "S"}, {"role": "user", "content": f"Task: question {i}"},
                      {"role": "assistant", "content": "Action: finish[" + "yes " * i + "]"}] for i in range(1, 5)]
    trainer = trainer_class()(model=AutoModelForCausalLM.from_pretrained(models.model_path(cfg.model)),
                              args=SFTConfig(**training_args(OmegaConf.create(cfg), tmp_path)),
                              train_dataset=Dataset.from_list([{"messages": m} for m in conversations]),
                              processing_class=tokenizer)
    batch = next(iter(trainer.get_train_dataloader()))
    assert (batch["labels"] != -100).float().mean() < 0.5  # most positions are masked
    with torch.no_grad():
        ours = trainer.compute_loss(trainer.model, dict(batch), num_items_in_batch=torch.tensor(7))
        trls = SFTTrainer.compute_loss(trainer, trainer.model, dict(batch), num_items_in_batch=torch.tensor(7))
    assert torch.allclose(ours, trls, rtol=1e-5, atol=1e-6), (ours, trls)


def test_first_span_weights_mark_each_rows_first_trained_run():
    import torch

    from talentrl_cli.sft_train import _first_span_weights

    trained = torch.tensor([[0, 1, 1, 0, 1, 1], [1, 0, 0, 1, 1, 0]], dtype=torch.bool)
    weights = _first_span_weights(trained, 5.0)
    assert weights.tolist() == [[1, 5, 5, 1, 1, 1], [5, 1, 1, 1, 1, 1]]
