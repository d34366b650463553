"""Synthetic trajectories in an unseen domain (tools `fetch`, `compute`, `respond`), with
three planted strategies, for testing that mining is domain-agnostic."""

from __future__ import annotations

import random

from talentrl_cli.schema import Step, Task, Trajectory

NAMES = ["Orvandel", "Kestrimo", "Palu Venn", "Ystra Holm", "Dabrille", "Quenmoor", "Tarsk Ollo",
         "Mirevault", "Glendaro", "Ushkal", "Brevanne", "Corthis", "Lumen Ferro", "Haskett"]


def synthetic_trajectories(n_per_strategy: int = 15, seed: int = 0) -> list[Trajectory]:
    rng = random.Random(seed)
    out = []
    for strategy, build in (("chain", _chain), ("contrast", _contrast), ("tally", _tally)):
        for i in range(n_per_strategy):
            a, b, c = rng.sample(NAMES, 3)
            question, steps, answer = build(a, b, c, rng)
            task = Task(id=f"{strategy}-{i}", question=question, answers=[answer], strategy=strategy)
            out.append(Trajectory(id=f"traj-{strategy}-{i}", task=task, steps=steps, success=True,
                                  final_answer=answer, source="synthetic"))
    return out


def _chain(a, b, c, rng):
    question = f"Which guild trained the mentor of {a}?"
    steps = [Step(thought="Find the mentor first.", action=f"fetch[{a}]",
                  observation=f"{a} was mentored by {b}."),
             Step(thought="Now the mentor's guild.", action=f"fetch[{b}]",
                  observation=f"{b} trained at the guild of {c}."),
             Step(action=f"respond[{c}]", observation="Done.")]
    return question, steps, c


def _contrast(a, b, c, rng):
    question = f"Is {a} older than {b}?"
    yes = rng.random() < 0.5
    steps = [Step(action=f"fetch[{a}]", observation=f"{a} was founded in {rng.randint(1000, 1900)}."),
             Step(action=f"fetch[{b}]", observation=f"{b} was founded in {rng.randint(1000, 1900)}."),
             Step(action=f"respond[{'yes' if yes else 'no'}]", observation="Done.")]
    return question, steps, "yes" if yes else "no"


def _tally(a, b, c, rng):
    question = f"How many towers does {a} have in total?"
    n, m = rng.randint(2, 9), rng.randint(2, 9)
    steps = [Step(action=f"fetch[{a}]", observation=f"{a} has {n} north towers and {m} south towers."),
             Step(action=f"compute[{n} + {m}]", observation=f"{n + m}"),
             Step(action=f"respond[{n + m}]", observation="Done.")]
    return question, steps, str(n + m)
