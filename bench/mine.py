"""Mining time versus corpus size, and the cost of a rerun with 10 % new trajectories.

    python bench/mine.py                 # 1k, 2k, 4k, 8k, 16k WorldQA expert trajectories
    python bench/mine.py --sizes 1000 2000 --rerun-size 1000

Trajectories are generated once (WorldQA expert, noise 0.1, one task per trajectory with
`env.n_tasks` raised so that questions are distinct) and written as talentrl JSONL; each
size is then mined through the `mine` stage with a cold embedding cache. The rerun adds
10 % new trajectories to the largest `--rerun-size` file and mines again with the cache the
first run left (the embedding cache is keyed by text hash), reporting rerun / first.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path


def generate(n: int, out: Path) -> None:
    from talentrl_cli.config import compose
    from talentrl_cli.envs.worldqa.env import generate_trajectories
    from talentrl_cli.jsonl import write_jsonl

    # enough entities and tasks that the train split (80 %) has n distinct questions; the
    # model-free retriever only speeds up the expert's searches, the trajectories keep their form
    n_tasks = int(n / 0.8 * 1.1) + 100
    cfg = compose([f"env.n_tasks={n_tasks}", f"env.n_entities={max(400, n // 6)}", "env.retriever=lexical"])
    trajectories = generate_trajectories(cfg.env, split="train", n=n, noise=0.1, seed=0)
    print(f"distinct questions: {len({t.task.question for t in trajectories})} of {n}")
    write_jsonl(out, trajectories)


def mine_seconds(path: Path, cache: Path, root: Path) -> float:
    """Wall time of the mine stage in this process (imports and the embedding model are
    loaded beforehand by `warm_up`, so the figure is the mining itself)."""
    from talentrl_cli.artifacts import ArtifactStore
    from talentrl_cli.runner import execute_stage

    os.environ["TALENTRL_CACHE"] = str(cache)
    start = time.perf_counter()
    execute_stage("mine", ["source=native", f"source.path={path}"], ArtifactStore(root), force=True)
    return time.perf_counter() - start


def warm_up() -> None:
    from talentrl_cli.config import compose
    from talentrl_cli.embedding import Embedder
    from talentrl_cli.stages import load_builtin_stages

    load_builtin_stages()
    Embedder.from_config(compose([]).embedder, cache_dir=None).encode(["warm up"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000, 8000, 16000])
    parser.add_argument("--rerun-size", type=int, default=4000)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = Path(tempfile.mkdtemp(prefix="talentrl-bench-mine-"))
    warm_up()
    biggest = max([*args.sizes, int(args.rerun_size * 1.1)])
    all_path = work / "all.jsonl"
    started = time.perf_counter()
    generate(biggest, all_path)
    print(f"generated {biggest} trajectories in {time.perf_counter() - started:.1f} s")
    lines = all_path.read_text().splitlines(keepends=True)
    print(f"{'trajectories':>12} {'mine s (cold cache)':>20} {'per 1k s':>9}")
    for size in args.sizes:
        path = work / f"n{size}.jsonl"
        path.write_text("".join(lines[:size]))
        seconds = mine_seconds(path, work / f"cache-{size}", work / "artifacts")
        print(f"{size:>12} {seconds:>20.1f} {seconds / size * 1000:>9.2f}")
    rerun(lines, args.rerun_size, work)
    shutil.rmtree(work, ignore_errors=True)


def rerun(lines: list[str], size: int, work: Path) -> None:
    first, second = work / "first.jsonl", work / "second.jsonl"
    first.write_text("".join(lines[:size]))
    second.write_text("".join(lines[: int(size * 1.1)]))
    cache = work / "cache-rerun"
    cold = mine_seconds(first, cache, work / "artifacts")
    warm = mine_seconds(second, cache, work / "artifacts")
    print(f"rerun with 10 % new trajectories ({size} -> {int(size * 1.1)}): first {cold:.1f} s, "
          f"rerun {warm:.1f} s, ratio {warm / cold:.2f} (target <= 0.25)")


if __name__ == "__main__":
    main()
