"""One progress display per stage run, on stderr, built on `rich.progress`; and quiet libraries.

Why: a stage's console used to be HF weight-loading bars, FutureWarnings and TRL's raw log
dicts, then minutes of silence while eval ran. Now the runner opens one `StageDisplay` around
each stage run (`stage_display`), the stage adds its tasks to it (`current().task(...)`,
`current().step(...)`, `trainer_callback()` for sft), and `quiet_libraries` mutes the
libraries' own bars, warnings and info logs (not under `-v`).

On a terminal the display is live. Elsewhere (CI, a log file) it prints plain lines: one when
a task starts and one when it ends, and between them at most one every `LINE_EVERY` seconds,
so a log never fills with redraws. Stdout is left alone: its last line is the published ref.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import warnings
from collections.abc import Iterator
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

LINE_EVERY = 10.0  # seconds between two plain progress lines of a task (stderr not a terminal)
LIBRARIES = ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "huggingface_hub",
             "sentence_transformers", "tokenizers")
# read when each library is imported (the stages import them lazily); a user's own value wins
QUIET_ENV = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # huggingface_hub's bars, and transformers' (weight loading)
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",  # datasets' map/filter bars (TRL's tokenizing passes)
    "TRANSFORMERS_VERBOSITY": "error",
    "DATASETS_VERBOSITY": "error",
    "HF_HUB_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "TOKENIZERS_PARALLELISM": "false",  # its fork warning
    "TQDM_DISABLE": "1",  # plain tqdm bars, e.g. transformers' one-time GGUF conversion of SmolLM2 (read at tqdm's import)
}

_state: dict[str, Any] = {"verbose": False, "display": None}


def quiet_libraries(verbose: bool = False) -> None:
    """Mute the ML libraries' progress bars, deprecation warnings and info logs, so the stage
    display is all a user sees; `-v` keeps them all. talentrl's own warnings are never muted."""
    _state["verbose"] = verbose
    if verbose:
        return
    for name, value in QUIET_ENV.items():
        os.environ.setdefault(name, value)
    pattern = rf"({'|'.join(LIBRARIES)})(\.|$)"
    for category in (FutureWarning, UserWarning, DeprecationWarning):
        warnings.filterwarnings("ignore", category=category, module=pattern)
    for name in LIBRARIES:
        logging.getLogger(name).setLevel(logging.ERROR)
    _quiet_imported()


def _quiet_imported() -> None:
    """The environment variables act at import; these calls cover libraries already imported."""
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    if "datasets" in sys.modules:
        import datasets

        datasets.disable_progress_bars()
        datasets.logging.set_verbosity_error()
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()


def is_verbose() -> bool:
    return bool(_state["verbose"])


def stderr_console() -> Console:
    """Where displays and summaries go; a log file has no width, and rich's default of 80
    columns folds the eval and summary tables, so it gets 160 (the comparison table with its
    delta column needs about 125)."""
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 160
    return console


