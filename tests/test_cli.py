"""CLI smoke tests: --help for every command, --version, python -m, exit codes."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer

from talentrl_cli import __version__
from talentrl_cli.cli import build_app


def _command_paths(command, prefix=()):
    yield prefix
    for name, sub in getattr(command, "commands", {}).items():
        yield from _command_paths(sub, (*prefix, name))


def _all_commands():
    return list(_command_paths(typer.main.get_command(build_app())))


def test_the_contract_commands_exist():
    paths = {" ".join(p) for p in _all_commands()}
    for expected in ("pipeline", "artifacts list", "artifacts show", "artifacts verify",
                     "artifacts lineage", "config show", "envs list", "envs sample"):
        assert expected in paths


@pytest.mark.parametrize("path", _all_commands(), ids=lambda p: " ".join(p) or "talentrl")
def test_help_for_every_command_has_an_example(run_cli, path):
    code, out, _ = run_cli(*path, "--help")
    assert code == 0 and "Usage" in out
    leaf = not path or path[0] not in ("artifacts", "config", "envs") or len(path) == 2
    if leaf:
        assert "Example" in out


def test_stage_commands_get_force_dry_run_and_overrides(run_cli, test_stages):
    code, out, _ = run_cli("alpha", "--help")
    assert code == 0 and "--force" in out and "--dry-run" in out and "overrides" in out


def test_version(run_cli):
    code, out, _ = run_cli("--version")
    assert code == 0 and out.strip() == f"talentrl {__version__}"


def test_python_dash_m_is_the_same_cli():
    out = subprocess.run([sys.executable, "-m", "talentrl_cli", "--version"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == f"talentrl {__version__}"


def test_usage_error_exits_2(run_cli):
    code, _, _ = run_cli("artifacts", "verify")
    assert code == 2
    code, _, _ = run_cli("no-such-command")
    assert code == 2


def test_help_does_not_import_heavy_libraries():
    probe = ("import sys; from talentrl_cli.cli import build_app; build_app(); "
             "print(','.join(m for m in ('torch', 'transformers', 'trl', 'hydra', 'wandb') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == ""


def test_rl_on_an_empty_root_names_sft_as_the_stage_to_run_first(run_cli):
    code, _, err = run_cli("rl")
    assert code != 0 and "no sft artifact" in err and "talentrl sft" in err and "Traceback" not in err
