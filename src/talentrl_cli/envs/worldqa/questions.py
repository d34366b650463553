"""Generate WorldQA questions with gold answers, strategy labels, tool plans and splits.

Each family (see `families`) enumerates its candidate questions from the world; a candidate
is a family plus the entities in its slots, with its answers (the canonical form first, then
aliases), its minimal tool plan and its *answer key*.

Split rule (no leakage). The answer key is the (entity, relation) fact the answer is read
from: for single-hop and bridge questions the last hop, e.g. ("person_0007", "born_in") for
both "Where was X born?" and "Where was the director of F born?"; for yes/no verification
the fact verified; for comparisons, gaps, same-value checks and intersections the sorted
entity pair with the attribute or relations; for counting the subject with `count:<rel>`;
for age questions the work with `age`. A candidate's split is a stable hash of
(seed, answer key) bucketed by the split fractions, so every wording of the same question and
every question about the same answer fact lands in one split; no question text and no answer
key is shared between splits (`tests/envs/test_worldqa.py` checks both). Intermediate hops
(e.g. who directed F) may be asked directly in another split, as supporting pages recur
across HotpotQA's splits.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from talentrl_cli.envs.worldqa.families import FAMILIES, STRATEGIES, Family
from talentrl_cli.envs.worldqa.grammar import format_value
from talentrl_cli.envs.worldqa.world import RELATIONS, Entity, World
from talentrl_cli.schema import Task

NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                "ten", "eleven", "twelve"]
UNITS = {"length_km": ["km", "kilometres"], "height_m": ["m", "metres"]}


@dataclass
class Candidate:
    family: Family
    slots: dict[str, Entity]
    answers: list[str]
    plan: list[str]
    key: str


def names(e: Entity) -> list[str]:
    return [e.name, *e.aliases]


def number_answers(n: int, unit: str | None = None) -> list[str]:
    out = [str(n)] + ([NUMBER_WORDS[n]] if 0 <= n < len(NUMBER_WORDS) else [])
    return out + ([f"{n} {unit}"] if unit else [])


def value_answers(world: World, e: Entity, field: str) -> list[str]:
    """Gold answers for fact `field` of `e`: the canonical form first, then aliases."""
    if field in RELATIONS:
        return names(world.by_id[e.rels[field]])
    if field == "has_capital":
        return names(world.subjects("capital_of", e)[0])
    text = format_value(field, e.attrs[field])
    plain = str(e.attrs[field])
    extra = [f"{text} {u}" for u in UNITS.get(field, [])]
    return list(dict.fromkeys([text, plain, *extra]))


def value_of(world: World, e: Entity, field: str):
    """A comparable value of a fact (an entity id or an integer); None when absent."""
    if field == "has_capital":
        caps = world.subjects("capital_of", e)
        return caps[0].id if caps else None
    return e.rels.get(field, e.attrs.get(field))


def pair_key(a: Entity, b: Entity, what: str) -> str:
    return "+".join(sorted([a.id, b.id])) + "|" + what


def split_of(key: str, seed: int, fractions: dict[str, float]) -> str:
    """Stable bucket of an answer key: sha256, not Python's salted hash()."""
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    total = 0.0
    for split, frac in fractions.items():
        total += frac
        if u < total:
            return split
    return list(fractions)[-1]


# -- candidates per operation -------------------------------------------------------------


def _read(world: World, fam: Family, rng: random.Random, n_pairs: int) -> Iterator[Candidate]:
    field = fam.fields[0]
    for a in world.of_type(fam.types[0]):
        if value_of(world, a, field) is not None:
            ans = value_answers(world, a, field)
            yield Candidate(fam, {"a": a}, ans, _plan([a], ans[0]), f"{a.id}|{field}")


def _chain(world: World, fam: Family, rng: random.Random, n_pairs: int) -> Iterator[Candidate]:
    f1, f2 = fam.fields
    for a in world.of_type(fam.types[0]):
        mid = world.obj(a, f1)
        if mid is not None and value_of(world, mid, f2) is not None:
            ans = value_answers(world, mid, f2)
            yield Candidate(fam, {"a": a}, ans, _plan([a, mid], ans[0]), f"{mid.id}|{f2}")


def _pairs(world: World, fam: Family, rng: random.Random, n: int) -> list[tuple[Entity, Entity]]:
    """Up to n distinct unordered pairs of the family's types, in random slot order."""
    left, right = world.of_type(fam.types[0]), world.of_type(fam.types[1])
    seen, out = set(), []
    for _ in range(n * 4):
        a, b = rng.choice(left), rng.choice(right)
        ident = frozenset([a.id, b.id])
        if a.id != b.id and ident not in seen:
            seen.add(ident)
            out.append((a, b))
        if len(out) >= n:
            break
    return out


