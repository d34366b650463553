"""HNSW (`VectorIndex.query`) against exact numpy search, and the cost of the talent prior.

    HF_HUB_OFFLINE=1 /work/venv/bin/python bench/retrieval.py            # default run (random 10k+100k, MiniLM 10k)
    HF_HUB_OFFLINE=1 /work/venv/bin/python bench/retrieval.py --quick    # smoke run, 2k items
    python bench/retrieval.py --no-minilm --sizes 100000 --Ms 32         # the 100k targets only (731 s under load 2-3)
    python bench/retrieval.py --minilm-sizes 10000 100000                # + 100k real embeddings (docs/MEASUREMENTS.md's run)
    python bench/retrieval.py --no-minilm --sizes 100000 --Ms 32 --efs 128 512 1024   # how far recall climbs with ef

Collections (384-d, cosine): 10k and 100k random unit vectors (seeded), and MiniLM
(all-MiniLM-L6-v2, the packaged model, through `Embedder` and its disk cache) embeddings of
10k generated skill texts rendered with the index stage's default skill template
(`--minilm-sizes 10000 100000` adds 100k: real embeddings at the size the targets are set
for). The texts come from templates (verb x entity x tool x context x steps), so they are
varied but related, like mined skills; embedding runs at about 35 texts/s on the 2 cores
(10k: 5 min, the other 90k: 47 min), once: later runs read the cache.

Queries: for random collections, `near` = a stored item plus gaussian noise of norm
`--noise` (0.5: cosine ~0.89 to its item), renormalised -- a task resembles some skills --
and `uniform` = random unit vectors. For MiniLM, new generated task texts embedded the same
way. recall@10 = |HNSW top-10 & exact top-10| / 10, averaged; `src@10` = share of near
queries whose source item is in HNSW's top 10.

Per collection and M (16, 32; ef_construction 200) the index is built once and ef is swept
through `index.params["ef"]`, which `VectorIndex.query` applies on every call. QPS is single
threaded: `index.threads = 1` for queries and BLAS limited to one thread (threadpoolctl) for
the exact path, at batch 1 and batch 256, median of `--reps` timed passes after a warm-up;
exact search is timed again for every M, just before that M's ef sweep, so each speedup
compares runs made minutes apart at most on this shared machine.
Builds use `--build-threads` (default 2; the project default is 1, for a deterministic graph).

Run time (2-core machine, quiet): 19 min 29 s (1169 s) with `--minilm-sizes 10000 100000`
once the embeddings are cached (the talent prior timed on both 100k collections); 20 min 31 s
(1231 s) for random-100k alone with ef up to 1024. Most of it is the 100k builds at ef_construction=200 with 2 threads (random: M=16
132-137 s, M=32 258-262 s; MiniLM: 58 s and 79 s). ef_construction stays at the index stage's
configured 200 so the figures describe the real index; `--ef-construction 100` cuts the
builds by a third to a half (measured at 20k, M=32).

Talent prior, on the largest random and the largest MiniLM collection (`_talent_prior.py`):
a `SkillBank` (built with `SkillBank.build`; its index is that collection's row of the sweep)
with 8 talents of 300 nonzero weights each, uniform in (0, 1] and unrelated to the
embeddings, so the prior must lift skills from anywhere in the bank. Per (M, ef): ms per
query of plain HNSW (`bank.index.query(k * oversample)`), flat `bank.retrieve` (no talent)
and `bank.retrieve` with one talent per query (k=5, lam=0.3), timed on the same queries in
rotating order; the share of 500 (query, talent) pairs where `retrieve` returns exactly
`bank.exact_topk`; how many queries were ranked over every skill (`brute`); and `read`:
one product over the talent's 300 embedding rows right after a plain search, which is what
reading the rows the formula may need costs with the caches a search leaves.

Targets (checked on every 100k collection, near / task queries): recall@10 >= 0.98 at >= 20x
the exact QPS (batch 1); and talent-prior re-scoring <= 10% over plain HNSW at batch 1 and
256, at the index stage's default M=32 ef=128 and at the search target's fastest (M, ef).
Misses are printed as MISSED.

Why batch 1 costs more than batch 256: an HNSW search at 100k reads megabytes of graph and
vectors, so the re-scoring that follows it (a few hundred talent rows, a dozen array
operations) starts with cold caches; `read_cold` shows the rows alone, where the same work
inside a batch of 256 costs a few microseconds per query.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
from _skill_texts import skill_texts, task_texts  # noqa: E402  (modules next to this script)
from _talent_prior import (  # noqa: E402
    PriorRow,
    bench_prior,
    make_bank_inputs,
    print_prior_table,
    print_prior_target,
    prior_reference,
)

from talentrl_cli.retrieval import VectorIndex, normalize_rows  # noqa: E402
from talentrl_cli.skillbank import SkillBank  # noqa: E402

DIM = 384
K = 10  # recall@K
BATCH = 256
EF_CONSTRUCTION = 200
RECALL_TARGET, SPEEDUP_TARGET = 0.98, 20.0

# -- collections ----------------------------------------------------------------------------


@dataclass
class Collection:
    name: str
    vectors: np.ndarray
    near: np.ndarray  # the main queries
    source: np.ndarray | None  # the item each near query was made from (random collections)
    uniform: np.ndarray | None
    bank: bool = False  # build it through SkillBank.build and measure the talent prior


def random_collection(name: str, n: int, n_queries: int, noise: float, seed: int,
                      bank: bool = False) -> Collection:
    rng = np.random.default_rng(seed)
    vectors = normalize_rows(rng.standard_normal((n, DIM), dtype=np.float32))
    source = rng.integers(0, n, n_queries)
    near = near_queries(rng, vectors, source, noise)
    uniform = normalize_rows(rng.standard_normal((n_queries, DIM), dtype=np.float32))
    return Collection(name, vectors, near, source, uniform, bank)


def near_queries(rng: np.random.Generator, vectors: np.ndarray, source: np.ndarray,
                 noise: float) -> np.ndarray:
    """Each source item plus isotropic gaussian noise of expected norm `noise`, renormalised."""
    jitter = rng.standard_normal((len(source), vectors.shape[1]), dtype=np.float32)
    return normalize_rows(vectors[source] + noise / np.sqrt(vectors.shape[1]) * jitter)


def minilm_collection(n: int, n_queries: int, bank: bool = False) -> Collection:
    from talentrl_cli.embedding import Embedder

    embedder = Embedder.from_config({"name_or_path": "all-MiniLM-L6-v2"})
    start = time.perf_counter()
    vectors = embedder.encode(skill_texts(n))
    queries = embedder.encode(task_texts(n_queries))
    print(f"# MiniLM: {n} skill + {n_queries} task texts embedded in "
          f"{time.perf_counter() - start:.1f}s ({embedder.stats.cached} cached, "
          f"{embedder.stats.encoded} encoded; cache {embedder.cache_file})", flush=True)
    return Collection(f"minilm-{_short(n)}", vectors, queries, None, None, bank)


def _short(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


# -- timing and metrics ---------------------------------------------------------------------


def qps(search: Callable[[np.ndarray], object], queries: np.ndarray, batch: int,
        reps: int) -> float:
    """Queries per second: median over `reps` passes over `queries` in batches of `batch`."""
    search(queries[:batch])  # warm-up
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        for i in range(0, len(queries), batch):
            search(queries[i : i + batch])
        times.append(time.perf_counter() - start)
    return len(queries) / statistics.median(times)


def recall(found: list[list[str]], truth: list[list[str]]) -> float:
    return float(np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found, truth,
                                                                         strict=True)]))


def source_hit(found: list[list[str]], source: np.ndarray, ids: list[str]) -> float:
    return float(np.mean([ids[s] in f for f, s in zip(found, source, strict=True)]))


@dataclass
class Row:
    collection: str
    n: int
    M: int
    ef: int | None  # None: exact search (timed in the same phase as this M's sweep)
    build_s: float | None
    recall_near: float | None
    recall_uniform: float | None
    src_hit: float | None
    qps1: float
    qps_batch: float
    speedup1: float | None = None
    speedup_batch: float | None = None


# -- the benchmark --------------------------------------------------------------------------


def bench_collection(coll: Collection, args: argparse.Namespace, rows: list[Row],
                     prior_rows: list[PriorRow], notes: list[str]) -> None:
    from threadpoolctl import threadpool_limits

    n = len(coll.vectors)
    ids = [f"s{i:06d}" for i in range(n)]
    params = {"ef_construction": args.ef_construction, "ef": args.efs[0], "exact_below": 0,
              "threads": args.build_threads}
    truth_near = truth_uniform = None
    bank_inputs = make_bank_inputs(n, args.seed) if coll.bank else None
    prior_queries = prior_talents = prior_truth = None
    for M in args.Ms:
        start = time.perf_counter()
        bank = None
        if bank_inputs is not None:
            skills, talents = bank_inputs
            bank = SkillBank.build(skills, talents, coll.vectors,
                                   {"name": coll.name, "dim": DIM, "normalize": True},
                                   {"M": M, **params}, oversample=args.oversample)
            index = bank.index
        else:
            index = VectorIndex.build(coll.vectors, ids, M=M, **params)
        build_s = time.perf_counter() - start
        assert index.uses_hnsw and index.ids == ids
        index.threads = 1  # single-threaded queries
        print(f"# {coll.name}: built M={M} in {build_s:.1f}s", flush=True)
        with threadpool_limits(limits=1):
            if truth_near is None:
                truth_near, scores = index.query_exact(coll.near, K)
                notes.append(f"{coll.name}: 1st / 2nd / {K}th neighbour "
                             f"{scores[:, 0].mean():.3f} / {scores[:, 1].mean():.3f} / "
                             f"{scores[:, -1].mean():.3f}")
                if coll.uniform is not None:
                    truth_uniform = index.query_exact(coll.uniform, K)[0]
            # Exact QPS again for every M, just before its sweep: on a shared machine the load
            # changes over the minutes a build takes, and a speedup should compare like with like.
            exact = partial(index.query_exact, k=K)
            exact_qps1 = qps(exact, coll.near[: args.n_single], 1, args.reps)
            exact_qpsb = qps(exact, coll.near, BATCH, args.reps)
            rows.append(Row(coll.name, n, M, None, build_s, 1.0,
                            1.0 if truth_uniform is not None else None,
                            None if coll.source is None else 1.0, exact_qps1, exact_qpsb))
            for ef in args.efs:
                index.params["ef"] = ef
                hnsw = partial(index.query, k=K)
                found = index.query(coll.near, K)[0]
                row = Row(
                    coll.name, n, M, ef, None,
                    recall(found, truth_near),
                    None if truth_uniform is None
                    else recall(index.query(coll.uniform, K)[0], truth_uniform),
                    None if coll.source is None else source_hit(found, coll.source, ids),
                    qps(hnsw, coll.near[: args.n_single], 1, args.reps),
                    qps(hnsw, coll.near, BATCH, args.reps))
                row.speedup1, row.speedup_batch = row.qps1 / exact_qps1, row.qps_batch / exact_qpsb
                rows.append(row)
            if bank is not None:
                if prior_queries is None:
                    prior_queries, prior_talents, prior_truth = prior_pairs(bank, coll, args)
                for ef in args.efs:
                    prior_rows.append(bench_prior(coll.name, bank, ef, prior_queries, prior_talents,
                                                  prior_truth, args.bank_k, args.n_single, BATCH))
        index = bank = None  # free this M's graph before building the next


def prior_pairs(bank: SkillBank, coll: Collection, args: argparse.Namespace):
    """(query, random talent) pairs and `exact_topk` for each: near queries for a random
    collection, the task texts for MiniLM."""
    rng = np.random.default_rng(args.seed + 11)
    if coll.source is None:
        queries = coll.near[: args.n_agreement]
    else:
        source = rng.integers(0, len(coll.vectors), args.n_agreement)
        queries = near_queries(rng, coll.vectors, source, args.noise)
    return (queries, *prior_reference(bank, queries, rng, args.bank_k))


# -- output ---------------------------------------------------------------------------------


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_head(caption: str, head: str) -> None:
    print()
    print(caption)
    print(head)
    print("-" * len(head))


def print_tables(rows: list[Row], prior_rows: list[PriorRow], notes: list[str],
                 args: argparse.Namespace) -> None:
    print_head(f"Search: recall@{K} vs exact; QPS single-threaded (batch 1 | batch {BATCH}); "
               f"x exact = HNSW QPS / exact QPS at the same batch size, exact timed just before "
               f"each M's sweep (its row also shows that M's build time)",
               f"{'collection':<12} {'n':>7} {'M':>3} {'ef':>5} {'build_s':>7} {'rec_near':>8} "
               f"{'rec_unif':>8} {'src@10':>6} {'qps_b1':>8} {'qps_b256':>8} {'x_ex_b1':>7} "
               f"{'x_ex_b256':>9}")
    previous = None
    for r in rows:
        if previous is not None and r.collection != previous:
            print()
        previous = r.collection
        print(f"{r.collection:<12} {r.n:>7} {r.M:>3} {_fmt(r.ef, 'd') if r.ef else 'exact':>5} "
              f"{_fmt(r.build_s, '.1f'):>7} {_fmt(r.recall_near, '.3f'):>8} "
              f"{_fmt(r.recall_uniform, '.3f'):>8} {_fmt(r.src_hit, '.3f'):>6} "
              f"{r.qps1:>8.0f} {r.qps_batch:>8.0f} {_fmt(r.speedup1, '.1f'):>7} "
              f"{_fmt(r.speedup_batch, '.1f'):>9}")
    print()
    print(f"Exact neighbour cosines of the near / task queries. Random unit vectors have no "
          f"neighbourhood structure: cosines to a query spread with sd 1/sqrt({DIM}) = "
          f"{DIM ** -0.5:.3f}, so neighbours 2..{K} barely stand out from the other items "
          f"(the worst case for HNSW).")
    for note in notes:
        print(f"  {note}")
    if prior_rows:
        print_prior_table(prior_rows, args.bank_k, args.oversample, args.n_agreement, print_head)
    print_targets(rows, prior_rows, args)


def print_search_target(sweep: list[Row], name: str) -> Row | None:
    """Print whether some (M, ef) of one collection's sweep meets the search target; return it."""
    meeting = [r for r in sweep if r.recall_near >= RECALL_TARGET and r.speedup1 >= SPEEDUP_TARGET]
    if meeting:
        best = max(meeting, key=lambda r: r.speedup1)
        print(f"TARGET met   ({name}): recall@{K} >= {RECALL_TARGET} at >= "
              f"{SPEEDUP_TARGET:.0f}x exact QPS (batch 1): "
              + ", ".join(f"M={r.M} ef={r.ef} ({r.recall_near:.3f}, {r.speedup1:.1f}x)"
                          for r in meeting)
              + f"; best M={best.M} ef={best.ef}")
        return best
    fast = [r for r in sweep if r.speedup1 >= SPEEDUP_TARGET]
    accurate = [r for r in sweep if r.recall_near >= RECALL_TARGET]
    top = max(sweep, key=lambda r: r.recall_near)
    print(f"TARGET MISSED ({name}): no (M, ef) reaches recall@{K} >= "
          f"{RECALL_TARGET} at >= {SPEEDUP_TARGET:.0f}x exact QPS (batch 1).")
    if fast:
        best_fast = max(fast, key=lambda r: r.recall_near)
        print(f"  best recall at >= {SPEEDUP_TARGET:.0f}x: {best_fast.recall_near:.3f} "
              f"(M={best_fast.M} ef={best_fast.ef}, {best_fast.speedup1:.1f}x)")
    if accurate:
        best_acc = max(accurate, key=lambda r: r.speedup1)
        print(f"  fastest at recall >= {RECALL_TARGET}: {best_acc.speedup1:.1f}x "
              f"(M={best_acc.M} ef={best_acc.ef})")
    print(f"  highest recall: {top.recall_near:.3f} (M={top.M} ef={top.ef}, "
          f"{top.speedup1:.1f}x exact at batch 1, {top.speedup_batch:.1f}x at batch {BATCH}); "
          f"uniform queries {_fmt(top.recall_uniform, '.3f')}")
    return None


