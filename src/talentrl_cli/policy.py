"""The policy artifact: one format that sft and rl write and that eval and rl read.

    save_policy(model, tokenizer, out_dir, model_cfg, base_path)  # adapter (or full model) + tokenizer + base_model.json
    model, tok = load_for_generation(model_cfg, artifact)         # merged, eval mode, on the device, in model.dtype
    model, tok = load_for_training(model_cfg, artifact)           # PEFT adapter kept and trainable
    with reference(model) as ref: ...                             # the adapter disabled: no second copy

An artifact is a folder with the tokenizer, `base_model.json` (the base model's kind, id,
local path, dtype and whether the folder holds an adapter) and either a standard PEFT
adapter (`adapter_config.json`, `adapter_model.safetensors`: load it with
`PeftModel.from_pretrained(base, folder)`) or a full model. `artifact` is an `Artifact` (from
the store) or a folder path; None means the config's base model (`model=`).

The model goes on the GPU when one is present, in `model.dtype`, with
`model.trust_remote_code`. On a CPU (`models.weights_dtype`) it trains in float32 and generates
in float32, or in bfloat16 where the CPU has native bf16 and `model.dtype=bfloat16`: an adapter
is then merged in float32 and the merged weights cast, so the cast rounds once.
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from talentrl_cli import models
from talentrl_cli.config import redact
from talentrl_cli.errors import TalentRLError

BASE_FILE = "base_model.json"


def device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def save_policy(model: Any, tokenizer: Any, out_dir: Path, model_cfg: Any, base_path: str) -> None:
    """The adapter (a PEFT model) or the full model, the tokenizer and `base_model.json`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    adapter = hasattr(model, "peft_config")
    model.save_pretrained(out_dir)
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


def load_for_training(model_cfg: Any, artifact: Any | None = None, full_finetune: bool = False) -> tuple[Any, Any]:
    """(model, tokenizer) to train, on the device: the artifact's adapter kept as a trainable
    PEFT adapter, a full model (every weight trainable), or the config's base model with a
    fresh LoRA adapter (`model.lora`) unless `full_finetune`."""
    if artifact is not None:
        model, tokenizer = _load(model_cfg, artifact, trainable=True)
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


def reference(model: Any) -> Any:
    """A context in which `model` computes the reference policy: a PEFT model with its
    adapter disabled (the frozen base, no second copy). A full model has no frozen twin: the
    trainer keeps `frozen_copy(model)` for its KL instead."""
    if hasattr(model, "disable_adapter"):
        return model.disable_adapter()
    return nullcontext()


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
