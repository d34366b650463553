"""A scripted expert that answers WorldQA questions through the environment's tools.

What the expert knows, honestly stated:
- the question wordings (`families.parse_question`): from the question text alone it gets
  the family (hence the strategy and the operation) and the entity names in the slots;
- the sentence templates of the corpus (`grammar`), so it can read a fact out of a sentence.
What it does not know: the world. Every value it answers with, and every bridge entity it
searches next, is read from an observation the environment returned (search results, or
lookup[...] results when a search cut the passage short). When a search lands on the wrong
passage it retries with a typed query ("Nogial city"), as an agent would. Its success flag
is the environment's own EM score of its final answer.

Noise. With probability `noise` a trajectory gets one realistic error:
- `wrong_entity`: the expert searches (or misreads a bridge as) a distractor of the same
  type, then continues faithfully from that wrong passage;
- `premature_finish`: it stops early, answering with partial evidence (the bridge entity,
  the first compared entity, a single year) or, for one-search questions, a guess without
  searching at all.
Only the noise model consults the world, and only to pick a plausible distractor name or a
hallucinated value; it never looks up a correct answer.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from talentrl_cli.envs.worldqa.families import Family, parse_question
from talentrl_cli.envs.worldqa.grammar import (
    FIELD_KEYWORDS,
    LIST_KEYWORDS,
    observed_title,
    parse_number,
    read_fact,
    read_list,
)
from talentrl_cli.envs.worldqa.world import RELATIONS, World
from talentrl_cli.schema import Step, Task, Trajectory

NOISE_KINDS = ("wrong_entity", "premature_finish")
MAX_LOOKUPS = 5
DESC = {
    "born_in": "birthplace", "studied_at": "university", "campus_in": "city",
    "headquartered_in": "headquarters", "founded_by": "founder", "directed_by": "director",
    "produced_by": "production company", "written_by": "author", "located_in": "country",
    "has_capital": "capital", "flows_through": "country", "rises_in": "country",
    "birth_year": "birth year", "founded": "founding year", "released": "release year",
    "published": "publication year", "population": "population", "length_km": "length",
    "height_m": "height",
}
LIST_DESC = {
    "born_in": "the notable people born in {x}", "studied_at": "the notable alumni of {x}",
    "campus_in": "the universities in {x}", "headquartered_in": "the companies based in {x}",
    "located_in": "the cities of {x}", "founded_by": "the companies founded by {x}",
    "directed_by": "the films directed by {x}", "written_by": "the books written by {x}",
    "produced_by": "the films produced by {x}", "flows_through": "the rivers of {x}",
    "rises_in": "the mountains of {x}",
}


def listed(rel: str, x: str) -> str:
    """'the films directed by X' for a list relation and subject."""
    return LIST_DESC[rel].format(x=x)


class Expert:
    """Runs one episode per task on its own env instance and records ReAct steps."""

    def __init__(self, env: Any, world: World, rng: random.Random, noise: float = 0.0):
        self.env, self.world, self.rng, self.noise = env, world, rng, float(noise)

    # -- episode plumbing -------------------------------------------------------------------

    def solve(self, task: Task) -> Trajectory:
        self.steps: list[Step] = []
        self.done, self.answer, self.info = False, None, {}
        self._corrupted = False
        self.kind = self.rng.choice(NOISE_KINDS) if self.rng.random() < self.noise else None
        self.env.reset(task)
        parsed = parse_question(task.question)
        if parsed is None:
            self.finish("I cannot tell what this question asks for.", "unknown")
        else:
            family, _, slots = parsed
            OPS[family.op](self, family, slots)
        return self._trajectory(task)

    def act(self, thought: str, action: str) -> str:
        if self.done:
            return ""
        obs, _, done, info = self.env.step(action)
        self.steps.append(Step(thought=thought, action=action, observation=obs))
        self.done, self.info = done, info
        return obs

    def finish(self, thought: str, answer: Any) -> None:
        if not self.done:  # the step limit may have ended the episode already
            self.answer = str(answer)
            self.act(thought, f"finish[{self.answer}]")

    def _trajectory(self, task: Task) -> Trajectory:
        em, f1 = float(self.info.get("em", 0.0)), float(self.info.get("f1", 0.0))
        meta = {"expert": True, "noise_kind": self.kind, "em": em, "f1": f1,
                "truncated": self.answer is None}
        return Trajectory(id=f"{task.id}-expert", task=task, steps=self.steps,
                          success=em >= 1.0, final_answer=self.answer, reward=em,
                          source="worldqa-expert", meta=meta)

    # -- reading through the tools ----------------------------------------------------------

    def visit(self, name: str, type_: str, thought: str) -> str:
        """search[name]; if another passage comes back, retry once with a typed query."""
        obs = self.act(thought, f"search[{name}]")
        title = observed_title(obs)
        if title is not None and title != name and not self.done:
            obs = self.act(f"The result is about {title}, not {name}. I should search "
                           f"for the {type_} {name} more specifically.",
                           f"search[{name} {type_}]")
        return obs

    def fetch(self, name: str, type_: str, field: str, thought: str) -> str | None:
        """The value of `field` for `name`, from the search result or follow-up lookups."""
        obs = self.visit(name, type_, thought)
        value = read_fact(obs, name, field)
        return value if value is not None else self._lookup(
            FIELD_KEYWORDS[field], lambda o: read_fact(o, name, field),
            f"The passage does not show the {DESC[field]} of {name} yet.")

    def fetch_list(self, name: str, type_: str, rel: str, thought: str) -> list[str] | None:
        obs = self.visit(name, type_, thought)
        found = read_list(obs, name, rel)
        return found if found is not None else self._lookup(
            LIST_KEYWORDS[rel], lambda o: read_list(o, name, rel),
            f"The passage does not list {listed(rel, name)} yet.")

    def _lookup(self, keywords: list[str], read, why: str):
        """lookup[keyword] through each keyword's results until `read` finds the fact."""
        used = 0
        for keyword in keywords:
            while used < MAX_LOOKUPS and not self.done:
                used += 1
                obs = self.act(f"{why} I will look up {keyword}.", f"lookup[{keyword}]")
                value = read(obs)
                if value is not None:
                    return value
                if obs.startswith("No ") or "No more results" in obs:
                    why = f"Nothing more under {keyword}."
                    break
                why = "That sentence is not the one I need."
        return None

    # -- noise --------------------------------------------------------------------------------

    def distractor(self, name: str, type_: str) -> str:
        """A plausible wrong entity of the same type (the noise model's only world access)."""
        pool = [e.name for e in self.world.of_type(type_) if e.name != name]
        return self.rng.choice(pool) if pool else name

    def hallucinate(self, field: str) -> str:
        if field in RELATIONS:
            return self.rng.choice(self.world.of_type(RELATIONS[field][1])).name
        if field == "has_capital":
            return self.rng.choice(self.world.of_type("city")).name
        if field in ("population", "length_km", "height_m"):
            return f"{self.rng.randint(100, 900) * 1000:,}"
        return str(self.rng.randint(1900, 2020))

    def corrupt(self, name: str, type_: str, chance: float = 1.0) -> str:
        """Under the wrong-entity noise, swap `name` for a distractor (once per episode)."""
        if self.kind == "wrong_entity" and not self._corrupted:
            if self.rng.random() < chance:
                self._corrupted = True
                return self.distractor(name, type_)
        return name

    def premature(self) -> bool:
        return self.kind == "premature_finish"


