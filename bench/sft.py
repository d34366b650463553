"""SFT figures on the embedded demo data: the loss curve (start, end) and training tokens/s.

    python bench/sft.py                                   # model=smollm2, 64 examples, 1 epoch
    python bench/sft.py --root /tmp/demo --examples 128 -- sft.lr=1e-4 sft.mode=flat

Runs `talentrl mine` (WorldQA expert trajectories) and `talentrl index` unless the root already
holds them, then `talentrl sft` with the given overrides, and prints the manifest's loss start
and end, the train loss, steps, tokens and tokens/s. With matplotlib installed it also writes
`sft_loss.png` (the loss curve) next to the artifacts root.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
from pathlib import Path


def cli(root: Path, *args: str) -> str:
    from talentrl_cli.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            main(["--artifacts-root", str(root), *args])
        except SystemExit as exit_:
            if exit_.code:
                raise
    return out.getvalue().split()[-1]


def plot(curve: list[list[float]], path: Path, title: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot([s for s, _ in curve], [v for _, v in curve], marker="o", markersize=3)
    ax.set(xlabel="optimizer step", ylabel="training loss (assistant tokens)", title=title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("artifacts-bench-sft"))
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--examples", type=int, default=64)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("WANDB_MODE", "disabled")
    model = f"model={args.model}"
    if not (args.root / "index" / "latest").exists():
        cli(args.root, "mine", model)
        cli(args.root, "index", model)
    ref = cli(args.root, "sft", model, f"sft.max_examples={args.examples}", *args.overrides)
    manifest = json.loads((args.root / ref.replace(":", "/") / "manifest.json").read_text())
    metrics = manifest["metrics"]
    keys = ("mode", "n_examples", "steps", "tokens", "loss_start", "loss_end", "train_loss", "seconds",
            "tokens_per_s", "trainable_params", "world_size")
    print(json.dumps({"ref": ref, "model": args.model, **{k: metrics.get(k) for k in keys}}, indent=2))
    png = args.root.parent / "sft_loss.png"
    if plot(metrics["loss_curve"], png, f"talentrl sft, {args.model}, {metrics['n_examples']} examples"):
        print(f"loss curve: {png}")


if __name__ == "__main__":
    main()
