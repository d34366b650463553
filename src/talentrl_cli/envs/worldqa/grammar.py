"""The sentence templates of the corpus, and the reader that parses them back.

The corpus writer and the scripted expert share this module: the writer renders facts with
these templates, and the expert reads facts out of search observations by matching the same
templates. This is the expert's knowledge of the *language* of the corpus, not of the world:
it can only read a fact that the search tool actually showed it.

A template is a sentence with fields: `{s}` is the subject (the passage's entity), a field
named after a relation or attribute (`{born_in}`, `{released}`) holds that fact's value, a
field `list:<relation>` holds a complete "A, B and C" list of the entities whose relation
points at the subject, and any other field (`{desc}`) is free text. One sentence can carry
several facts (a film's first sentence gives its year and its director).
"""

from __future__ import annotations

import re
from functools import lru_cache

# Facts about the subject itself. Keys are the facts each template can carry.
FACT_TEMPLATES: dict[str, list[str]] = {
    "located_in": ["{s} is a city in {located_in}.", "{s} is a city located in {located_in}.",
                   "The city of {s} is situated in {located_in}.",
                   "{s} is a {desc} city in {located_in}."],
    "capital_of": ["{s} is the capital of {capital_of}.",
                   "{s} serves as the capital city of {capital_of}.",
                   "{s} has been the seat of government of {capital_of} for a long time."],
    "has_capital": ["The capital of {s} is {has_capital}.",
                    "Its government sits in {has_capital}, the capital of {s}."],
    "born_in": ["{s} was born in {born_in}.", "{s} was born and raised in {born_in}.",
                "Born in {born_in}, {s} showed an early interest in {desc}.",
                "{s} was born in the city of {born_in}."],
    "studied_at": ["{s} studied at {studied_at}.", "{s} graduated from {studied_at}.",
                   "{s} received a degree from {studied_at}.",
                   "{s} attended {studied_at} as a young student."],
    "campus_in": ["{s} is a university in {campus_in}.",
                  "{s} is located in the city of {campus_in}.",
                  "The main campus of {s} is in {campus_in}."],
    "headquartered_in": ["{s} is headquartered in {headquartered_in}.",
                         "{s} has its headquarters in {headquartered_in}.",
                         "The head office of {s} is located in {headquartered_in}."],
    "founded_by": ["{s} was founded by {founded_by}.", "{founded_by} founded {s}.",
                   "{s} was established by the entrepreneur {founded_by}."],
    "directed_by": ["{s} was directed by {directed_by}.", "{directed_by} directed {s}.",
                    "The film {s} was made by the director {directed_by}."],
    "produced_by": ["{s} was produced by {produced_by}.",
                    "The production company behind {s} was {produced_by}.",
                    "{produced_by} produced {s}."],
    "written_by": ["{s} was written by {written_by}.", "{written_by} is the author of {s}.",
                   "{s} is a work by the writer {written_by}."],
    "flows_through": ["{s} flows through {flows_through}.",
                      "{s} is a river in {flows_through}.",
                      "{s} runs across {flows_through} before reaching the sea."],
    "rises_in": ["{s} is a mountain in {rises_in}.", "{s} rises in {rises_in}.",
                 "{s} stands in the highlands of {rises_in}."],
    "birth_year": ["{s} (born {birth_year}) is {desc}.", "{s} was born in {birth_year}.",
                   "{s} was born in the year {birth_year}."],
    "population": ["{s} has a population of {population}.",
                   "The population of {s} is about {population}.",
                   "At the last census, {s} had {population} inhabitants."],
    "founded": ["{s} was founded in {founded}.", "{s} was established in {founded}.",
                "Since its founding in {founded}, {s} has grown steadily."],
    "released": ["{s} was released in {released}.", "{s} premiered in {released}.",
                 "The film {s} first came out in {released}."],
    "published": ["{s} was published in {published}.",
                  "{s} first appeared in print in {published}.",
                  "First published in {published}, {s} was widely read."],
    "length_km": ["{s} is {length_km} kilometres long.", "{s} has a length of {length_km} km.",
                  "With a length of {length_km} kilometres, {s} is a major waterway."],
    "height_m": ["{s} is {height_m} metres high.", "{s} reaches a height of {height_m} m.",
                 "The summit of {s} stands {height_m} metres above sea level."],
}

