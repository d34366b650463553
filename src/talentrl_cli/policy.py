"""The policy artifact: one format that sft and rl write and that eval and rl read.

    save_policy(model, tokenizer, out_dir, model_cfg, base_path)  # adapter (or full model) + tokenizer + base_model.json
    model, tok = load_for_generation(model_cfg, artifact)         # merged, eval mode, on the device, in model.dtype
    model, tok = load_for_training(model_cfg, artifact, reference=True)  # PEFT adapter kept and trainable
    with reference(model): ...                                    # the policy training started from

An artifact is a folder with the tokenizer, `base_model.json` (the base model's kind, id,
local path, dtype and whether the folder holds an adapter) and either a standard PEFT
adapter (`adapter_config.json`, `adapter_model.safetensors`: load it with
`PeftModel.from_pretrained(base, folder)`) or a full model. `artifact` is an `Artifact` (from
the store) or a folder path; None means the config's base model (`model=`).

The KL reference is the policy training starts from, not the base model: rl continues the sft
adapter, and a KL to the base (the adapter disabled) would pull the policy back toward the
zero-shot model that the SFT it starts from was trained away from. So `reference=True` loads the
artifact's adapter a second time, frozen, as the PEFT adapter `reference` (a LoRA's worth of
memory, not a second model), and `reference(model)` switches to it, as TRL's DPOTrainer does
with `ref_adapter_name`. A fresh LoRA (no artifact) starts equal to its base, so there the
adapter disabled is the starting policy.

The model goes on the GPU when one is present, in `model.dtype`, with
`model.trust_remote_code`. On a CPU (`models.weights_dtype`) it trains in float32 and generates
in float32, or in bfloat16 where the CPU has native bf16 and `model.dtype=bfloat16`: an adapter
is then merged in float32 and the merged weights cast, so the cast rounds once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from talentrl_cli import models
from talentrl_cli.config import redact
from talentrl_cli.errors import TalentRLError

BASE_FILE = "base_model.json"
REFERENCE = "reference"  # the frozen copy of the starting adapter (`load_for_training(reference=True)`)


def device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def save_policy(model: Any, tokenizer: Any, out_dir: Path, model_cfg: Any, base_path: str) -> None:
    """The adapter (a PEFT model) or the full model, the tokenizer and `base_model.json`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    adapter = hasattr(model, "peft_config")
    # the trained adapter alone: a frozen `reference` copy beside it is not part of the policy
    model.save_pretrained(out_dir, **({"selected_adapters": [model.active_adapter]} if adapter else {}))
    tokenizer.save_pretrained(out_dir)
    base = {"kind": str(model_cfg.get("kind")), "name_or_path": model_cfg.get("name_or_path"), "path": base_path,
            "adapter": adapter, "dtype": str(model_cfg.get("dtype"))}
    base = redact(base)  # a value interpolated from a credential (`${oc.env:...}`) stays out, as in the manifest
    (out_dir / BASE_FILE).write_text(json.dumps(base, indent=2, sort_keys=True) + "\n")


def base_info(artifact: Any) -> dict[str, Any]:
    folder = _folder(artifact)
    try:
        return json.loads((folder / BASE_FILE).read_text())
    except (OSError, ValueError) as err:
        raise TalentRLError(f"{folder / BASE_FILE}: not a policy artifact ({err})",
                            "pass an sft or rl artifact as inputs.model, or inputs.model=none") from None


def load_for_generation(model_cfg: Any, artifact: Any | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) in eval mode on the device: an adapter merged into its base
    (generation then costs what the base costs), a full model, or the config's model."""
    if artifact is None:
        return models.load_policy(model_cfg, device=device())
    model, tokenizer = _load(model_cfg, artifact, trainable=False)
    return generation_copy(model, model_cfg, copy=False), tokenizer


def load_for_training(model_cfg: Any, artifact: Any | None = None, full_finetune: bool = False,
                      reference: bool = False) -> tuple[Any, Any]:
    """(model, tokenizer) to train, on the device: the artifact's adapter kept as a trainable
    PEFT adapter, a full model (every weight trainable), or the config's base model with a
    fresh LoRA adapter (`model.lora`) unless `full_finetune`. `reference`: also the artifact's
    adapter frozen, as the KL reference (`reference`)."""
    if artifact is not None:
        model, tokenizer = _load(model_cfg, artifact, trainable=True)
        if reference and hasattr(model, "peft_config"):  # a full model: the trainer's `frozen_copy` instead
            model.load_adapter(str(_folder(artifact)), adapter_name=REFERENCE, is_trainable=False)
    else:
        from peft import LoraConfig, get_peft_model

        tokenizer = models.load_tokenizer(model_cfg)
        model = _from_pretrained(models.model_path(model_cfg), model_cfg)
        if not full_finetune:
            model = get_peft_model(model, LoraConfig(**models.lora_settings(model_cfg)))
    return model.train().to(device()), tokenizer


def generation_copy(model: Any, model_cfg: Any, copy: bool = True) -> Any:
    """`model` as generation runs it: the adapter merged, in eval mode, on the device, in
    the generation dtype (`models.weights_dtype`). `copy=False` merges in place (the
    model is not trained afterwards); rl passes a copy of its training model each step."""
    import copy as copying

    model = copying.deepcopy(model) if copy else model
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    return model.eval().to(device=device(), dtype=_generation_dtype(model, model_cfg))


def _generation_dtype(model: Any, model_cfg: Any) -> Any:
    dtype = models.weights_dtype(model_cfg)
    return next(model.parameters()).dtype if dtype == "auto" else dtype


@contextmanager
def reference(model: Any) -> Iterator[Any]:
    """A context in which `model` computes the reference policy, the one training started
    from: the frozen `reference` adapter when `load_for_training(reference=True)` loaded one,
    else the adapter disabled (a fresh LoRA starts equal to its base). A full model has no
    frozen twin: the trainer keeps `frozen_copy(model)` for its KL instead."""
    if REFERENCE in getattr(model, "peft_config", {}):
        trained = model.active_adapter
        model.set_adapter(REFERENCE, inference_mode=True)
        try:
            yield model
        finally:
            model.set_adapter(trained)  # trainable again, the reference frozen
    elif hasattr(model, "disable_adapter"):
        with model.disable_adapter():
            yield model
    else:
        yield model


def frozen_copy(model: Any) -> Any:
    """A frozen copy of a full model, as the KL reference of full fine-tuning."""
    import copy

    ref = copy.deepcopy(model).eval()
    for p in ref.parameters():
        p.requires_grad_(False)
    return ref


def _load(model_cfg: Any, artifact: Any, trainable: bool) -> tuple[Any, Any]:
    from transformers import AutoTokenizer

    folder, info = _folder(artifact), base_info(artifact)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not info.get("adapter", True):
        return _from_pretrained(str(folder), model_cfg), tokenizer
    from peft import PeftModel

    base_path = info.get("path") or ""
    if not Path(base_path).exists() and info.get("kind") in ("tiny", "smollm2"):
        base_path = models.model_path(model_cfg)  # the cache moved: rebuild the same base
    model = _from_pretrained(base_path, model_cfg)
    return PeftModel.from_pretrained(model, folder, is_trainable=trainable), tokenizer


def _from_pretrained(path: str, model_cfg: Any) -> Any:
    from transformers import AutoModelForCausalLM

    return models.from_pretrained(AutoModelForCausalLM, path, model_cfg, dtype=models.weights_dtype(model_cfg, training=True))


def _folder(artifact: Any) -> Path:
    return Path(getattr(artifact, "path", artifact))
