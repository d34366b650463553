"""Where `conf/` and `stages/` are: the source checkout, or the copy inside the wheel.

In a checkout (or an editable install) they are the top-level folders of the repository;
in a wheel, hatch's force-include puts them under `talentrl_cli/_resources/`.
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _find(name: str, marker: str) -> Path:
    for candidate in (_PACKAGE / "_resources" / name, _PACKAGE.parents[1] / name):
        if (candidate / marker).exists():
            return candidate
    raise FileNotFoundError(f"talentrl's {name}/ folder is missing from the installation")


def conf_dir() -> Path:
    return _find("conf", "config.yaml")


def stages_dir() -> Path:
    return _find("stages", "demo.yaml")


def shared_data_dir() -> Path:
    """The benchmark data the envs read (never copied into the project): `$TALENTRL_DATA`, else
    `../shared/data` beside the repository checkout."""
    root = os.environ.get("TALENTRL_DATA")
    return Path(root) if root else _PACKAGE.parents[2] / "shared" / "data"
