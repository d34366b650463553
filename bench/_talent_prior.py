"""The talent-prior part of `bench/retrieval.py` (a helper, not a benchmark).

A `SkillBank` with N_TALENTS talents of TALENT_NNZ weights uniform in (0, 1], unrelated to
the embeddings (the harshest case: the prior must lift skills from anywhere in the bank, and
with lam=0.3 most of a talent's skills could still reach the top k). Per (M, ef): ms per
query of plain HNSW (`bank.index.query(k * oversample)`), flat `bank.retrieve` (no talent)
and `bank.retrieve` with one talent per query, at batch 1 and batched; agreement with
`bank.exact_topk`; how many queries were ranked over every skill.

`read_cold` / `read_warm`: one matrix-vector product over the talent's TALENT_NNZ embedding
rows, timed right after a plain search and then once more at once. The first is what merely
reading the rows the formula may need costs with the caches an HNSW search leaves behind;
the prior's batch-1 cost cannot fall much below it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from talentrl_cli.retrieval import normalize_rows
from talentrl_cli.schema import Skill, Talent
from talentrl_cli.skillbank import SkillBank

N_TALENTS, TALENT_NNZ, LAM = 8, 300, 0.3
PRIOR_REPS = 7  # timed passes (min of them)
OVERHEAD_TARGET = 10.0  # % over plain HNSW


@dataclass
class PriorRow:
    """ms per query of plain HNSW (`index.query`), flat `retrieve` (no talent) and `retrieve`
    with a talent, at batch 1 and `batch`."""

    collection: str
    M: int
    ef: int
    batch: int
    talent_rows: int  # nonzero weights per talent (TALENT_NNZ, or fewer in a small bank)
    ms1: tuple[float, float, float]  # plain, flat, prior
    ms_batch: tuple[float, float, float]
    read_ms: tuple[float, float]  # the talent's rows read right after a search, then warm
    agreement: float
    same_set: float
    brute_force: int  # queries ranked over every skill (lam > 0: none expected)

    @staticmethod
    def overhead(ms: tuple[float, float, float], base: int) -> float:
        return 100.0 * (ms[2] / ms[base] - 1.0)

    @property
    def overhead1(self) -> float:  # the prior over plain HNSW
        return self.overhead(self.ms1, 0)

    @property
    def overhead_batch(self) -> float:
        return self.overhead(self.ms_batch, 0)


def make_bank_inputs(n: int, seed: int) -> tuple[list[Skill], list[Talent]]:
    """n placeholder skills and N_TALENTS talents with sparse weights uniform in (0, 1]."""
    rng = np.random.default_rng(seed + 7)
    skills = [Skill(id=f"s{i:06d}", name=f"skill {i}", when_to_use="", steps=[])
              for i in range(n)]
    nnz = min(TALENT_NNZ, n // N_TALENTS)
    talents = []
    for t in range(N_TALENTS):
        chosen = rng.choice(n, nnz, replace=False)
        weights = 1.0 - rng.random(nnz)  # uniform in (0, 1]
        talents.append(Talent(name=f"talent{t}", description=f"synthetic talent {t}",
                              skills={skills[i].id: float(w)
                                      for i, w in zip(chosen, weights, strict=True)}))
    return skills, talents


def prior_reference(bank: SkillBank, queries: np.ndarray, rng: np.random.Generator,
                    k: int) -> tuple[list[str], list[list[str]]]:
    """A random talent per query and `exact_topk` for each pair (independent of M and ef)."""
    names = [t.name for t in bank.talents]
    talents = [names[i] for i in rng.integers(0, len(names), len(queries))]
    truth = [bank.exact_topk(q, t, k, LAM) for q, t in zip(queries, talents, strict=True)]
    return talents, truth


def bench_prior(name: str, bank: SkillBank, ef: int, queries: np.ndarray, talents: list[str],
                truth: list[list[str]], k: int, n_single: int, batch: int) -> PriorRow:
    """Latency of plain HNSW, flat `retrieve` and `retrieve` with the talent prior at the same
    ef, the cost of reading the talent's rows after a search, and agreement with `exact_topk`."""
    bank.index.params["ef"] = ef
    wide = k * bank.oversample
    bank.brute_force_queries = 0
    found = [[h.skill_id for h in row] for row in bank.retrieve(queries, talents, k=k, lam=LAM)]
    agreement = float(np.mean([f == t for f, t in zip(found, truth, strict=True)]))
    same_set = float(np.mean([set(f) == set(t) for f, t in zip(found, truth, strict=True)]))

    def searches(q: np.ndarray, names: list[str]) -> tuple[Callable[[slice], object], ...]:
        return (lambda b: bank.index.query(q[b], wide),
                lambda b: bank.retrieve(q[b], None, k=k, lam=LAM),
                lambda b: bank.retrieve(q[b], names[b], k=k, lam=LAM))

    one = searches(queries[:n_single], talents[:n_single])
    return PriorRow(name, bank.index.params["M"], ef, batch, len(bank.talents[0].skills),
                    rotated_ms(one, n_single, 1),
                    rotated_ms(searches(queries, talents), len(queries), batch),
                    talent_read_ms(bank, queries[:n_single], talents[:n_single], wide),
                    agreement, same_set, bank.brute_force_queries)


