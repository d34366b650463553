"""RL checkpoints: everything a resumed run needs to write the same `train_log.jsonl`.

`<root>/.checkpoints/rl/<key>/step-N/` (see `stages.checkpoint_dir`) holds the trainable
weights (the LoRA adapter, or every weight under full fine-tuning) as safetensors, the
optimizer and scheduler states and the torch RNGs (`optimizer.pt`, read back with
`weights_only=True`: tensors and plain containers, no pickled objects), the python and numpy
RNGs in `rng.json`, and `state.json` with the next step, the task cursor and the train-log
rows so far. Each is written under a temporary name
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
    from safetensors.torch import save_file

    model = trainer.accelerator.unwrap_model(trainer.model)
    target = folder / f"step-{step}"
    tmp = folder / f".step-{step}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    trainable = {n: p.detach().cpu().contiguous() for n, p in model.named_parameters() if p.requires_grad}
    save_file(trainable, str(tmp / "trainable.safetensors"))
    torch.save({"optimizer": trainer.optimizer.state_dict(), "scheduler": trainer.scheduler.state_dict(),
                "torch_rng": torch.get_rng_state(),
                "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []},
               tmp / "optimizer.pt")
    (tmp / "rng.json").write_text(json.dumps(_host_rng_state()))
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
    from safetensors.torch import load_file

    model = trainer.accelerator.unwrap_model(trainer.model)
    weights = load_file(str(path / "trainable.safetensors"), device="cpu")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name in weights:
                p.copy_(weights[name].to(p.device, p.dtype))
    trainer.backend_stale = True  # new weights: a vLLM backend must receive them
    extra = torch.load(path / "optimizer.pt", map_location="cpu", weights_only=True)
    trainer.optimizer.load_state_dict(extra["optimizer"])
    trainer.scheduler.load_state_dict(extra["scheduler"])
    torch.set_rng_state(extra["torch_rng"])
    if extra["cuda_rng"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(extra["cuda_rng"])
    _set_host_rng_state(json.loads((path / "rng.json").read_text()))
    state = json.loads((path / "state.json").read_text())
    return int(state["next_step"]), list(state["rows"])


def _host_rng_state() -> dict[str, Any]:
    """Python's and numpy's generator states as JSON (lists of ints), not pickles."""
    version, internal, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {"python": [version, list(internal), gauss],
            "numpy": [kind, keys.tolist(), int(pos), int(has_gauss), float(cached)]}


def _set_host_rng_state(state: dict[str, Any]) -> None:
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, np.array(keys, dtype=np.uint32), pos, has_gauss, cached))
