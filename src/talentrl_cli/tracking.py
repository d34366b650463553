"""Weights & Biases tracking: `tracking.mode=disabled|offline|online` (disabled by default).

Each stage run logs its resolved config and metrics. With W&B on, the run also declares its
input artifacts with `use_artifact` and its output with `log_artifact`, so W&B's lineage
graph mirrors the local store. The W&B artifact for a talentrl artifact holds only its
`manifest.json` (which carries the sha256 of every file), so the producer's `log_artifact`
and a consumer's `use_artifact` build byte-identical artifacts and W&B links them by digest
without uploading model weights twice.

In a data-parallel run only rank 0 opens a W&B run. Nothing secret is logged: configs pass through `config.redact`, and W&B reads its key from
its own login, never from our config.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from talentrl_cli.config import redact
from talentrl_cli.distributed import is_main_process
from talentrl_cli.errors import ConfigError

MODES = ("disabled", "offline", "online")


def active_run() -> Any:
    """The W&B run the stage runner opened, on rank 0 only; None when tracking is off
    (wandb is then never imported)."""
    import sys

    wandb = sys.modules.get("wandb")
    run = getattr(wandb, "run", None) if wandb else None
    return run if run is not None and is_main_process() else None


def log_numbers(prefix: str, values: dict[str, Any], step: int) -> None:
    """The numeric entries of `values` as `<prefix>/<key>` at `step`, into `active_run()`."""
    run = active_run()
    if run is not None:
        run.log({f"{prefix}/{k}": v for k, v in values.items() if isinstance(v, int | float)}, step=int(step))


class Tracker:
    """A no-op tracker; `WandbTracker` overrides every method."""

    def log_metrics(self, metrics: dict[str, Any], step: int | None = None) -> None:
        pass

    def use_inputs(self, inputs: dict[str, Any]) -> None:
        pass

    def log_output(self, artifact: Any) -> None:
        pass

    def log_table(self, name: str, columns: list[str], rows: list[list[Any]]) -> None:
        pass


class WandbTracker(Tracker):
    def __init__(self, run: Any, offline: bool):
        self.run = run
        self.offline = offline

    def log_metrics(self, metrics: dict[str, Any], step: int | None = None) -> None:
        scalars = {k: v for k, v in _flatten(metrics).items() if isinstance(v, int | float)}
        if scalars:
            self.run.log(scalars, step=step)
        self.run.summary.update(scalars)

    def use_inputs(self, inputs: dict[str, Any]) -> None:
        for artifact in inputs.values():
            self._use(_wandb_artifact(artifact))

    def _use(self, draft: Any) -> None:
        if not self.offline:
            self.run.use_artifact(draft)
            return
        # W&B 0.31 refuses `use_artifact` offline, but for a draft artifact the public
        # method does exactly this call (then waits for the server, which offline never
        # answers); `wandb sync` later records the use, so offline lineage matches online.
        self.run._log_artifact(draft, aliases=[], is_user_created=True, use_after_commit=True)

    def log_output(self, artifact: Any) -> None:
        self.run.log_artifact(_wandb_artifact(artifact), aliases=["latest", f"local-{artifact.version}"])

    def log_table(self, name: str, columns: list[str], rows: list[list[Any]]) -> None:
        import wandb

        self.run.log({name: wandb.Table(columns=columns, data=rows)})


@contextlib.contextmanager
def track(tracking_cfg: Any, *, stage: str, config: dict[str, Any], root: Path) -> Iterator[Tracker]:
    """A tracker for one stage run; the W&B run (if any) is finished on exit."""
    mode = str(tracking_cfg.get("mode", "disabled"))
    if mode not in MODES:
        raise ConfigError(f"tracking.mode={mode!r} is not one of {', '.join(MODES)}")
    if mode == "disabled" or not is_main_process():  # data-parallel workers: rank 0 alone tracks
        yield Tracker()
        return
    run = _init_run(tracking_cfg, mode=mode, stage=stage, config=config, root=root)
    try:
        yield WandbTracker(run, offline=mode == "offline")
    except BaseException:
        _finish(run, exit_code=1)
        raise
    _finish(run, exit_code=0)


def _finish(run: Any, *, exit_code: int) -> None:
    """Finish the run and stop W&B's service process.

    `run.finish()` returns before the service has flushed the run file to disk (a reader
    right after it found only the file header, 1 time in 5); `wandb.teardown()` waits for
    the service to exit, so the offline run folder is complete when the stage returns."""
    import wandb

    run.finish(exit_code=exit_code)
    wandb.teardown()


def _init_run(tracking_cfg: Any, *, mode: str, stage: str, config: dict[str, Any], root: Path) -> Any:
    import wandb

    run_dir = Path(tracking_cfg.get("dir") or root / ".wandb")
    run_dir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("WANDB_SILENT", "true")
    return wandb.init(
        project=tracking_cfg.get("project") or "talentrl",
        entity=tracking_cfg.get("entity"),
        mode=mode,
        dir=str(run_dir),
        job_type=stage,
        config=redact(config),
        settings=wandb.Settings(console="off", save_code=False, x_disable_stats=True),
        reinit="create_new",
    )


def _wandb_artifact(artifact: Any) -> Any:
    import wandb

    summary = {"ref": artifact.ref, "digest": artifact.digest,
               "config_hash": artifact.manifest["config_hash"]}
    draft = wandb.Artifact(name=f"talentrl-{artifact.stage}", type=artifact.stage, metadata=summary)
    draft.add_file(str(artifact.path / "manifest.json"), name="manifest.json")
    return draft


def _flatten(metrics: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in metrics.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}/"))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
