"""A generated world: typed entities, the relations between them and numeric attributes.

The world is the single source of truth of the WorldQA suite. Everything else is derived
from it: the corpus renders it as prose, the question generator asks about it, and the
scorer grades against it. It is built from a seed with its own `random.Random`, never the
global random state, so `build_world(seed, n)` is a pure function of its arguments.

Types (9): person, city, country, company, university, film, book, river, mountain.
Relations (12, all single-valued, subject -> object): see `RELATIONS`.
Attributes (7 names, integer valued): see `ATTRIBUTES`.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field

from talentrl_cli.envs.worldqa.names import NameBook

TYPE_SHARES = {
    "person": 0.34, "city": 0.12, "country": 0.05, "company": 0.11, "university": 0.06,
    "film": 0.12, "book": 0.10, "river": 0.05, "mountain": 0.05,
}
MIN_COUNTS = {"country": 3, "city": 6, "university": 3, "company": 4, "film": 4, "book": 4,
              "river": 2, "mountain": 2, "person": 12}

# relation -> (subject type, object type)
RELATIONS: dict[str, tuple[str, str]] = {
    "located_in": ("city", "country"),
    "capital_of": ("city", "country"),
    "born_in": ("person", "city"),
    "studied_at": ("person", "university"),
    "campus_in": ("university", "city"),
    "headquartered_in": ("company", "city"),
    "founded_by": ("company", "person"),
    "directed_by": ("film", "person"),
    "produced_by": ("film", "company"),
    "written_by": ("book", "person"),
    "flows_through": ("river", "country"),
    "rises_in": ("mountain", "country"),
}
# attribute -> subject types
ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "birth_year": ("person",),
    "population": ("city", "country"),
    "founded": ("company", "university"),
    "released": ("film",),
    "published": ("book",),
    "length_km": ("river",),
    "height_m": ("mountain",),
}
YEAR_ATTRIBUTES = ("birth_year", "founded", "released", "published")


@dataclass
class Entity:
    """One world entity; `rels` maps a relation to the object's id."""

    id: str
    type: str
    name: str
    aliases: list[str] = field(default_factory=list)
    rels: dict[str, str] = field(default_factory=dict)
    attrs: dict[str, int] = field(default_factory=dict)
    pronoun: str = "it"


class World:
    """The entity table plus the indexes the corpus and question generators need."""

    def __init__(self, seed: int, entities: list[Entity]):
        self.seed = seed
        self.entities = entities
        self.by_id = {e.id: e for e in entities}
        self.by_name = {e.name: e for e in entities}
        self._inverse: dict[tuple[str, str], list[Entity]] = defaultdict(list)
        for e in entities:
            for rel, obj in e.rels.items():
                self._inverse[(rel, obj)].append(e)

    def of_type(self, type_: str) -> list[Entity]:
        return [e for e in self.entities if e.type == type_]

    def obj(self, entity: Entity, relation: str) -> Entity | None:
        """The object of `relation` for `entity`, or None when the fact does not exist."""
        oid = entity.rels.get(relation)
        return self.by_id[oid] if oid else None

    def subjects(self, relation: str, obj: Entity) -> list[Entity]:
        """Every entity whose `relation` points at `obj`, in id order (complete)."""
        return list(self._inverse.get((relation, obj.id), []))

    def types(self) -> set[str]:
        return {e.type for e in self.entities}

    def relations(self) -> set[str]:
        return {rel for e in self.entities for rel in e.rels}

    def attributes(self) -> set[str]:
        return {a for e in self.entities for a in e.attrs}


def type_counts(n_entities: int) -> dict[str, int]:
    """How many entities of each type; the remainder after rounding goes to persons."""
    counts = {t: max(MIN_COUNTS[t], int(n_entities * share)) for t, share in TYPE_SHARES.items()}
    counts["person"] += max(0, n_entities - sum(counts.values()))
    return counts


def build_world(seed: int, n_entities: int = 400) -> World:
    """Generate the world; the same (seed, n_entities) always gives the same world."""
    rng = random.Random(f"worldqa-world-{seed}-{n_entities}")
    counts = type_counts(n_entities)
    builder = _Builder(rng, NameBook(rng))
    builder.places(counts)
    builder.people(counts)
    builder.organisations(counts)
    builder.works(counts)
    builder.nature(counts)
    return World(seed, builder.entities)