def _compare(world: World, fam: Family, rng: random.Random, n: int) -> Iterator[Candidate]:
    attr, direction = fam.fields
    for a, b in _pairs(world, fam, rng, n):
        va, vb = a.attrs[attr], b.attrs[attr]
        if va == vb:
            continue
        win = (a if va < vb else b) if direction == "min" else (a if va > vb else b)
        yield Candidate(fam, {"a": a, "b": b}, names(win), _plan([a, b], win.name),
                        pair_key(a, b, attr))


def _same(world: World, fam: Family, rng: random.Random, n: int) -> Iterator[Candidate]:
    field = fam.fields[0]
    groups: dict = {}
    for e in world.of_type(fam.types[0]):
        groups.setdefault(value_of(world, e, field), []).append(e)
    shared = [g for g in groups.values() if len(g) > 1]
    for a, b in _pairs(world, fam, rng, n):
        if shared and rng.random() < 0.5:  # balance yes and no
            a, b = rng.sample(rng.choice(shared), 2)
        yes = value_of(world, a, field) == value_of(world, b, field)
        ans = "yes" if yes else "no"
        yield Candidate(fam, {"a": a, "b": b}, [ans], _plan([a, b], ans),
                        pair_key(a, b, field))


def _verify(world: World, fam: Family, rng: random.Random, n: int) -> Iterator[Candidate]:
    field = fam.fields[0]
    others = world.of_type(fam.types[1])
    for a in world.of_type(fam.types[0]):
        true_id = value_of(world, a, field)
        b = world.by_id[true_id] if rng.random() < 0.5 else rng.choice(others)
        ans = "yes" if b.id == true_id else "no"
        yield Candidate(fam, {"a": a, "b": b}, [ans], _plan([a], ans), f"{a.id}|{field}")


def _count(world: World, fam: Family, rng: random.Random, n: int) -> Iterator[Candidate]:
    rel = fam.fields[0]
    for a in world.of_type(fam.types[0]):
        k = len(world.subjects(rel, a))
        if k:
            ans = number_answers(k)
            yield Candidate(fam, {"a": a}, ans, _plan([a], ans[0]), f"{a.id}|count:{rel}")


def _intersect(world: World, fam: Family, rng: random.Random, n: int) -> Iterator[Candidate]:
    ra, rb = fam.fields
    seen = set()
    for x in world.of_type(RELATIONS[ra][0]):
        a, b = world.obj(x, ra), world.obj(x, rb)
        if a is None or b is None or (a.id, b.id) in seen:
            continue
        seen.add((a.id, b.id))
        both = {e.id for e in world.subjects(ra, a)} & {e.id for e in world.subjects(rb, b)}
        if len(both) == 1:
            yield Candidate(fam, {"a": a, "b": b}, names(x), _plan([a, b], x.name),
                            pair_key(a, b, f"{ra}&{rb}"))


def _gap(world: World, fam: Family, rng: random.Random, n: int) -> Iterator[Candidate]:
    attr = fam.fields[0]
    for a, b in _pairs(world, fam, rng, n):
        gap = abs(a.attrs[attr] - b.attrs[attr])
        if gap:
            ans = [str(gap), f"{gap} years"]
            yield Candidate(fam, {"a": a, "b": b}, ans, _plan([a, b], ans[0]),
                            pair_key(a, b, attr))


def _age(world: World, fam: Family, rng: random.Random, n: int) -> Iterator[Candidate]:
    rel, attr = fam.fields
    for a in world.of_type(fam.types[0]):
        person = world.obj(a, rel)
        age = a.attrs[attr] - person.attrs["birth_year"]
        ans = [str(age), f"{age} years", f"{age} years old"]
        yield Candidate(fam, {"a": a}, ans, _plan([a, person], ans[0]), f"{a.id}|age")


OPS = {"read": _read, "chain": _chain, "compare": _compare, "same": _same, "verify": _verify,
       "count": _count, "intersect": _intersect, "gap": _gap, "age": _age}


def _plan(searched: list[Entity], answer: str) -> list[str]:
    return [f"search[{e.name}]" for e in searched] + [f"finish[{answer}]"]


