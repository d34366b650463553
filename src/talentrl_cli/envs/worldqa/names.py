"""Pronounceable, unique, generated names for the WorldQA entities.

Names are built from syllables so that no real-world knowledge can answer a question: the
only way to know a fact is to read the generated corpus. A `NameBook` hands out names and
remembers every name and alias it gave, so that no two entities share a surface string (a
shared alias would make a gold answer ambiguous). Names never contain `.`, `,`, `;`,
brackets or the word "and", because the corpus is split into sentences on `.` and lists are
written as "A, B and C".
"""

from __future__ import annotations

import random
import re

ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "h", "j",
          "br", "dr", "kr", "tr", "st", "th", "sh", "gr", "l", "m", "n", "r", "s", "t"]
VOWELS = ["a", "e", "i", "o", "u", "a", "e", "o", "ai", "ia", "y"]
CODAS = ["", "n", "r", "l", "s", "m", "th", "k", "nd", "x"]

ADJECTIVES = ["Silver", "Hollow", "Quiet", "Burning", "Distant", "Crimson", "Golden", "Broken",
              "Hidden", "Last", "Northern", "Pale", "Restless", "Sunken", "Velvet", "Winter",
              "Wandering", "Iron", "Glass", "Bitter", "Scarlet", "Lonely", "Endless", "Amber",
              "Frozen", "Silent", "Emerald", "Shattered", "Ancient", "Secret"]
NOUNS = ["Harbor", "Orchard", "Lantern", "Meridian", "Garden", "Tide", "Crown", "Mirror",
         "Frontier", "Compass", "Empire", "Echo", "Voyage", "Citadel", "Horizon", "River",
         "Tower", "Covenant", "Ember", "Forest", "Bridge", "Archive", "Season", "Shadow",
         "Signal", "Summit", "Valley", "Window", "Kingdom", "Letter"]
COMPANY_SUFFIXES = ["Industries", "Systems", "Dynamics", "Holdings", "Labs", "Motors", "Foods",
                    "Media", "Group", "Energy", "Textiles", "Airways", "Pharma", "Robotics"]
COUNTRY_FORMS = ["Republic of {}", "Kingdom of {}", "Federation of {}", "Commonwealth of {}"]
COUNTRY_ENDINGS = ["ia", "land", "ora", "istan", "ovia", "ania", "mark"]
CITY_PREFIXES = ["Port", "Fort", "Lake", "New", "Saint"]


class NameBook:
    """Draws unique names and aliases from a seeded `random.Random`."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used: set[str] = set()

    def word(self, syllables: int | None = None) -> str:
        """One capitalised word of 2-3 consonant-vowel syllables and an optional final coda."""
        n = syllables or self.rng.choice([2, 2, 3])
        parts = [self.rng.choice(ONSETS) + self.rng.choice(VOWELS) for _ in range(n)]
        return ("".join(parts) + self.rng.choice(CODAS)).capitalize()

    @staticmethod
    def key(text: str) -> str:
        """What must be unique: the lower-cased text without a leading article, because
        answer normalisation drops articles ("The Tide" and "Tide" would be one answer)."""
        return re.sub(r"^(the|an|a) ", "", text.lower())

    def free(self, text: str) -> bool:
        """Unused (see `key`) and free of the list/choice words "and" and "or"."""
        padded = f" {text.lower()} "
        return self.key(text) not in self.used and " and " not in padded and " or " not in padded

    def draw(self, make) -> tuple[str, list[str]]:
        """Call `make()` -> (name, aliases) until the name is free; keep only free aliases
        (an abbreviation that another entity already uses is dropped, not shared)."""
        for _ in range(10_000):
            name, aliases = make()
            aliases = [a for a in aliases if self.key(a) != self.key(name)]
            if self.free(name):
                self.used.add(self.key(name))
                kept = []
                for alias in aliases:
                    if self.free(alias):
                        self.used.add(self.key(alias))
                        kept.append(alias)
                return name, kept
        raise RuntimeError("name space exhausted; lower n_entities")

    # One maker per entity type: each returns (name, aliases).
    def person(self) -> tuple[str, list[str]]:
        first, last = self.word(2), self.word()
        return f"{first} {last}", [last]

    def city(self) -> tuple[str, list[str]]:
        base = self.word()
        if self.rng.random() < 0.25:
            return f"{self.rng.choice(CITY_PREFIXES)} {base}", [base]
        return base, []

    def country(self) -> tuple[str, list[str]]:
        base = self.word(2)
        base = base[:-1] if base[-1] in "aeiouy" else base
        name = base + self.rng.choice(COUNTRY_ENDINGS)
        return name, [self.rng.choice(COUNTRY_FORMS).format(name)]

    def company(self) -> tuple[str, list[str]]:
        base = self.word()
        return f"{base} {self.rng.choice(COMPANY_SUFFIXES)}", [base]

    def university(self, city: str) -> tuple[str, list[str]]:
        base = self.word(2) if self.rng.random() < 0.5 else city.split()[-1]
        form = self.rng.choice(["University of {}", "{} University", "{} Institute of Technology"])
        name = form.format(base)
        abbrev = "".join(w[0] for w in name.split() if w[0].isupper())
        return name, [abbrev] if len(abbrev) >= 2 else []

    def title(self) -> tuple[str, list[str]]:
        """A film or book title; the alias drops a leading article."""
        adj, noun = self.rng.choice(ADJECTIVES), self.rng.choice(NOUNS)
        form = self.rng.choice(["The {a} {n}", "{a} {n}", "The {n} of {w}", "{w}", "A {a} {n}"])
        name = form.format(a=adj, n=noun, w=self.word())
        if name.startswith("A ") and adj[0] in "AEIOU":
            name = "An " + name[2:]
        for article in ("The ", "An ", "A "):
            if name.startswith(article):
                return name, [name[len(article):]]
        return name, []

    def river(self) -> tuple[str, list[str]]:
        base = self.word()
        return f"{base} River", [base]

    def mountain(self) -> tuple[str, list[str]]:
        base = self.word()
        return f"Mount {base}", [base]