# Opening sentences that carry two facts at once; the reader tries them for both.
INTRO_TEMPLATES: dict[str, list[str]] = {
    "film": ["{s} is a {released} film directed by {directed_by}.",
             "{s} is a film by {directed_by}, released in {released}."],
    "book": ["{s} is a {published} book written by {written_by}.",
             "{s} is a novel by {written_by}, first published in {published}."],
    "company": ["{s} is a company founded in {founded} and headquartered in {headquartered_in}."],
    "university": ["{s} is a university in {campus_in}, founded in {founded}."],
}

# Complete lists of the entities whose relation points at the subject ("reverse" facts).
LIST_TEMPLATES: dict[str, list[str]] = {
    "born_in": ["Notable people born in {s} are {list}.", "People from {s} include {list}.",
                "{s} is the birthplace of {list}."],
    "studied_at": ["Notable alumni of {s} are {list}.", "Graduates of {s} include {list}.",
                   "{s} counts {list} among its former students."],
    "campus_in": ["Universities in {s} are {list}.", "{s} is home to the universities {list}.",
                  "Higher education in {s} is offered by {list}."],
    "headquartered_in": ["Companies headquartered in {s} are {list}.",
                         "{s} hosts the headquarters of {list}.",
                         "Businesses based in {s} include {list}."],
    "located_in": ["The cities of {s} are {list}.", "Cities in {s} include {list}.",
                   "{s} has the cities {list}."],
    "founded_by": ["{s} is the founder of {list}.", "Companies founded by {s} are {list}.",
                   "{s} started the companies {list}."],
    "directed_by": ["The films directed by {s} are {list}.", "{s} directed the films {list}.",
                    "As a director, {s} made {list}."],
    "written_by": ["The books written by {s} are {list}.", "{s} wrote the books {list}.",
                   "As a writer, {s} published {list}."],
    "produced_by": ["Films produced by {s} are {list}.", "{s} produced the films {list}.",
                    "The productions of {s} include {list}."],
    "flows_through": ["The rivers of {s} are {list}.", "Rivers flowing through {s} include {list}.",
                      "{s} is crossed by {list}."],
    "rises_in": ["The mountains of {s} are {list}.", "Peaks in {s} include {list}.",
                 "The highest ground of {s} is formed by {list}."],
}

# Words the expert passes to lookup[...] to find a fact (or list) that the search
# observation cut off; every template of a field contains at least one of them (tested).
FIELD_KEYWORDS: dict[str, list[str]] = {
    "located_in": ["city"], "capital_of": ["capital"], "has_capital": ["capital"],
    "born_in": ["born"], "studied_at": ["studied", "graduated", "degree", "attended"],
    "campus_in": ["university in", "located in", "campus"],
    "headquartered_in": ["headquarter", "head office"],
    "founded_by": ["founded", "established by"], "directed_by": ["directed", "director"],
    "produced_by": ["produced", "production"], "written_by": ["written", "author", "writer"],
    "flows_through": ["flows", "river in", "runs across"],
    "rises_in": ["mountain in", "rises", "highlands"], "birth_year": ["born"],
    "population": ["population", "inhabitants"], "founded": ["founded", "established", "founding"],
    "released": ["released", "premiered", "came out", "film"],
    "published": ["published", "in print"], "length_km": ["long", "length"],
    "height_m": ["high", "height", "metres"],
}
LIST_KEYWORDS: dict[str, list[str]] = {
    "born_in": ["born", "people from", "birthplace"],
    "studied_at": ["alumni", "graduates", "students"],
    "campus_in": ["universities", "higher education"],
    "headquartered_in": ["headquarter", "businesses"], "located_in": ["cities"],
    "founded_by": ["companies", "founder"], "directed_by": ["films", "director"],
    "written_by": ["books", "writer"], "produced_by": ["films", "productions"],
    "flows_through": ["rivers", "crossed"], "rises_in": ["mountains", "peaks", "highest"],
}

