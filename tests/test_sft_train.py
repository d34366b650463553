"""`sft_train.training_args`: the GPU presets train in bf16 with activation checkpointing; the
same config on a CPU falls back to fp32 without them being asked for twice."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.parametrize("preset", ["qwen2.5-7b", "qwen3-8b", "llama3.1-8b"])
def test_gpu_presets_give_bf16_and_checkpointing_on_a_gpu_and_fp32_on_a_cpu(preset, monkeypatch, tmp_path):
    import torch

    from talentrl_cli.config import compose
    from talentrl_cli.sft_train import training_args

    cfg = compose([f"model={preset}"])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    gpu = training_args(cfg, Path(tmp_path))
    assert gpu["bf16"] is True and gpu["use_cpu"] is False and gpu["activation_checkpointing"] is True
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cpu = training_args(cfg, Path(tmp_path))
    assert cpu["bf16"] is False and cpu["use_cpu"] is True


def test_tiny_model_trains_in_fp32_without_checkpointing(tmp_path):
    from talentrl_cli.config import compose
    from talentrl_cli.sft_train import training_args

    args = training_args(compose(["model=tiny"]), Path(tmp_path))
    assert args["bf16"] is False and args["activation_checkpointing"] is False and args["fp16"] is False