class StageDisplay:
    """The progress display of one stage run: a live rich Progress on a terminal, else plain
    rate-limited lines. Disabled (silent) on data-parallel workers and outside the runner."""

    def __init__(self, stage: str, console: Console | None = None, enabled: bool = True):
        self.stage, self.enabled = stage, enabled
        self.console = console or stderr_console()
        self.live = enabled and self.console.is_terminal and not self.console.is_dumb_terminal
        self.progress = Progress(
            SpinnerColumn(finished_text="[green]✓[/]"), TextColumn("[bold]{task.description}"),
            BarColumn(bar_width=30), TextColumn("{task.fields[count]}"), TimeElapsedColumn(),
            TextColumn("{task.fields[info]}"), console=self.console, disable=not self.live,
            redirect_stdout=False)
        self._printed: dict[TaskID, float] = {}
        self._phase: TaskID | None = None

    def __enter__(self) -> StageDisplay:
        self.progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._end_phase()
        self.progress.stop()

    def task(self, description: str, total: int | None = None, unit: str = "") -> TaskID:
        """A new line of the display: a bar when `total` is known, else a spinner."""
        self._end_phase()
        task = self.progress.add_task(description, total=total, unit=unit, info="", count="")
        self._refresh_count(task)
        self._line(task, force=True)
        return task

    def update(self, task: TaskID, *, completed: float | None = None, total: int | None = None,
               info: str | None = None) -> None:
        fields = {"info": info} if info is not None else {}
        self.progress.update(task, completed=completed, total=total, **fields)
        self._refresh_count(task)
        self._line(task)

    def finish(self, task: TaskID, info: str | None = None) -> None:
        """Mark the task done (its elapsed time freezes) and print its final line."""
        counted = self._task(task).total is not None
        total = self._task(task).total if counted else 1  # a spinner's bar fills, without a count
        self.progress.update(task, total=total, completed=total, **({"info": info} if info is not None else {}))
        self.progress.stop_task(task)
        if counted:
            self._refresh_count(task)
        self._line(task, force=True, done=True)

    @contextlib.contextmanager
    def step(self, description: str) -> Iterator[TaskID]:
        """A spinner for one phase without a count (loading a model, building an index)."""
        task = self.task(description)
        yield task
        self.finish(task)

    def phase(self, description: str) -> None:
        """A spinner that lasts until the next task starts, for work whose end happens in code
        that does not report (sft: model loading and TRL's tokenizing, up to the first step)."""
        self._phase = self.task(description)

    def _end_phase(self) -> None:
        phase, self._phase = self._phase, None
        if phase is not None:
            self.finish(phase)

    def note(self, message: str) -> None:
        """A line above the live display (or a plain line)."""
        if self.enabled:
            self.console.print(message)

    def _task(self, task: TaskID) -> Any:
        return next(t for t in self.progress.tasks if t.id == task)

    def _refresh_count(self, task: TaskID) -> None:
        item = self._task(task)
        if item.total is None:
            return
        unit = item.fields["unit"]
        count = f"{item.completed:.0f}/{item.total:.0f}" + (f" {unit}" if unit else "")
        self.progress.update(task, count=count)

    def _line(self, task: TaskID, force: bool = False, done: bool = False) -> None:
        """A plain line for logs: at a task's start and end, else at most every LINE_EVERY s."""
        if self.live or not self.enabled:
            return
        now, item = time.monotonic(), self._task(task)
        if not force and (item.finished or now - self._printed.get(task, now) < LINE_EVERY):
            return  # a finished task's line comes from `finish`
        self._printed[task] = now
        parts = [f"{self.stage}: {item.description}", item.fields["count"]]
        if done or not force:
            parts.append(f"{'done in ' if done else ''}{item.elapsed or 0:.1f}s")
        parts.append(item.fields["info"])
        self.console.print("  ".join(p for p in parts if p))


def current() -> StageDisplay:
    """The display of the stage running now; a silent one outside the runner (unit tests)."""
    return _state["display"] or StageDisplay("", enabled=False)


@contextlib.contextmanager
def stage_display(stage: str) -> Iterator[StageDisplay]:
    """The runner opens one around each stage run; only the main process shows it."""
    from talentrl_cli.distributed import is_main_process

    previous = _state["display"]
    with StageDisplay(stage, enabled=is_main_process()) as display:
        _state["display"] = display
        try:
            yield display
        finally:
            _state["display"] = previous


def trainer_callback() -> Any:
    """A transformers TrainerCallback: a bar over optimizer steps with the latest loss and
    tokens/s. It replaces the Trainer's PrinterCallback, which prints every log dict (TRL's
    `{'loss': ...}` lines): `sft_train` removes that one unless `-v`."""
    from transformers import TrainerCallback

    class StepProgress(TrainerCallback):
        def __init__(self) -> None:
            self.task: TaskID | None = None
            self.loss: float | None = None
            self.started, self.tokens0 = 0.0, 0

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.started, self.tokens0 = time.perf_counter(), int(state.num_input_tokens_seen or 0)
            self.task = current().task("train", total=int(state.max_steps), unit="steps")
            current().update(self.task, completed=state.global_step)

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
            if logs and "loss" in logs:
                self.loss = float(logs["loss"])
                if self.task is not None:
                    current().update(self.task, info=self._info(state))

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self.task is not None:
                current().update(self.task, completed=state.global_step, info=self._info(state))

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self.task is not None:
                current().finish(self.task, info=self._info(state))

        def _info(self, state: Any) -> str:
            seconds = time.perf_counter() - self.started
            tokens = int(state.num_input_tokens_seen or 0) - self.tokens0
            loss = f"loss {self.loss:.4f}" if self.loss is not None else ""
            rate = f"{tokens / seconds:,.0f} tok/s" if seconds > 0 and tokens > 0 else ""
            return "  ".join(p for p in (loss, rate) if p)

    return StepProgress()