NUMBER_FIELDS = ("population", "length_km", "height_m")
YEAR_FIELDS = ("birth_year", "founded", "released", "published")
_NAME = r"[A-Z][^.;(),]*?"  # names never contain these
_LIST = r"[A-Z][^.;()]*?"
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+")
_LIST_SPLIT = re.compile(r",\s+|\s+and\s+")


def format_value(field: str, value) -> str:
    """Render a fact value as the corpus writes it (thousands separators for sizes)."""
    if field in NUMBER_FIELDS:
        return f"{int(value):,}"
    return str(value)


def parse_number(text: str) -> int:
    return int(text.replace(",", ""))


def split_list(text: str) -> list[str]:
    """'A, B and C' -> ['A', 'B', 'C']; names never contain commas or the word 'and'."""
    return [part.strip() for part in _LIST_SPLIT.split(text) if part.strip()]


def render_list(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


_PREFIX = re.compile(r"^(?:\(Result \d+ / \d+\)\s*|[^:.]{1,120}:\s+)")


def sentences(text: str) -> list[str]:
    """Split an observation into sentences (names never contain a full stop), dropping the
    tool's framing: a leading 'Title: ' and lookup's '(Result i / n) '."""
    out = []
    for line in text.splitlines():
        for sentence in _SENTENCE_SPLIT.split(line.strip()):
            sentence = _PREFIX.sub("", sentence.strip(), count=1)
            if sentence:
                out.append(sentence)
    return out


def observed_title(observation: str) -> str | None:
    """The passage title a search observation starts with ('Title: text'), if any."""
    head, sep, _ = observation.partition(": ")
    return head.strip() if sep and "\n" not in head and "." not in head else None


def _value_pattern(field: str) -> str:
    if field in YEAR_FIELDS:
        return r"\d{3,4}"
    if field in NUMBER_FIELDS:
        return r"\d[\d,]*"
    return _NAME


@lru_cache(maxsize=1 << 16)
def _compile(template: str, target: str, subject: str) -> re.Pattern[str]:
    """A regex for `template` capturing field `target` as group `v`, subject fixed."""
    parts = re.split(r"(\{[^}]+\})", template)
    out = []
    for part in parts:
        if part == "{s}":
            out.append(re.escape(subject))
        elif part == "{" + target + "}":
            out.append(f"(?P<v>{_LIST if target == 'list' else _value_pattern(target)})")
        elif part.startswith("{"):
            out.append(r".+?")
        else:
            out.append(re.escape(part))
    return re.compile("^" + "".join(out) + "$")


def templates_for(field: str) -> list[str]:
    """Every template that carries `field` (a relation, attribute or has_capital)."""
    found = list(FACT_TEMPLATES.get(field, []))
    for intros in INTRO_TEMPLATES.values():
        found += [t for t in intros if "{" + field + "}" in t]
    return found


def read_fact(observation: str, subject: str, field: str) -> str | None:
    """The value of `field` for `subject` stated in `observation`, or None if not shown."""
    for sentence in sentences(observation):
        for template in templates_for(field):
            match = _compile(template, field, subject).match(sentence)
            if match:
                return match["v"]
    return None


def read_list(observation: str, subject: str, relation: str) -> list[str] | None:
    """The complete list of entities whose `relation` points at `subject`, if shown."""
    for sentence in sentences(observation):
        for template in LIST_TEMPLATES.get(relation, []):
            match = _compile(template, "list", subject).match(sentence)
            if match:
                return split_list(match["v"])
    return None
