"""The one policy layer: what sft/rl save, eval and rl load, and the reference policy."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import save_changed_adapter

from talentrl_cli import models, policy
from talentrl_cli.config import compose
from talentrl_cli.errors import TalentRLError


@pytest.fixture(scope="module")
def model_cfg():
    return compose(["model=tiny"]).model


@pytest.fixture(scope="module")
def saved(model_cfg, tmp_path_factory):
    folder = tmp_path_factory.mktemp("policy")
    return save_changed_adapter(folder), folder


def _logits(model, ids=(5, 6, 7, 8)):
    with torch.no_grad():
        return model(input_ids=torch.tensor([list(ids)])).logits


def test_a_fresh_policy_trains_only_its_lora_adapter(model_cfg):
    model, _ = policy.load_for_training(model_cfg)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    full, _ = policy.load_for_training(model_cfg, full_finetune=True)
    assert all(p.requires_grad for p in full.parameters())


def test_the_saved_adapter_loads_merged_for_generation_and_trainable_for_training(saved, model_cfg):
    trained, folder = saved
    info = json.loads((folder / policy.BASE_FILE).read_text())
    assert info["adapter"] is True and info["kind"] == "tiny"
    merged, tokenizer = policy.load_for_generation(model_cfg, folder)
    assert not hasattr(merged, "peft_config") and not merged.training and tokenizer.pad_token
    torch.testing.assert_close(_logits(merged), _logits(trained.eval()), atol=1e-4, rtol=1e-4)
    again, _ = policy.load_for_training(model_cfg, folder)
    assert any(p.requires_grad for n, p in again.named_parameters() if "lora_" in n)
    torch.testing.assert_close(_logits(again.eval()), _logits(merged), atol=1e-4, rtol=1e-4)


def test_without_a_reference_adapter_the_reference_is_the_adapter_disabled(saved, model_cfg):
    trained, _ = saved
    base, _ = models.load_policy(model_cfg)
    with policy.reference(trained):
        torch.testing.assert_close(_logits(trained.eval()), _logits(base))
    assert not torch.allclose(_logits(trained), _logits(base))


def test_the_reference_is_the_policy_training_started_from_not_the_base(saved, model_cfg, tmp_path):
    """rl continues an sft adapter: its KL reference is that adapter, frozen, whatever the
    trained copy becomes; the trained adapter stays the only trainable one and the only one
    saved."""
    start, folder = saved
    model, tokenizer = policy.load_for_training(model_cfg, folder, reference=True)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(f".{policy.REFERENCE}." not in n for n in trainable)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.requires_grad and "lora_B" in name:
                p.add_(0.3)  # the trained copy moves away from where it started
    with policy.reference(model):
        torch.testing.assert_close(_logits(model.eval()), _logits(start.eval()), atol=1e-4, rtol=1e-4)
    assert {n for n, p in model.named_parameters() if p.requires_grad} == trainable
    assert not torch.allclose(_logits(model), _logits(start), atol=1e-3)
    policy.save_policy(model, tokenizer, tmp_path, model_cfg, models.model_path(model_cfg))
    assert not (tmp_path / policy.REFERENCE).exists()
    merged, _ = policy.load_for_generation(model_cfg, tmp_path)
    torch.testing.assert_close(_logits(merged), _logits(model), atol=1e-4, rtol=1e-4)


def test_a_full_model_round_trips(model_cfg, tmp_path):
    full, tokenizer = policy.load_for_training(model_cfg, full_finetune=True)
    policy.save_policy(full, tokenizer, tmp_path, model_cfg, models.model_path(model_cfg))
    assert json.loads((tmp_path / policy.BASE_FILE).read_text())["adapter"] is False
    loaded, _ = policy.load_for_generation(model_cfg, tmp_path)
    torch.testing.assert_close(_logits(loaded), _logits(full.eval()))
    again, _ = policy.load_for_training(model_cfg, tmp_path, reference=True)  # rl's KL: a frozen copy, not an adapter
    assert all(p.requires_grad for p in again.parameters())


def test_a_folder_that_is_not_a_policy_says_so(model_cfg, tmp_path):
    with pytest.raises(TalentRLError, match="base_model.json: not a policy artifact"):
        policy.load_for_generation(model_cfg, tmp_path)


def test_vllm_receives_the_merged_weights_under_the_base_models_names(saved, model_cfg):
    from talentrl_cli.generation import vllm_weights

    trained, folder = saved
    before = _logits(trained.eval())
    weights = {name: t.clone() for name, t in vllm_weights(trained)}
    merged, _ = policy.load_for_generation(model_cfg, folder)
    expected = dict(merged.named_parameters())
    assert set(weights) == set(expected)
    for name, tensor in weights.items():
        torch.testing.assert_close(tensor, expected[name].data, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(_logits(trained), before)  # unmerged again


@pytest.mark.parametrize(("asked", "native", "training", "loaded"), [
    ("float32", True, False, torch.float32),
    ("bfloat16", True, False, torch.bfloat16),   # generation in bf16 where the CPU has it
    ("bfloat16", True, True, torch.float32),     # training keeps float32 weights (bf16 autocast)
    ("bfloat16", False, False, torch.float32),   # emulated bf16 is slower than float32
    ("float16", True, False, torch.float32),
])
def test_a_cpu_loads_bfloat16_only_where_it_multiplies_it_natively(monkeypatch, asked, native, training, loaded):
    monkeypatch.setattr(models, "native_bf16_cpu", lambda: native)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cfg = compose(["model=tiny", f"model.dtype={asked}"]).model
    assert models.weights_dtype(cfg, training=training) == loaded
    assert models.cpu_bf16(cfg) is (asked == "bfloat16" and native)
    autocasting = models.autocast(cfg)
    assert isinstance(autocasting, torch.autocast) is (asked == "bfloat16" and native)


def test_the_generation_copy_is_the_merged_model_in_bfloat16_and_leaves_the_trained_one(saved, monkeypatch):
    trained, _ = saved
    monkeypatch.setattr(models, "native_bf16_cpu", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cfg = compose(["model=tiny", "model.dtype=bfloat16"]).model
    before = {n: p.clone() for n, p in trained.named_parameters()}
    copy = policy.generation_copy(trained, cfg)
    assert not hasattr(copy, "peft_config") and next(copy.parameters()).dtype == torch.bfloat16
    assert hasattr(trained, "peft_config") and next(trained.parameters()).dtype == torch.float32
    assert all(torch.equal(before[n], p) for n, p in trained.named_parameters())
    # merged in float32, then cast: one rounding of the merged weights
    torch.testing.assert_close(_logits(copy).float(), _logits(trained.eval()), atol=0.05, rtol=0.05)
