"""The stage display (rich on a terminal, rate-limited plain lines otherwise) and the muting
of library noise."""

from __future__ import annotations

import io
import os
import warnings

from rich.console import Console

from talentrl_cli import progress


def _plain_display(stage="eval"):
    out = io.StringIO()
    return progress.StageDisplay(stage, Console(file=out, width=200)), out


def test_plain_lines_are_rate_limited_not_one_per_update():
    display, out = _plain_display()
    with display:
        task = display.task("talent", total=1000, unit="episodes")
        for i in range(1000):
            display.update(task, completed=i, info=f"turn {i}")
        display.finish(task)
    lines = out.getvalue().splitlines()
    assert lines[0] == "eval: talent  0/1000 episodes"
    assert lines[-1].startswith("eval: talent  1000/1000 episodes  done in ")
    assert len(lines) <= 3


def test_plain_lines_print_again_after_the_interval(monkeypatch):
    display, out = _plain_display("sft")
    clock = iter(range(0, 1000, 4))
    monkeypatch.setattr(progress.time, "monotonic", lambda: float(next(clock)))
    with display:
        task = display.task("train", total=8, unit="steps")
        for step in range(1, 8):
            display.update(task, completed=step, info="loss 1.0")
    lines = out.getvalue().splitlines()
    assert 2 <= len(lines) <= 4 and "loss 1.0" in lines[-1]


def test_steps_phases_and_a_silent_display_outside_the_runner():
    display, out = _plain_display("index")
    with display:
        with display.step("embedding 3 skills"):
            pass
        display.phase("loading the model")
        display.task("train", total=2, unit="steps")  # ends the phase
    text = out.getvalue()
    assert "index: embedding 3 skills  done in" in text and "index: loading the model  done in" in text
    assert not progress.current().enabled  # no runner: stages run silently (unit tests)


def test_a_live_display_on_a_terminal_prints_no_plain_lines():
    out = io.StringIO()
    display = progress.StageDisplay("eval", Console(file=out, force_terminal=True, width=100))
    assert display.live
    with display:
        task = display.task("zero_shot", total=3, unit="episodes")
        display.update(task, completed=2)
        display.finish(task)
    assert "eval: zero_shot" not in out.getvalue() and "3/3 episodes" in out.getvalue()


def test_quiet_libraries_mutes_library_warnings_not_ours(monkeypatch):
    monkeypatch.setattr(os, "environ", dict(os.environ))
    for name in progress.QUIET_ENV:
        os.environ.pop(name, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        progress.quiet_libraries(verbose=False)
        for module in ("transformers.modeling_utils", "trl.trainer", "talentrl_cli.stages.eval"):
            warnings.warn_explicit("old API", FutureWarning, "x.py", 1, module=module)
    assert [str(w.message) for w in caught] == ["old API"]  # only talentrl's own
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1" and os.environ["TRANSFORMERS_VERBOSITY"] == "error"


def test_verbose_keeps_library_noise(monkeypatch):
    monkeypatch.setattr(os, "environ", dict(os.environ))
    os.environ.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        progress.quiet_libraries(verbose=True)
        warnings.warn_explicit("old API", FutureWarning, "x.py", 1, module="transformers.modeling_utils")
    assert len(caught) == 1 and "HF_HUB_DISABLE_PROGRESS_BARS" not in os.environ
    progress.quiet_libraries(verbose=False)  # leave the process as the CLI leaves it