class _Builder:
    """Adds entities type by type, so later types can link to earlier ones."""

    def __init__(self, rng: random.Random, names: NameBook):
        self.rng, self.names = rng, names
        self.entities: list[Entity] = []
        self.by_type: dict[str, list[Entity]] = defaultdict(list)

    def add(self, type_: str, make_name, **kw) -> Entity:
        """Add an entity named by `make_name()` (redrawn until its name and aliases are free)."""
        name, aliases = self.names.draw(make_name)
        e = Entity(f"{type_}_{len(self.by_type[type_]):04d}", type_, name, aliases, **kw)
        self.entities.append(e)
        self.by_type[type_].append(e)
        return e

    def spread(self, n: int, targets: list[Entity]) -> list[Entity]:
        """n picks from targets: every target once first (if n allows), then at random."""
        picks = list(targets[:n]) + [self.rng.choice(targets) for _ in range(n - len(targets))]
        self.rng.shuffle(picks)
        return picks

    def places(self, counts: dict[str, int]) -> None:
        for _ in range(counts["country"]):
            self.add("country", self.names.country,
                     attrs={"population": self.rng.randint(800_000, 95_000_000)})
        for country in self.spread(counts["city"], self.by_type["country"]):
            self.add("city", self.names.city, rels={"located_in": country.id},
                     attrs={"population": self.rng.randint(12_000, 6_500_000)})
        for country in self.by_type["country"]:
            cities = [c for c in self.by_type["city"] if c.rels["located_in"] == country.id]
            self.rng.choice(cities).rels["capital_of"] = country.id
        for city in self.spread(counts["university"], self.by_type["city"]):
            self.add("university", lambda city=city: self.names.university(city.name),
                     rels={"campus_in": city.id}, attrs={"founded": self.rng.randint(1150, 1990)})

    def people(self, counts: dict[str, int]) -> None:
        for city in self.spread(counts["person"], self.by_type["city"]):
            year = self.rng.randint(1880, 1995)
            rels = {"born_in": city.id}
            unis = [u for u in self.by_type["university"] if u.attrs["founded"] < year + 18]
            if unis and self.rng.random() < 0.8:
                rels["studied_at"] = self.rng.choice(unis).id
            self.add("person", self.names.person, rels=rels, attrs={"birth_year": year},
                     pronoun=self.rng.choice(["she", "he"]))

    def _creators(self, n_works: int, per_creator: float) -> list[Entity]:
        pool = self.rng.sample(self.by_type["person"], max(1, round(n_works / per_creator)))
        return self.spread(n_works, pool)

    def organisations(self, counts: dict[str, int]) -> None:
        for founder in self._creators(counts["company"], 1.5):
            year = min(2020, founder.attrs["birth_year"] + self.rng.randint(22, 60))
            self.add("company", self.names.company, attrs={"founded": year}, rels={
                "founded_by": founder.id,
                "headquartered_in": self.rng.choice(self.by_type["city"]).id})

    def works(self, counts: dict[str, int]) -> None:
        for director in self._creators(counts["film"], 2.4):
            year = min(2023, director.attrs["birth_year"] + self.rng.randint(25, 70))
            producers = [c for c in self.by_type["company"] if c.attrs["founded"] <= year]
            producer = self.rng.choice(producers or self.by_type["company"])
            self.add("film", self.names.title, attrs={"released": year},
                     rels={"directed_by": director.id, "produced_by": producer.id})
        for author in self._creators(counts["book"], 2.0):
            year = min(2023, author.attrs["birth_year"] + self.rng.randint(22, 75))
            self.add("book", self.names.title, attrs={"published": year},
                     rels={"written_by": author.id})

    def nature(self, counts: dict[str, int]) -> None:
        countries = self.by_type["country"]
        for country in self.spread(counts["river"], countries):
            self.add("river", self.names.river, rels={"flows_through": country.id},
                     attrs={"length_km": self.rng.randint(40, 4200)})
        for country in self.spread(counts["mountain"], countries):
            self.add("mountain", self.names.mountain, rels={"rises_in": country.id},
                     attrs={"height_m": self.rng.randint(700, 8600)})