def print_targets(rows: list[Row], prior_rows: list[PriorRow], args: argparse.Namespace) -> None:
    print()
    if args.quick:
        print("Targets are defined at 100k; --quick checks the plumbing only.")
    target_sizes = {max(r.n for r in rows)} if args.quick else {100_000}
    for name in dict.fromkeys(r.collection for r in rows if r.n in target_sizes):
        met = print_search_target([r for r in rows if r.collection == name and r.ef is not None], name)
        # The prior's cost at the index stage's default (conf/index/default.yaml) and, when
        # the search target was met, at the fastest (M, ef) that met it.
        points = {(32, 128): "the index stage's default"}
        if met is not None:
            points.setdefault((met.M, met.ef), "the search target's fastest point")
        for (M, ef), where in points.items():
            row = next((p for p in prior_rows if (p.collection, p.M, p.ef) == (name, M, ef)), None)
            if row is not None:
                print_prior_target(row, where)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 2k items, fewer ef")
    parser.add_argument("--no-minilm", action="store_true", help="skip the MiniLM collection")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--noise", type=float, default=0.5,
                        help="norm of the gaussian noise added to an item for a near query")
    parser.add_argument("--reps", type=int, default=None, help="timed passes (median)")
    parser.add_argument("--build-threads", type=int, default=2)
    parser.add_argument("--ef-construction", type=int, default=EF_CONSTRUCTION)
    parser.add_argument("--bank-k", type=int, default=5, help="k for bank.retrieve (conf: 5)")
    parser.add_argument("--oversample", type=int, default=4, help="SkillBank oversample (conf: 4)")
    parser.add_argument("--Ms", type=int, nargs="+", default=[16, 32], help="HNSW M values")
    parser.add_argument("--sizes", type=int, nargs="+", default=None,
                        help="random collection sizes (default 10000 100000)")
    parser.add_argument("--minilm-sizes", type=int, nargs="+", default=None,
                        help="MiniLM collection sizes (default 10000; 100000 embeds 90k more "
                             "texts once, about 40 min here, then reads the cache)")
    parser.add_argument("--efs", type=int, nargs="+", default=None,
                        help="query-time ef values to sweep (default 16 32 64 128 256)")
    args = parser.parse_args()
    if args.quick:
        sizes, minilm_sizes, n_queries, args.n_single, args.n_agreement = [2000], [2000], 256, 50, 200
        args.efs, args.reps = [16, 64, 256], args.reps or 2
    else:
        sizes, minilm_sizes, n_queries, args.n_single, args.n_agreement = (
            args.sizes or [10_000, 100_000], args.minilm_sizes or [10_000], 512, 100, 500)
        args.efs, args.reps = args.efs or [16, 32, 64, 128, 256], args.reps or 3

    start = time.perf_counter()
    print(f"# numpy {np.__version__}, {os.cpu_count()} CPUs, python {sys.version.split()[0]}; "
          f"dim {DIM}, ef_construction {args.ef_construction}, build threads "
          f"{args.build_threads}, near-query noise {args.noise}, reps {args.reps}", flush=True)
    rows: list[Row] = []
    prior_rows: list[PriorRow] = []
    notes: list[str] = []
    collections = []
    if not args.no_minilm:
        collections.extend(minilm_collection(n, n_queries, bank=n == max(minilm_sizes))
                           for n in minilm_sizes)
    for i, n in enumerate(sizes):
        collections.append(random_collection(f"random-{_short(n)}", n, n_queries, args.noise,
                                             args.seed + i, bank=n == max(sizes)))
    for coll in collections:
        bench_collection(coll, args, rows, prior_rows, notes)
    print_tables(rows, prior_rows, notes, args)
    print(f"\n# total {time.perf_counter() - start:.0f}s")


if __name__ == "__main__":
    main()