def candidates(world: World, n_pairs: int, seed: int) -> list[Candidate]:
    """Every candidate question of every family (pair families: up to n_pairs pairs)."""
    out, seen = [], set()
    for index, fam in enumerate(FAMILIES):
        rng = random.Random(f"worldqa-candidates-{seed}-{index}")
        for cand in OPS[fam.op](world, fam, rng, n_pairs):
            ident = (fam.name, frozenset(e.id for e in cand.slots.values()))
            if ident not in seen:
                seen.add(ident)
                out.append(cand)
    return out


def generate_tasks(world: World, seed: int, n_tasks: int,
                   fractions: dict[str, float]) -> dict[str, list[Task]]:
    """n_tasks questions split by `fractions`, balanced over strategies, then families."""
    pools: dict[str, list[Candidate]] = {s: [] for s in fractions}
    n_pairs = max(60, 2 * n_tasks // len(FAMILIES))
    for cand in candidates(world, n_pairs, seed):
        pools[split_of(cand.key, seed, fractions)].append(cand)
    pools = {split: balance_yes_no(pool) for split, pool in pools.items()}
    out = {}
    for split, frac in fractions.items():
        rng = random.Random(f"worldqa-select-{seed}-{split}")
        chosen = select(pools[split], round(n_tasks * frac), rng)
        out[split] = [to_task(c, split, i, seed, rng) for i, c in enumerate(chosen)]
    return out


def balance_yes_no(pool: list[Candidate]) -> list[Candidate]:
    """`pool` with as many "yes" as "no" candidates in each yes/no family (the surplus of the
    majority answer dropped, in pool order). Without it a constant answer beats chance: the
    `same` families repeat their few yes-pairs and dedup keeps one, so before this 58 % of
    train and 67 % of dev yes/no answers were "no", and RL learned to answer "no" (to 30 of 30
    dev yes/no questions and 62 of 170 others: docs/MEASUREMENTS.md)."""
    answers: dict[str, Counter] = {}
    for cand in pool:
        if cand.family.strategy == "yes_no":
            answers.setdefault(cand.family.name, Counter())[cand.answers[0]] += 1
    quota = {name: min(c["yes"], c["no"]) for name, c in answers.items()}
    kept: Counter = Counter()
    out = []
    for cand in pool:
        if cand.family.strategy == "yes_no":
            key = (cand.family.name, cand.answers[0])
            if kept[key] >= quota[cand.family.name]:
                continue
            kept[key] += 1
        out.append(cand)
    return out


def alternate_answers(queue: list[Candidate]) -> list[Candidate]:
    """A yes/no family's queue with "yes" and "no" alternating (each answer's own order kept),
    so that any number taken from it is balanced to within one; other families unchanged."""
    if not queue or queue[0].family.strategy != "yes_no":
        return queue
    yes = [c for c in queue if c.answers[0] == "yes"]
    no = [c for c in queue if c.answers[0] != "yes"]
    return [c for pair in zip(yes, no, strict=False) for c in pair] + yes[len(no):] + no[len(yes):]


def select(pool: list[Candidate], n: int, rng: random.Random) -> list[Candidate]:
    """n candidates: equal shares per strategy (a short strategy's rest goes to the others),
    round-robin over families inside a strategy, then shuffled."""
    by_strategy: dict[str, list[list[Candidate]]] = {}
    for strategy in STRATEGIES:
        fams: dict[str, list[Candidate]] = {}
        for cand in pool:
            if cand.family.strategy == strategy:
                fams.setdefault(cand.family.name, []).append(cand)
        queues = [alternate_answers(rng.sample(v, len(v))) for _, v in sorted(fams.items())]
        by_strategy[strategy] = queues
    chosen: list[Candidate] = []
    while len(chosen) < n and any(any(q) for q in by_strategy.values()):
        for strategy in STRATEGIES:
            queues = [q for q in by_strategy[strategy] if q]
            if queues and len(chosen) < n:
                chosen.append(rng.choice(queues).pop())
    rng.shuffle(chosen)
    return chosen


def to_task(cand: Candidate, split: str, index: int, seed: int, rng: random.Random) -> Task:
    """Render a candidate with a randomly chosen paraphrase template."""
    t = rng.randrange(len(cand.family.templates))
    text = cand.family.templates[t].format(**{k: e.name for k, e in cand.slots.items()})
    meta = {"family": cand.family.name, "template": t, "answer_key": cand.key, "split": split,
            "slots": {k: e.name for k, e in cand.slots.items()},
            "entity_ids": [e.id for e in cand.slots.values()], "seed": seed}
    return Task(id=f"worldqa-{seed}-{split}-{index:05d}", question=text,
                answers=cand.answers, env="worldqa", strategy=cand.family.strategy,
                plan=cand.plan, meta=meta)
