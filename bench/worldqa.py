"""WorldQA suite figures: generation time, expert success per strategy, strategy predictability.

Prints:
1. the time to generate the world, its corpus and `--n-tasks` questions (fresh, not cached),
   and the time to build the search index;
2. the scripted expert's success rate per strategy type at noise 0 and at the configured
   noise (default 0.2), on a stratified sample of train tasks, run through the real tools;
3. strategy predictability: accuracy of a bag-of-words logistic regression (TF-IDF word
   1-2 grams) that predicts the gold strategy from the question text, trained on the train
   questions and scored on the test questions (information, not a target: a high value
   says the wording gives the strategy away, as it often does in HotpotQA).

    HF_HUB_OFFLINE=1 python bench/worldqa.py [--seed 0] [--n-tasks 2000] [--per-strategy 40]
        [--retriever dense|lexical] [--cache DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from collections import defaultdict

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from talentrl_cli.envs.worldqa.corpus import build_corpus  # noqa: E402
from talentrl_cli.envs.worldqa.env import WorldQAEnv  # noqa: E402
from talentrl_cli.envs.worldqa.families import STRATEGIES  # noqa: E402
from talentrl_cli.envs.worldqa.questions import generate_tasks  # noqa: E402
from talentrl_cli.envs.worldqa.world import build_world  # noqa: E402


def time_generation(seed: int, n_entities: int, n_tasks: int) -> tuple[float, float]:
    """(seconds for world + corpus, seconds for the questions), uncached."""
    start = time.perf_counter()
    world = build_world(seed, n_entities)
    build_corpus(world, seed)
    mid = time.perf_counter()
    generate_tasks(world, seed, n_tasks, {"train": 0.8, "dev": 0.1, "test": 0.1})
    return mid - start, time.perf_counter() - mid


def stratified(tasks: list, per: int, seed: int) -> list:
    by: dict[str, list] = defaultdict(list)
    for task in tasks:
        by[task.strategy].append(task)
    rng = random.Random(seed)
    return [t for s in STRATEGIES for t in rng.sample(by[s], min(per, len(by[s])))]


def expert_table(env: WorldQAEnv, tasks: list, noise: float) -> dict[str, dict[str, float]]:
    """Per strategy: n, success at noise 0 and at `noise`, mean steps at noise 0."""
    rows: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for task in tasks:
        clean = env.expert_trajectory(task, noise=0.0)
        noisy = env.expert_trajectory(task, noise=noise)
        row = rows[task.strategy]
        row["clean"].append(clean.success)
        row["noisy"].append(noisy.success)
        row["steps"].append(len(clean.steps))
        row["lookup"].append(any(s.action.startswith("lookup") for s in clean.steps))
    return {s: {k: sum(v) / len(v) for k, v in row.items()} | {"n": len(row["clean"])}
            for s, row in rows.items()}


def predictability(env: WorldQAEnv) -> tuple[float, float, int, int]:
    """(accuracy, majority-class accuracy, n train, n test) of TF-IDF + logistic regression."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    train, test = env.tasks("train"), env.tasks("test")
    model = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), min_df=1),
                          LogisticRegression(max_iter=2000))
    model.fit([t.question for t in train], [t.strategy for t in train])
    predicted = model.predict([t.question for t in test])
    acc = sum(p == t.strategy for p, t in zip(predicted, test, strict=True)) / len(test)
    counts: dict[str, int] = defaultdict(int)
    for t in train:
        counts[t.strategy] += 1
    majority = max(counts, key=counts.get)
    base = sum(t.strategy == majority for t in test) / len(test)
    return acc, base, len(train), len(test)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-entities", type=int, default=400)
    parser.add_argument("--n-tasks", type=int, default=2000)
    parser.add_argument("--per-strategy", type=int, default=40)
    parser.add_argument("--noise", type=float, default=None, help="default: the config's")
    parser.add_argument("--retriever", default="dense", choices=["dense", "lexical"])
    parser.add_argument("--cache", default=None,
                        help="embedding cache dir (default: a fresh temp dir, i.e. a cold build)")
    args = parser.parse_args()

    world_s, tasks_s = time_generation(args.seed, args.n_entities, args.n_tasks)
    cache = args.cache or tempfile.mkdtemp(prefix="talentrl-bench-")
    cfg = {"n_entities": args.n_entities, "n_tasks": args.n_tasks, "retriever": args.retriever,
           "embedder": {"cache_dir": cache}}
    env = WorldQAEnv(cfg, seed=args.seed)
    noise = env.settings.noise if args.noise is None else args.noise
    start = time.perf_counter()
    _ = env.tool
    index_s = time.perf_counter() - start
    world = env.world
    print(f"world: {len(world.entities)} entities, {len(world.types())} types, "
          f"{len(world.relations())} relations, {len(world.attributes())} attributes; "
          f"corpus: {len(env.corpus)} passages")
    print(f"generate {args.n_tasks} tasks: {world_s + tasks_s:.2f}s "
          f"(world + corpus {world_s:.2f}s, questions {tasks_s:.2f}s)")
    print(f"search index ({args.retriever}): {index_s:.1f}s")

    sample = stratified(env.tasks("train"), args.per_strategy, args.seed)
    start = time.perf_counter()
    table = expert_table(env, sample, noise)
    per_traj = (time.perf_counter() - start) / (2 * len(sample))
    print(f"\nexpert on {len(sample)} train tasks ({per_traj * 1000:.0f} ms per trajectory)")
    print(f"{'strategy':<14}{'n':>5}{'noise 0':>10}{f'noise {noise:g}':>12}{'steps':>8}{'lookup':>8}")
    for strategy in STRATEGIES:
        row = table.get(strategy)
        if row:
            print(f"{strategy:<14}{row['n']:>5}{row['clean']:>10.3f}{row['noisy']:>12.3f}"
                  f"{row['steps']:>8.2f}{row['lookup']:>8.2f}")
    n = sum(r["n"] for r in table.values())
    clean = sum(r["clean"] * r["n"] for r in table.values()) / n
    noisy = sum(r["noisy"] * r["n"] for r in table.values()) / n
    print(f"{'all':<14}{n:>5}{clean:>10.3f}{noisy:>12.3f}")

    acc, base, n_train, n_test = predictability(env)
    print(f"\nstrategy predictability (TF-IDF 1-2 grams + logistic regression, "
          f"{n_train} train -> {n_test} test questions): accuracy {acc:.3f} "
          f"(majority class {base:.3f})")


if __name__ == "__main__":
    main()
