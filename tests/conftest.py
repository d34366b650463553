"""Shared fixtures: the real benchmark data (skipped when absent) and offline settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """`../shared/data` beside the checkout, or $TALENTRL_SHARED_DATA."""
    return Path(os.environ.get("TALENTRL_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not (path / "SOURCES.md").exists():
        pytest.skip(f"real benchmark data not found at {path}")
    return path


# the small WorldQA world the stage tests share: no embedder, built in well under a second
SMALL_WORLD = ("env.retriever=lexical", "env.n_entities=60", "env.n_tasks=200")


# -- test-only stages and a CLI runner --------------------------------------------------------


def run_stages(root: Path, *commands: list[str]) -> Path:
    """Run each `talentrl --artifacts-root ROOT <command>` in-process, failing on a non-zero
    exit; returns ROOT (module fixtures build their inputs once with it)."""
    from talentrl_cli.cli import main

    for args in commands:
        try:
            main(["--artifacts-root", str(root), *args])
        except SystemExit as exit_:
            assert not exit_.code, args
    return root


def _alpha(cfg, inputs, out_dir):
    (out_dir / "value.txt").write_text(f"{cfg.seed}\n")
    (out_dir / "sub").mkdir()
    (out_dir / "sub" / "notes.md").write_text("alpha output\n")
    return {"value": int(cfg.seed)}


def _beta(cfg, inputs, out_dir):
    upstream = int(inputs["alpha"].file("value.txt").read_text())
    (out_dir / "value.txt").write_text(f"{upstream + 100}\n")
    return {"value": upstream + 100}


@pytest.fixture
def test_stages(monkeypatch):
    """Registers the test-only stages `alpha` and `beta` (beta consumes alpha)."""
    from talentrl_cli.stages import STAGES, Stage

    alpha = Stage("alpha", _alpha, "Test stage alpha.", "talentrl alpha seed=1")
    beta = Stage("beta", _beta, "Test stage beta.", "talentrl beta", inputs={"alpha": ("alpha",)})
    monkeypatch.setitem(STAGES._items, "alpha", alpha)
    monkeypatch.setitem(STAGES._items, "beta", beta)
    return {"alpha": alpha, "beta": beta}


@pytest.fixture
def run_cli(tmp_path, capsys):
    """Runs `talentrl --artifacts-root <tmp> ARGS...` in-process; returns (code, stdout, stderr)."""
    from talentrl_cli.cli import main

    root = tmp_path / "artifacts"

    def run(*args: str, root_dir=root):
        code = 0
        try:
            main(["--artifacts-root", str(root_dir), *args])
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        out, err = capsys.readouterr()
        return code, out, err

    run.root = root
    return run


def save_changed_adapter(folder):
    """A tiny policy with a LoRA adapter whose B matrices are non-zero (so it changes the
    output), saved to `folder`; returns the model."""
    import torch

    from talentrl_cli import models, policy
    from talentrl_cli.config import compose

    cfg = compose(["model=tiny"]).model
    model, tokenizer = policy.load_for_training(cfg)
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    policy.save_policy(model, tokenizer, folder, cfg, models.model_path(cfg))
    return model
