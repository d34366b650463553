"""The protocol's token budget on WorldQA with SmolLM2's tokenizer, per SFT mode.

    python bench/prompt_budget.py                       # mine + index on WorldQA (600 trajectories)
    python bench/prompt_budget.py --root /tmp/b -- index.k=3 env.max_sentences=3

Builds the SFT examples `talentrl sft` would train on (without training) and prints, per
mode, the median and max tokens of the routing turn, the execution context and the whole
example, and the share of an example's tokens the loss trains on, against the targets.
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path

TARGETS = {"routing": 200, "context": 320, "example": 650}  # max tokens (median for example)
MIN_TRAINED_SHARE = 0.20


def build(root: Path, mode: str, overrides: list[str]) -> list[dict]:
    from omegaconf import OmegaConf

    from talentrl_cli.artifacts import ArtifactStore
    from talentrl_cli.runner import plan_stage
    from talentrl_cli.stages.sft import build_dataset

    plan = plan_stage("sft", [f"sft.mode={mode}", *overrides], ArtifactStore(root))
    return build_dataset(OmegaConf.create(plan.run_config), plan.inputs["mine"], plan.inputs["index"])


def summarise(rows: list[dict]) -> dict[str, float]:
    out = {}
    for key in ("routing", "context", "example"):
        values = [r[key] for r in rows]
        out[f"{key}_med"], out[f"{key}_max"] = statistics.median(values), max(values)
    out["trained_share"] = sum(r["trained"] for r in rows) / sum(r["example"] for r in rows)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("artifacts-bench-budget"))
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from _cli import cli

    from talentrl_cli.config import compose
    from talentrl_cli.models import load_tokenizer
    from talentrl_cli.sft_data import token_budget

    model = f"model={args.model}"
    if not (args.root / "index" / "latest").exists():
        cli(args.root, "mine", model)
        cli(args.root, "index", model)
    tokenizer = load_tokenizer(compose([model]).model)
    print(f"{'mode':<8}{'n':>5}{'route_med':>10}{'route_max':>10}{'ctx_med':>9}{'ctx_max':>9}"
          f"{'ex_med':>8}{'ex_max':>8}{'trained':>9}")
    results = {}
    for mode in ("talent", "flat", "none"):
        rows = token_budget(tokenizer, build(args.root, mode, [model, *args.overrides]))
        s = results[mode] = summarise(rows)
        print(f"{mode:<8}{len(rows):>5}{s['routing_med']:>10.0f}{s['routing_max']:>10.0f}{s['context_med']:>9.0f}"
              f"{s['context_max']:>9.0f}{s['example_med']:>8.0f}{s['example_max']:>8.0f}{s['trained_share']:>9.1%}")
    talent = results["talent"]
    checks = [("routing turn max", talent["routing_max"], TARGETS["routing"]),
              ("execution context max", max(r["context_max"] for r in results.values()), TARGETS["context"]),
              ("median SFT example", talent["example_med"], TARGETS["example"])]
    for name, value, limit in checks:
        print(f"TARGET {'met   ' if value <= limit else 'MISSED'} {name}: {value:.0f} tokens (<= {limit})")
    share = min(r["trained_share"] for r in results.values())
    print(f"TARGET {'met   ' if share >= MIN_TRAINED_SHARE else 'MISSED'} trained-token share: "
          f"{share:.1%} (>= {MIN_TRAINED_SHARE:.0%}, lowest mode)")


if __name__ == "__main__":
    main()
