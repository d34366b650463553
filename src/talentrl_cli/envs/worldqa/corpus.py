"""Render the world as a Wikipedia-like corpus: one passage per entity, titled by its name.

A passage opens with an introductory sentence, then states every fact about its entity
(each with a template drawn at random from several, see `grammar`), the complete lists of
entities that point at it ("The films directed by X are ..."), and distractors: true but
irrelevant facts about other entities ("In the same year, Y was founded.") and generic
filler. Facts never refer to their subject by pronoun, so a fact can be read from any
search observation that shows its sentence; filler sentences do use pronouns, as prose does.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from talentrl_cli.envs.worldqa.grammar import (
    FACT_TEMPLATES,
    INTRO_TEMPLATES,
    LIST_TEMPLATES,
    format_value,
    render_list,
)
from talentrl_cli.envs.worldqa.world import RELATIONS, Entity, World

FILLER: dict[str, list[str]] = {
    "person": ["{P} has spoken often about the influence of {p2} family.",
               "{P} later moved abroad for several years.",
               "Critics have described {p2} work as patient and precise.",
               "{P} has received several national honours.",
               "In interviews, {p} rarely discusses {p2} private life."],
    "city": ["The city is known for its covered markets.", "It has a mild climate and long summers.",
             "Its old town is built around a stone bridge.", "The city hosts a festival every spring.",
             "Tourism is an important part of the local economy."],
    "country": ["The country has a long coastline.", "Its economy is based on trade and farming.",
                "The national language is spoken by most of the population.",
                "It is a member of several regional organisations."],
    "company": ["The company employs several thousand people.",
                "It expanded into foreign markets in later decades.",
                "Its products are sold in many countries.",
                "The company went public after a period of rapid growth."],
    "university": ["The university is organised into several faculties.",
                   "Its library holds a large collection of manuscripts.",
                   "It is known for its research in the natural sciences."],
    "film": ["The film received mixed reviews from critics.",
             "It was shot over a single summer.", "The score was praised by critics.",
             "It later gained a cult following."],
    "book": ["The book was translated into several languages.",
             "It received a literary prize.", "Reviewers praised its structure.",
             "A second edition followed some years later."],
    "river": ["The river is used for irrigation.", "Its banks are home to many bird species.",
              "Several dams were built along its course."],
    "mountain": ["The mountain is popular with climbers.", "Its slopes are covered in pine forest.",
                 "The first recorded ascent took place in the nineteenth century."],
}
DESCRIPTIONS = {
    "person": ["engineer", "architect", "painter", "physician", "chemist", "journalist"],
    "interest": ["music", "painting", "mathematics", "theatre", "astronomy", "poetry"],
    "city": ["port", "river", "mountain", "busy", "historic", "coastal"],
}
YEAR_VERBS = {"birth_year": "was born", "founded": "was founded", "released": "was released",
              "published": "was published"}
LIST_RELATIONS = list(LIST_TEMPLATES)


@dataclass(frozen=True)
class Document:
    """One passage of the corpus (the search tool wraps these in its own Passage type)."""

    id: str
    title: str
    text: str


def build_corpus(world: World, seed: int) -> list[Document]:
    """One passage per entity, in entity order; deterministic in (world, seed)."""
    rng = random.Random(f"worldqa-corpus-{seed}-{len(world.entities)}")
    by_year = _year_index(world)
    return [Document(e.id, e.name, render_passage(world, e, rng, by_year)) for e in world.entities]


def render_passage(world: World, e: Entity, rng: random.Random, by_year: dict) -> str:
    """Intro first, then facts and lists in shuffled order, with distractors mixed into the
    second half (so a search, which shows the first sentences, usually reaches the facts,
    and a long passage needs lookup[...])."""
    intro, covered = _intro(world, e, rng)
    body = [_fact(world, e, f, rng) for f in _fact_fields(e) if f not in covered]
    body += _lists(world, e, rng)
    rng.shuffle(body)
    for sentence in _distractors(e, rng, by_year):
        body.insert(rng.randint(len(body) // 2, len(body)), sentence)
    return " ".join([intro, *body])


def _fact_fields(e: Entity) -> list[str]:
    return [*e.rels, *e.attrs]


def _value(world: World, e: Entity, field: str) -> str:
    if field in RELATIONS:
        return world.by_id[e.rels[field]].name
    if field == "has_capital":
        return _capital(world, e).name
    return format_value(field, e.attrs[field])


def _capital(world: World, country: Entity) -> Entity:
    return next(c for c in world.subjects("capital_of", country))


def _fill(template: str, world: World, e: Entity, rng: random.Random) -> str:
    """Render one template for entity `e`; free fields get descriptive words."""
    values = {"s": e.name, "desc": _desc(e, rng)}
    for field in _fields(template):
        if field not in values:
            values[field] = _value(world, e, field)
    return template.format(**values)


def _fields(template: str) -> list[str]:
    import string

    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


def _desc(e: Entity, rng: random.Random) -> str:
    if e.type == "person":
        return rng.choice(DESCRIPTIONS["interest"])
    return rng.choice(DESCRIPTIONS.get(e.type, DESCRIPTIONS["city"]))


def _intro(world: World, e: Entity, rng: random.Random) -> tuple[str, set[str]]:
    """The opening sentence and the facts it already states."""
    if e.type in INTRO_TEMPLATES and rng.random() < 0.7:
        template = rng.choice(INTRO_TEMPLATES[e.type])
        return _fill(template, world, e, rng), set(_fields(template)) - {"s", "desc"}
    if e.type == "person":
        role = _role(world, e, rng)
        article = "an" if role[0] in "aeiou" else "a"
        return f"{e.name} (born {e.attrs['birth_year']}) is {article} {role}.", {"birth_year"}
    if e.type == "country":
        return f"{e.name}, officially the {e.aliases[0]}, is a sovereign country.", set()
    first = next(iter(e.rels), None) or next(iter(e.attrs))
    return _fact(world, e, first, rng), {first}


def _role(world: World, e: Entity, rng: random.Random) -> str:
    roles = [r for rel, r in (("directed_by", "film director"), ("written_by", "writer"),
                              ("founded_by", "entrepreneur")) if world.subjects(rel, e)]
    return render_list(roles) if roles else rng.choice(DESCRIPTIONS["person"])


def _fact(world: World, e: Entity, field: str, rng: random.Random) -> str:
    templates = FACT_TEMPLATES[field]
    if field == "birth_year":  # the "(born YEAR) is a ..." form is reserved for intros
        templates = templates[1:]
    return _fill(rng.choice(templates), world, e, rng)


def _lists(world: World, e: Entity, rng: random.Random) -> list[str]:
    """Complete reverse lists, plus 'The capital of X is Y' on a country."""
    out = []
    for rel in LIST_RELATIONS:
        if RELATIONS[rel][1] != e.type:
            continue
        members = world.subjects(rel, e)
        if members:
            template = rng.choice(LIST_TEMPLATES[rel])
            out.append(template.format(s=e.name, list=render_list([m.name for m in members])))
    if e.type == "country":
        out.append(_fill(rng.choice(FACT_TEMPLATES["has_capital"]), world, e, rng))
    return out


def _year_index(world: World) -> dict[int, list[tuple[Entity, str]]]:
    index: dict[int, list[tuple[Entity, str]]] = {}
    for e in world.entities:
        for field, verb in YEAR_VERBS.items():
            if field in e.attrs:
                index.setdefault(e.attrs[field], []).append((e, verb))
    return index


def _distractors(e: Entity, rng: random.Random, by_year: dict) -> list[str]:
    """One or two filler sentences, and a true same-year fact about another entity."""
    pronoun = e.pronoun
    possessive = {"she": "her", "he": "his"}.get(pronoun, "its")
    fills = rng.sample(FILLER[e.type], k=min(len(FILLER[e.type]), rng.choice([1, 2])))
    out = [f.format(P=pronoun.capitalize(), p=pronoun, p2=possessive) for f in fills]
    years = [e.attrs[f] for f in YEAR_VERBS if f in e.attrs]
    if years:
        others = [(o, verb) for o, verb in by_year.get(years[0], []) if o.id != e.id]
        if others and rng.random() < 0.6:
            other, verb = rng.choice(others)
            out.append(f"In the same year, {other.name} {verb}.")
    return out
