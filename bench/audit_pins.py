"""Known vulnerabilities of the pinned dependencies, where pip-audit cannot run.

    python bench/audit_pins.py            # every pin in pyproject.toml (dependencies and extras)

Run `pip-audit` where it can reach its services: it is the real check, transitive
dependencies included. This script exists because on the project's build machines it
cannot: pip-audit's PyPI service asks `/pypi/NAME/VERSION/json`, which their registry
answers 404, and its OSV service (api.osv.dev) does not resolve. The registry does answer
`/pypi/NAME/json`, whose `vulnerabilities` field lists the advisories that affect the
project's *latest* release. So a pin equal to the latest release is checked (its
advisories, or none); an older pin is reported as not checked, never as clean.
"""

from __future__ import annotations

import json
import re
import tomllib
import urllib.request
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def pins() -> list[tuple[str, str]]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    specs = list(project["dependencies"]) + [s for group in project.get("optional-dependencies", {}).values()
                                             for s in group]
    found = [re.match(r"([A-Za-z0-9_.\-]+)(?:\[.*\])?==([^;\s]+)", s) for s in specs]
    return sorted({(m[1], m[2]) for m in found if m})


def advisories(name: str) -> tuple[str, list[str]]:
    with urllib.request.urlopen(f"https://pypi.org/pypi/{name}/json", timeout=30) as answer:
        data = json.load(answer)
    return data["info"]["version"], [v["id"] for v in data.get("vulnerabilities") or []]


def main() -> None:
    print("| package | pin | latest | known advisories |\n|---|---|---|---|")
    checked = clean = 0
    pinned = pins()
    for name, version in pinned:
        try:
            latest, ids = advisories(name)
        except (OSError, ValueError) as err:  # no answer, or not JSON
            print(f"| {name} | {version} | - | not checked ({err}) |")
            continue
        if latest != version:
            print(f"| {name} | {version} | {latest} | not checked (older than the latest release) |")
            continue
        checked += 1
        clean += not ids
        print(f"| {name} | {version} | {latest} | {', '.join(ids) if ids else 'none'} |")
    print(f"\n{checked} of {len(pinned)} pins checked, {clean} with no known advisory")


if __name__ == "__main__":
    main()
