"""SFT speed: `talentrl sft` train tokens/s against a plain PEFT step at the same row lengths,
and eval seconds per episode at batch 16, in one run.

    python bench/sft.py                                   # model=smollm2, 32 examples, eval on 32 dev questions
    python bench/sft.py --root /tmp/demo --examples 64 --eval 48 -- sft.lr=1e-3
    python bench/sft.py --root /tmp/bf16 -- model.dtype=bfloat16     # bf16 on a CPU with AMX / AVX512-BF16

Runs `talentrl mine` and `talentrl index` (WorldQA) unless the root holds them, then
`talentrl sft` with the overrides; then a plain loop over the same examples' token rows
(the model and LoRA config `talentrl sft` used, `model(input_ids, labels=input_ids).loss`,
backward, AdamW step, batch 1; the first step is a warm-up), and prints both tokens/s and
their ratio (target >= 0.85). `--eval N` then times `talentrl eval` of the trained adapter in
talent mode on the first N dev questions (wall time over episodes, model load included).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

TARGET_RATIO = 0.85


def plain_peft_tokens_per_s(cfg, rows: list[list[int]]) -> float:
    """fwd + bwd + AdamW step per row (batch 1) with the stage's model and LoRA settings."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from talentrl_cli.models import autocast, lora_settings, model_path

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(model_path(cfg.model), dtype=torch.float32)
    model = get_peft_model(model, LoraConfig(**lora_settings(cfg.model)))
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=float(cfg.sft.lr))
    tokens, seconds = 0, 0.0
    for i, row in enumerate(rows):
        ids = torch.tensor([row])
        started = time.perf_counter()
        with autocast(cfg.model):  # the stage's precision: bf16 autocast where `models.cpu_bf16`
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if i:  # the first step warms up allocators and kernels
            tokens, seconds = tokens + len(row), seconds + time.perf_counter() - started
    return tokens / seconds


def training_rows(artifact_path: Path, cfg) -> list[list[int]]:
    """The token rows `talentrl sft` trained on, re-rendered from its `sft_data.jsonl`."""
    from talentrl_cli import prompts
    from talentrl_cli.jsonl import iter_jsonl
    from talentrl_cli.models import load_tokenizer

    tokenizer = load_tokenizer(cfg.model)
    return [tokenizer.apply_chat_template(e["messages"], tokenize=True, return_dict=True,
                                          chat_template=prompts.chat_template(tokenizer))["input_ids"]
            for e in iter_jsonl(artifact_path / "sft_data.jsonl")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("artifacts-bench-sft"))
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--examples", type=int, default=32)
    parser.add_argument("--plain-rows", type=int, default=12, help="rows the plain loop steps through")
    parser.add_argument("--eval", type=int, default=32, help="dev questions to time eval on (0: skip)")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("WANDB_MODE", "disabled")
    from _cli import cli

    from talentrl_cli.artifacts import ArtifactStore
    from talentrl_cli.config import compose

    model = f"model={args.model}"
    if not (args.root / "index" / "latest").exists():
        cli(args.root, "mine", model)
        cli(args.root, "index", model)
    overrides = [model, f"sft.max_examples={args.examples}", *args.overrides]
    ref = cli(args.root, "sft", "--force", *overrides)
    artifact = ArtifactStore(args.root).resolve(ref)
    metrics = artifact.manifest["metrics"]
    cfg = compose(overrides)
    rows = training_rows(artifact.path, cfg)[: args.plain_rows + 1]
    plain = plain_peft_tokens_per_s(cfg, rows)
    stage = float(metrics["tokens_per_s"])
    lengths = sorted(len(r) for r in rows)
    print(json.dumps({"ref": ref, "model": args.model, **{k: metrics.get(k) for k in (
        "mode", "n_examples", "steps", "tokens", "loss_start", "loss_end", "seconds", "tokens_per_s")}}, indent=2))
    print(f"\n{'what':<34}{'tokens/s':>10}")
    print(f"{'talentrl sft (TRL, whole run)':<34}{stage:>10.1f}")
    print(f"{'plain PEFT step, same rows':<34}{plain:>10.1f}   (rows: median {lengths[len(lengths) // 2]} tokens)")
    ratio = stage / plain
    print(f"TARGET {'met   ' if ratio >= TARGET_RATIO else 'MISSED'} sft / plain = {ratio:.2f} (>= {TARGET_RATIO})")
    if args.eval:
        started = time.perf_counter()
        cli(args.root, "eval", "--force", model, *args.overrides, f"inputs.model={ref}", f"eval.limit={args.eval}",
            "eval.modes=[talent]", "eval.batch_size=16")
        per_episode = (time.perf_counter() - started) / args.eval
        print(f"eval, talent mode, batch 16, {args.eval} dev questions: {per_episode:.2f} s per episode "
              "(wall time, model load included)")


if __name__ == "__main__":
    main()