def rotated_ms(searches: tuple[Callable[[slice], object], ...], n: int,
               batch: int) -> tuple[float, ...]:
    """ms per query of each search over n queries in batches, all of them on every batch in
    rotating order; min over PRIOR_REPS passes (timeit's convention: other tenants of this
    shared machine only ever add time, and a median of a few passes moved by +-10 % between
    neighbouring rows)."""
    for search in searches:  # warm-up
        search(slice(0, batch))
    passes = []
    for rep in range(PRIOR_REPS):
        elapsed = [0.0] * len(searches)
        for i in range(0, n, batch):
            shift = rep + i // batch
            for j in range(len(searches)):
                which = (shift + j) % len(searches)
                start = time.perf_counter()
                searches[which](slice(i, i + batch))
                elapsed[which] += time.perf_counter() - start
        passes.append(elapsed)
    return tuple(1e3 * min(p[which] for p in passes) / n for which in range(len(searches)))


def talent_read_ms(bank: SkillBank, queries: np.ndarray, talents: list[str],
                   wide: int) -> tuple[float, float]:
    """ms per query of one product over the talent's embedding rows right after a plain
    search, and repeated at once (min over PRIOR_REPS passes)."""
    position = {t.name: i for i, t in enumerate(bank.talents)}
    rows = {name: np.ascontiguousarray(bank.index.embeddings[np.flatnonzero(bank.weights[i])])
            for name, i in position.items()}
    unit = normalize_rows(queries)
    cold, warm = [], []
    for _ in range(PRIOR_REPS):
        after_search = again = 0.0
        for q, name in zip(unit, talents, strict=True):
            bank.index.query(q, wide)
            start = time.perf_counter()
            rows[name] @ q
            middle = time.perf_counter()
            rows[name] @ q
            after_search, again = after_search + middle - start, again + time.perf_counter() - middle
        cold.append(after_search)
        warm.append(again)
    return 1e3 * min(cold) / len(queries), 1e3 * min(warm) / len(queries)


# -- output ---------------------------------------------------------------------------------


def print_prior_table(prior_rows: list[PriorRow], k: int, oversample: int, n_agreement: int,
                      print_head: Callable[[str, str], None]) -> None:
    b, rows = prior_rows[0].batch, prior_rows[0].talent_rows
    print_head(f"Talent prior: ms per query of plain HNSW (index.query, k*oversample="
               f"{k * oversample}), flat retrieve (no talent) and retrieve with a talent (k={k}, "
               f"lam={LAM}; {N_TALENTS} talents of {rows} weights uniform in (0, 1]); min of "
               f"{PRIOR_REPS} passes, the three rotating on every batch; ovh = prior over plain HNSW "
               f"(flat: over flat retrieve); read = one product over the talent's {rows} rows "
               f"right after a plain search (cold) and again at once (warm); agree = top-{k} equal "
               f"to exact_topk (same order), set = same set, {n_agreement} pairs; brute = queries "
               f"ranked over every skill",
               f"{'collection':<12} {'M':>3} {'ef':>4} {'plain_b1':>8} {'flat_b1':>7} {'prior_b1':>8} "
               f"{'+ms_b1':>6} {'ovh_b1':>7} {'flat':>6} {'read_cold':>9} {'read_warm':>9} "
               f"{f'plain_b{b}':>10} {f'prior_b{b}':>10} {f'ovh_b{b}':>8} {'agree':>6} {'set':>6} "
               f"{'brute':>5}")
    for p in prior_rows:
        print(f"{p.collection:<12} {p.M:>3} {p.ef:>4} {p.ms1[0]:>8.3f} {p.ms1[1]:>7.3f} "
              f"{p.ms1[2]:>8.3f} {p.ms1[2] - p.ms1[0]:>6.3f} {p.overhead1:>+6.1f}% "
              f"{PriorRow.overhead(p.ms1, 1):>+5.1f}% {p.read_ms[0]:>9.3f} {p.read_ms[1]:>9.3f} "
              f"{p.ms_batch[0]:>10.3f} {p.ms_batch[2]:>10.3f} {p.overhead_batch:>+7.1f}% "
              f"{p.agreement:>6.3f} {p.same_set:>6.3f} {p.brute_force:>5}")


def print_prior_target(p: PriorRow, where: str) -> None:
    for batch, ms, overhead in ((1, p.ms1, p.overhead1), (p.batch, p.ms_batch, p.overhead_batch)):
        verdict = "met  " if overhead <= OVERHEAD_TARGET else "MISSED"
        print(f"TARGET {verdict} ({p.collection}, talent prior <= {OVERHEAD_TARGET:.0f}% over plain "
              f"HNSW, batch {batch}): {overhead:+.1f}% ({ms[0]:.3f} -> {ms[2]:.3f} ms; "
              f"{PriorRow.overhead(ms, 1):+.1f}% over flat retrieve) at M={p.M} ef={p.ef}, {where}; "
              f"agreement with exact_topk {p.agreement:.3f}")
        if batch == 1 and overhead > OVERHEAD_TARGET:
            print(f"  reading the talent's {p.talent_rows} rows right after the search alone: "
                  f"{p.read_ms[0]:.3f} ms = {100 * p.read_ms[0] / ms[0]:.1f}% of plain HNSW "
                  f"({p.read_ms[1]:.3f} ms warm)")