def _say(rng: random.Random, *options: str) -> str:
    return rng.choice(options)


# -- one function per operation (see families.py) ------------------------------------------


def op_read(x: Expert, fam: Family, slots: dict[str, str]) -> None:
    field, type_ = fam.fields[0], fam.types[0]
    if x.premature():
        guess = x.hallucinate(field)
        return x.finish(f"I am fairly sure the {DESC[field]} of {slots['a']} is {guess}.", guess)
    a = x.corrupt(slots["a"], type_)
    value = x.fetch(a, type_, field, _say(
        x.rng, f"I need to search {a} and find the {DESC[field]} of {a}.",
        f"I need to find the {DESC[field]} of {a}. Let me search {a}."))
    _conclude(x, f"The {DESC[field]} of {a} is {value}.", value)


def _conclude(x: Expert, found: str, value: Any) -> None:
    if value is None:
        return x.finish("I could not find the answer in the passages.", "unknown")
    x.finish(_say(x.rng, f"{found} So the answer is {value}.", f"{found}"), value)


def op_chain(x: Expert, fam: Family, slots: dict[str, str]) -> None:
    f1, f2 = fam.fields
    mid_type = RELATIONS[f1][1]
    a = x.corrupt(slots["a"], fam.types[0], chance=0.5)
    mid = x.fetch(a, fam.types[0], f1, _say(
        x.rng, f"I need to find the {DESC[f1]} of {a}, then the {DESC[f2]} of that {mid_type}.",
        f"First I need to search {a} to find the {DESC[f1]} of {a}."))
    if mid is None:
        return _conclude(x, "", None)
    if x.premature():
        return x.finish(f"The {DESC[f1]} of {a} is {mid}, so the answer is {mid}.", mid)
    mid = x.corrupt(mid, mid_type)
    value = x.fetch(mid, mid_type, f2, _say(
        x.rng, f"The {DESC[f1]} of {a} is {mid}. Now I need to find the {DESC[f2]} of {mid}.",
        f"{a}'s {DESC[f1]} is {mid}. Next I need to search {mid} and find the {DESC[f2]}."))
    _conclude(x, f"The {DESC[f2]} of {mid} is {value}.", value)


