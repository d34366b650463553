"""Fault injection: SIGKILL every stage at random moments, then check what a user relies on.

    python bench/faults.py                       # 10 kills per stage (mine, index, sft, rl, eval, pipeline)
    python bench/faults.py --kills 3 --stages sft rl

Every stage runs on the tiny model and a small WorldQA world, as a subprocess in its own
process group, in a fresh copy of a root that already holds its inputs. It is killed
(SIGKILL, the whole group) after a uniform random delay in (0.3 s, 0.95 x its clean run
time). After each kill:

- `talentrl artifacts verify --all` passes (no published artifact is damaged);
- every stage's `latest` resolves to a complete version;
- no temporary folder is left visible (staging folders are dot-named and removed on the
  next publish; a non-dot entry other than vN, latest and .lock is a leak);
- the same command rerun (`sft.resume=true` / `rl.resume=true` for the training stages,
  which then continue from the last complete checkpoint) completes and verifies.

Prints the table stage x kills x verified x resumed. The full-disk case (publish under
`ulimit -f`) is one more row per stage: the run must fail with one message and publish
nothing.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SMALL = ["model=tiny", "env.retriever=lexical", "env.n_entities=60", "env.n_tasks=200", "source.n=60",
         "index.k=2", "sft.max_examples=8", "sft.batch_size=1", "sft.grad_accum=1", "sft.save_steps=2",
         "eval.limit=4", "eval.max_steps=2", "eval.max_new_tokens=6", "eval.n_bootstrap=100", "rl.steps=4",
         "rl.tasks_per_step=1", "rl.max_steps=2", "rl.max_new_tokens=6", "rl.save_steps=1"]
# --force: the base root already holds each stage's output, which a plain rerun would reuse
COMMANDS = {
    "mine": ["mine", "--force"], "index": ["index", "--force"], "sft": ["sft", "--force"],
    "rl": ["rl", "--force", "inputs.model=sft:latest"],
    "eval": ["eval", "--force", "inputs.model=sft:latest", "eval.modes=[talent]"],
    "pipeline": ["pipeline", "demo", "--force"],
}
RESUME = {"sft": ["sft.resume=true"], "rl": ["rl.resume=true"]}
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "TOKENIZERS_PARALLELISM": "false"}


def talentrl(root: Path, args: list[str], limit_blocks: int | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "talentrl_cli", "--artifacts-root", str(root), *args]
    if limit_blocks is not None:  # a full disk, as the kernel reports it to a writer: EFBIG
        command = ["bash", "-c", f"ulimit -f {limit_blocks}; exec " + " ".join(map(_quote, command))]
    return subprocess.run(command, env=ENV, capture_output=True, text=True)


def _quote(part: str) -> str:
    return "'" + part.replace("'", "'\\''") + "'"


def stage_args(stage: str) -> list[str]:
    return [*COMMANDS[stage], *([] if stage == "pipeline" else SMALL)] + (SMALL if stage == "pipeline" else [])


def checks(root: Path) -> tuple[bool, str]:
    verify = talentrl(root, ["artifacts", "verify", "--all"])
    if verify.returncode != 0:
        return False, "verify: " + verify.stdout[-300:]
    for stage_dir in (p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if (stage_dir / "latest").exists():
            shown = talentrl(root, ["artifacts", "show", f"{stage_dir.name}:latest"])
            if shown.returncode != 0:
                return False, f"{stage_dir.name}:latest: {shown.stderr[-200:]}"
        leaks = [p.name for p in stage_dir.iterdir()
                 if not p.name.startswith(".") and p.name != "latest" and not p.name[1:].isdigit()]
        if leaks:
            return False, f"visible leftovers in {stage_dir}: {leaks}"
    return True, ""


def kill_once(base: Path, stage: str, clean_s: float, rng: random.Random) -> tuple[bool, bool, str]:
    root = Path(tempfile.mkdtemp(prefix=f"faults-{stage}-"))
    shutil.rmtree(root)
    shutil.copytree(base, root, symlinks=True)
    command = [sys.executable, "-m", "talentrl_cli", "--artifacts-root", str(root), *stage_args(stage)]
    process = subprocess.Popen(command, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    time.sleep(rng.uniform(0.3, max(0.4, 0.95 * clean_s)))
    with_signal = process.poll() is None
    if with_signal:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    verified, why = checks(root)
    rerun = talentrl(root, stage_args(stage) + RESUME.get(stage, []))
    resumed = rerun.returncode == 0 and checks(root)[0]
    shutil.rmtree(root, ignore_errors=True)
    return verified, resumed, why or (rerun.stderr[-300:] if not resumed else "")


def full_disk(base: Path, stage: str) -> bool:
    """Publishing under a 64 KiB file-size limit must fail cleanly and leave the root as it was."""
    root = Path(tempfile.mkdtemp(prefix=f"faults-disk-{stage}-"))
    shutil.rmtree(root)
    shutil.copytree(base, root, symlinks=True)
    def published() -> list[str]:  # the files a reader can see: no checkpoints, staging or lock files
        return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.name != ".lock"
                      and ".checkpoints" not in p.parts and not any(x.startswith(".tmp-") for x in p.parts))

    before = published()
    run = talentrl(root, stage_args(stage), limit_blocks=64)
    after = published()
    clean = "Traceback" not in run.stderr and run.stderr.count("error:") <= 1
    shutil.rmtree(root, ignore_errors=True)
    if run.returncode == 0:  # everything fit under the limit: nothing to fail
        return True
    return clean and before == after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--stages", nargs="+", default=list(COMMANDS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="faults-base-"))
    for stage in ("mine", "index", "sft"):
        assert talentrl(base, [a for a in stage_args(stage) if a != "--force"]).returncode == 0, stage
    rows = []
    for stage in args.stages:
        started = time.perf_counter()
        assert talentrl(Path(shutil.copytree(base, base.with_name(base.name + "-clean"))), stage_args(stage)).returncode == 0
        shutil.rmtree(base.with_name(base.name + "-clean"))
        clean_s = time.perf_counter() - started
        results = [kill_once(base, stage, clean_s, rng) for _ in range(args.kills)]
        failures = [why for v, r, why in results if not (v and r)]
        rows.append((stage, args.kills, sum(v for v, _, _ in results), sum(r for _, r, _ in results),
                     full_disk(base, stage), clean_s))
        for why in failures[:2]:
            print(f"  {stage}: {why.strip()[:300]}", file=sys.stderr)
        print(f"{stage}: {rows[-1][1:5]}", file=sys.stderr, flush=True)  # a long run shows each row as it ends
    print("\n| stage | kills | verified | resumed | full disk clean | clean run s |\n|---|---:|---:|---:|---|---:|")
    for stage, kills, verified, resumed, disk, seconds in rows:
        print(f"| {stage} | {kills} | {verified} | {resumed} | {'yes' if disk else 'NO'} | {seconds:.1f} |")
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
