"""RL checkpoints: everything a resumed run needs to write the same `train_log.jsonl`.

`<root>/.checkpoints/rl/<key>/step-N/` (see `stages.checkpoint_dir`) holds the trainable
weights (the LoRA adapter, or every weight under full fine-tuning), the optimizer and
scheduler states, every RNG (python, numpy, torch, CUDA), and `state.json` with the next
step, the task cursor and the train-log rows so far. Each is written under a temporary name
and renamed into place, so a crash leaves the previous checkpoint whole; the last two are
kept. Rollout sampling and talent draws are seeded from (seed, task, step), so restored
weights and optimizer give the same rollouts.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np

STEP_DIR = re.compile(r"^step-(\d+)$")
KEEP = 2


def latest(folder: Path) -> Path | None:
    found = [(int(m.group(1)), p) for p in folder.glob("step-*") if (m := STEP_DIR.match(p.name))]
    return max(found)[1] if found else None


def save(folder: Path, step: int, trainer: Any, rows: list[dict[str, Any]]) -> Path:
    import torch

    model = trainer.accelerator.unwrap_model(trainer.model)
    target = folder / f"step-{step}"
    tmp = folder / f".step-{step}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    torch.save({n: p.detach().cpu() for n, p in model.named_parameters() if p.requires_grad}, tmp / "trainable.pt")
    torch.save({"optimizer": trainer.optimizer.state_dict(), "scheduler": trainer.scheduler.state_dict(),
                "rng": _rng_state()}, tmp / "optimizer.pt")
    state = {"next_step": step, "cursor": step * int(trainer.rl.tasks_per_step), "rows": rows}
    (tmp / "state.json").write_text(json.dumps(state) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    os.rename(tmp, target)
    for old in sorted(folder.glob("step-*"), key=lambda p: int(STEP_DIR.match(p.name).group(1)))[:-KEEP]:
        shutil.rmtree(old, ignore_errors=True)
    return target


def load(path: Path, trainer: Any) -> tuple[int, list[dict[str, Any]]]:
    """Restore `trainer` from a checkpoint; (next step, train-log rows so far)."""
    import torch

    model = trainer.accelerator.unwrap_model(trainer.model)
    weights = torch.load(path / "trainable.pt", map_location="cpu")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name in weights:
                p.copy_(weights[name].to(p.device, p.dtype))
    trainer.backend_stale = True  # new weights: a vLLM backend must receive them
    extra = torch.load(path / "optimizer.pt", map_location="cpu", weights_only=False)
    trainer.optimizer.load_state_dict(extra["optimizer"])
    trainer.scheduler.load_state_dict(extra["scheduler"])
    _set_rng_state(extra["rng"])
    state = json.loads((path / "state.json").read_text())
    return int(state["next_step"]), list(state["rows"])


def _rng_state() -> dict[str, Any]:
    import torch

    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}


def _set_rng_state(state: dict[str, Any]) -> None:
    import torch

    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
