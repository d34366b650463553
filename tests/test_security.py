"""No pickle anywhere in the package: what a user's file or a shared artifact holds is data,
never code that loading it would run (issue #18, item 4)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "talentrl_cli"
SOURCES = sorted(PACKAGE.rglob("*.py"))


def _calls(pattern: str) -> list[tuple[str, str]]:
    """(file:line, the call's text up to its closing parenthesis) for each match."""
    found = []
    for path in SOURCES:
        text = path.read_text()
        for match in re.finditer(pattern, text):
            depth, end = 0, match.end()
            for end in range(match.end() - 1, len(text)):
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                if depth == 0:
                    break
            line = text.count("\n", 0, match.start()) + 1
            found.append((f"{path.relative_to(PACKAGE)}:{line}", text[match.start():end + 1]))
    return found


def test_the_package_is_scanned():
    assert len(SOURCES) > 40


@pytest.mark.parametrize("module", ["pickle", "joblib", "dill", "cloudpickle", "shelve", "marshal"])
def test_no_pickle_module_is_imported(module):
    uses = [f"{p.relative_to(PACKAGE)}" for p in SOURCES
            if re.search(rf"^\s*(import|from)\s+{module}\b", p.read_text(), flags=re.M)]
    assert not uses


def test_every_np_load_refuses_pickles():
    calls = _calls(r"\bnp\.load\(")
    assert calls and all("allow_pickle=False" in call for _, call in calls), calls


def test_every_torch_load_is_weights_only():
    calls = _calls(r"\btorch\.load\(")
    assert all("weights_only=True" in call for _, call in calls), calls


def test_remote_code_runs_only_when_the_config_asks():
    values = [m.group(1) for p in SOURCES for m in re.finditer(r"trust_remote_code=(\w+)", p.read_text())]
    assert values and set(values) == {"trust"}, values
    models = (PACKAGE / "models.py").read_text()
    assert 'trust = bool(model_cfg.get("trust_remote_code", False))' in models
