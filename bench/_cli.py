"""`talentrl` run in-process for the benchmarks: returns the published ref (the last stdout line)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path


def cli(root: Path, *args: str) -> str:
    from talentrl_cli.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            main(["--artifacts-root", str(root), *args])
        except SystemExit as exit_:
            if exit_.code:
                raise
    return out.getvalue().split()[-1]