Said = tuple[str, Any]  # (thought, answer) for a finish step


def _two(x: Expert, fam: Family, slots: dict[str, str], field: str, intros: tuple[str, str],
         early: Callable[[str, str], Said], conclude: Callable[[str, str, str, str], Said]) -> None:
    """The shared plan of compare, gap and same: fetch `field` for slots a and b, then
    finish with `conclude(a, b, value of a, value of b)`.

    Each op differs only in its wording (`intros`, one drawn at random), in what it answers
    when the premature-finish noise stops it after the first value (`early(a, value of a)`)
    and in how it decides; a value not found makes the expert give up."""
    intro = _say(x.rng, *intros)  # drawn before `corrupt`, so seeded trajectories stay stable
    ta, tb = fam.types[0], fam.types[-1]
    a, b = slots["a"], x.corrupt(slots["b"], tb)
    va = x.fetch(a, ta, field, intro)
    if va is None:
        return _conclude(x, "", None)
    if x.premature():
        return x.finish(*early(a, va))
    vb = x.fetch(b, tb, field, _say(
        x.rng, f"The {DESC[field]} of {a} is {va}. Now I need the {DESC[field]} of {b}.",
        f"{a}: {va}. Next, search {b}."))
    if vb is None:
        return _conclude(x, "", None)
    x.finish(*conclude(a, b, va, vb))


def op_compare(x: Expert, fam: Family, slots: dict[str, str]) -> None:
    attr, direction = fam.fields

    def conclude(a: str, b: str, va: str, vb: str) -> Said:
        na, nb = parse_number(va), parse_number(vb)
        win = (a if na < nb else b) if direction == "min" else (a if na > nb else b)
        word = "smaller" if direction == "min" else "larger"
        return (f"{a}: {va}, {b}: {vb}. The {word} {DESC[attr]} belongs to {win}, so the "
                f"answer is {win}.", win)

    _two(x, fam, slots, attr, (
        f"I need to search {slots['a']} and {slots['b']} and compare their {DESC[attr]}.",
        f"To compare them I need the {DESC[attr]} of both. Let me search {slots['a']} first."),
        lambda a, va: (f"{a} has {DESC[attr]} {va}; that is probably the answer.", a), conclude)


def op_gap(x: Expert, fam: Family, slots: dict[str, str]) -> None:
    attr = fam.fields[0]

    def conclude(a: str, b: str, va: str, vb: str) -> Said:
        gap = abs(parse_number(va) - parse_number(vb))
        return f"{a}: {va}, {b}: {vb}. The difference is {gap} years.", gap

    _two(x, fam, slots, attr, (
        f"I need the {DESC[attr]} of {slots['a']} and of {slots['b']}, then the difference.",
        f"Let me search {slots['a']} for the {DESC[attr]} first."),
        lambda a, va: (f"{a} has {DESC[attr]} {va}.", va), conclude)


def op_same(x: Expert, fam: Family, slots: dict[str, str]) -> None:
    field = fam.fields[0]

    def conclude(a: str, b: str, va: str, vb: str) -> Said:
        same = va == vb
        return (f"{a}: {va}; {b}: {vb}. They are {'the same' if same else 'different'}, so "
                f"the answer is {'yes' if same else 'no'}.", "yes" if same else "no")

    _two(x, fam, slots, field, (
        f"I need the {DESC[field]} of {slots['a']} and of {slots['b']}, then check "
        "whether they are the same.", f"Let me search {slots['a']} for the {DESC[field]}."),
        lambda a, va: (f"The {DESC[field]} of {a} is {va}. They are probably the same.", "yes"),
        conclude)


