"""README's quick start: exactly two commands, and CI runs the second one verbatim."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def quick_start_commands() -> list[str]:
    section = ROOT.joinpath("README.md").read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_the_quick_start_has_two_commands_and_ci_runs_the_test_one():
    demo, tests = quick_start_commands()
    assert demo.endswith("nox -s demo") and tests.endswith("nox -s tests")
    ci = [line for line in ROOT.joinpath(".ci", "run").read_text().splitlines() if not line.startswith("#")]
    assert tests in ci
