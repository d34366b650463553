"""`talentrl --help` wall time: the median of 5 runs (target: 1.0 s or less).

    python bench/cli_startup.py
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def time_command(argv: list[str], runs: int = 5) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    beside = Path(sys.executable).with_name("talentrl")
    talentrl = str(beside) if beside.exists() else shutil.which("talentrl") or "talentrl"
    rows = [("talentrl --help", [talentrl, "--help"]),
            ("talentrl artifacts --help", [talentrl, "artifacts", "--help"]),
            ("python -m talentrl_cli --help", [sys.executable, "-m", "talentrl_cli", "--help"])]
    print(f"{'command':<32} {'median s':>9} {'min s':>7} {'max s':>7}")
    for name, argv in rows:
        times = time_command(argv)
        print(f"{name:<32} {statistics.median(times):>9.3f} {min(times):>7.3f} {max(times):>7.3f}")


if __name__ == "__main__":
    main()
