"""The RL loss's log-prob pass: every position's logits against the trained positions only.

`rl.loss.sequence_logps` projects onto the vocabulary only the positions a step trains (an
episode's generated tokens and its talent label); the prompt and observation positions skip
the LM head and the log-softmax. This times one LoRA forward + backward of an episode-shaped
row both ways, with the model and LoRA the trainer uses, and prints the table.

    HF_HUB_OFFLINE=1 python bench/rl_logps.py [--model smollm2] [--length 600] [--trained 30] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def load(model_name: str):
    from peft import LoraConfig, get_peft_model

    from talentrl_cli import models
    from talentrl_cli.config import compose

    cfg = compose([f"model={model_name}"]).model
    model, _ = models.load_policy(cfg, device="cpu")
    lora = LoraConfig(r=int(cfg.lora.r), lora_alpha=int(cfg.lora.alpha), target_modules=list(cfg.lora.target_modules))
    model = get_peft_model(model, lora)
    model.train()
    return model


def seconds_per_row(model, ids, needed, repeats: int, only_trained: bool) -> float:
    import torch

    from talentrl_cli.rl.loss import sequence_logps

    def once() -> None:
        logps = sequence_logps(model, ids, torch.ones_like(ids), 0.7, None, needed if only_trained else None)
        (logps * needed).sum().backward()

    once()  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        once()
    return (time.perf_counter() - start) / repeats


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--length", type=int, default=600, help="tokens in the row (a WorldQA episode: ~600)")
    parser.add_argument("--trained", type=int, default=30, help="trained positions in it (~30 generated tokens)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = load(args.model)
    ids = torch.randint(0, model.config.vocab_size, (1, args.length))
    needed = torch.zeros(1, args.length - 1, dtype=torch.bool)
    needed[0, torch.randperm(args.length - 1)[: args.trained]] = True
    full = seconds_per_row(model, ids, needed, args.repeats, only_trained=False)
    part = seconds_per_row(model, ids, needed, args.repeats, only_trained=True)
    print(f"model={args.model}, one row of {args.length} tokens, {args.trained} trained, LoRA fwd+bwd, "
          f"{torch.get_num_threads()} threads, mean of {args.repeats}")
    print(f"{'log-probs at':<22}{'s/row':>8}{'tokens/s':>10}")
    for name, seconds in (("every position", full), ("trained positions", part)):
        print(f"{name:<22}{seconds:>8.2f}{args.length / seconds:>10.0f}")
    print(f"speed-up: {full / part:.2f}x")


if __name__ == "__main__":
    main()