def op_verify(x: Expert, fam: Family, slots: dict[str, str]) -> None:
    field = fam.fields[0]
    if x.premature():
        return x.finish(f"I believe {slots['b']} is right, so yes.", "yes")
    a = x.corrupt(slots["a"], fam.types[0])
    value = x.fetch(a, fam.types[0], field, _say(
        x.rng, f"I need to search {a} and check whether its {DESC[field]} is {slots['b']}.",
        f"Let me find the {DESC[field]} of {a}."))
    if value is None:
        return _conclude(x, "", None)
    yes = value == slots["b"]
    x.finish(f"The {DESC[field]} of {a} is {value}, so the answer is {'yes' if yes else 'no'}.",
             "yes" if yes else "no")


def op_count(x: Expert, fam: Family, slots: dict[str, str]) -> None:
    rel = fam.fields[0]
    if x.premature():
        guess = x.rng.randint(2, 8)
        return x.finish(f"I think the answer is {guess}: I remember {guess} of {listed(rel, slots['a'])}.", guess)
    a = x.corrupt(slots["a"], fam.types[0])
    items = x.fetch_list(a, fam.types[0], rel, _say(
        x.rng, f"I need to search {a} and count {listed(rel, a)}.",
        f"Let me search {a}; the article should list {listed(rel, a)}."))
    if items is None:
        return _conclude(x, "", None)
    x.finish(f"{listed(rel, a).capitalize()} are {', '.join(items)}: that is {len(items)}.",
             len(items))


def op_intersect(x: Expert, fam: Family, slots: dict[str, str]) -> None:
    ra, rb = fam.fields
    a, b = slots["a"], x.corrupt(slots["b"], fam.types[1])
    left = x.fetch_list(a, fam.types[0], ra, _say(
        x.rng, f"I need {listed(ra, a)} and {listed(rb, b)}, then the one in both lists.",
        f"Let me search {a} for {listed(ra, a)} first."))
    if left is None:
        return _conclude(x, "", None)
    if x.premature():
        return x.finish(f"{listed(ra, a).capitalize()} include {left[0]}; that must be it.", left[0])
    right = x.fetch_list(b, fam.types[1], rb, _say(
        x.rng, f"{listed(ra, a).capitalize()}: {', '.join(left)}. Now {listed(rb, b)}.",
        f"Next I need to search {b} for {listed(rb, b)}."))
    both = [n for n in left if n in (right or [])]
    if not both:
        return _conclude(x, "", None)
    x.finish(f"{both[0]} appears in both lists, so the answer is {both[0]}.", both[0])


def op_age(x: Expert, fam: Family, slots: dict[str, str]) -> None:
    rel, attr = fam.fields
    a = slots["a"]
    creator = x.fetch(a, fam.types[0], rel, _say(
        x.rng, f"I need the {DESC[rel]} of {a} and the {DESC[attr]}, then the {DESC[rel]}'s "
        "birth year.", f"Let me search {a} to find its {DESC[rel]} and {DESC[attr]}."))
    year = read_fact("\n".join(s.observation for s in x.steps), a, attr) if creator else None
    if year is None and creator is not None:
        year = x._lookup(FIELD_KEYWORDS[attr], lambda o: read_fact(o, a, attr),
                         f"I still need the {DESC[attr]} of {a}.")
    if creator is None or year is None:
        return _conclude(x, "", None)
    if x.premature():
        return x.finish(f"{a} dates from {year}, so the answer is {year}.", year)
    creator = x.corrupt(creator, "person")
    born = x.fetch(creator, "person", "birth_year", f"{a} is from {year}, by {creator}. Now I "
                   f"need the birth year of {creator}.")
    if born is None:
        return _conclude(x, "", None)
    age = parse_number(year) - parse_number(born)
    x.finish(f"{creator} was born in {born}, and {year} - {born} = {age}.", age)


OPS = {"read": op_read, "chain": op_chain, "compare": op_compare, "same": op_same,
       "verify": op_verify, "count": op_count, "intersect": op_intersect, "gap": op_gap,
       "age": op_age}
