"""Question families: a strategy, the operation that answers it, and paraphrase templates.

A family fixes *what* is asked (e.g. "the birthplace of a film's director") and *how* it is
answered (`op` and `fields`, which the scripted expert executes through the search tool);
its templates are interchangeable wordings with slots `{a}` and `{b}`. Every template string
is unique across families, so a question's wording identifies its family (the expert parses
questions with `parse_question`).

Operations:
  read(f)                 search a, read fact f                            (single_hop)
  chain(f1, f2)           search a, read f1 -> m; search m, read f2         (bridge)
  compare(attr, min|max)  search a and b, read attr, pick the min/max       (comparison)
  same(f) / verify(f)     same value of f for a and b? / is f(a) == b?      (yes_no)
  count(rel)              search a, count the list of rel pointing at a     (counting)
  intersect(ra, rb)       search a and b, intersect their lists             (intersection)
  gap(attr)               search a and b, |attr(a) - attr(b)|               (temporal)
  age(rel, attr)          search a: rel -> p and attr; search p: birth year (temporal)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

STRATEGIES = ("single_hop", "bridge", "comparison", "yes_no", "counting", "intersection",
              "temporal")


@dataclass(frozen=True)
class Family:
    name: str
    strategy: str
    op: str
    fields: tuple[str, ...]
    types: tuple[str, ...]  # the entity types of slots a (and b)
    templates: tuple[str, ...]


def _f(strategy, op, fields, types, *templates) -> Family:
    name = f"{strategy}/{op}:{'+'.join(fields)}:{'+'.join(types)}"
    return Family(name, strategy, op, tuple(fields), tuple(types), tuple(templates))


SINGLE_HOP = [
    _f("single_hop", "read", ["born_in"], ["person"], "Where was {a} born?",
       "In which city was {a} born?", "What is the birthplace of {a}?"),
    _f("single_hop", "read", ["studied_at"], ["person"], "Where did {a} study?",
       "Which university did {a} attend?", "From which university did {a} graduate?"),
    _f("single_hop", "read", ["campus_in"], ["university"], "In which city is {a} located?",
       "Where is the campus of {a}?", "Which city is home to {a}?"),
    _f("single_hop", "read", ["headquartered_in"], ["company"], "Where is {a} headquartered?",
       "In which city does {a} have its headquarters?", "Which city is the head office of {a} in?"),
    _f("single_hop", "read", ["founded_by"], ["company"], "Who founded {a}?",
       "Who was the founder of {a}?", "By whom was {a} established?"),
    _f("single_hop", "read", ["directed_by"], ["film"], "Who directed {a}?",
       "Who was the director of the film {a}?", "Which filmmaker directed {a}?"),
    _f("single_hop", "read", ["produced_by"], ["film"], "Which company produced {a}?",
       "What was the production company of {a}?", "{a} was produced by which company?"),
    _f("single_hop", "read", ["written_by"], ["book"], "Who wrote {a}?",
       "Who is the author of {a}?", "Which writer wrote the book {a}?"),
    _f("single_hop", "read", ["located_in"], ["city"], "In which country is the city {a}?",
       "Which country is the city of {a} in?", "{a} is a city in which country?"),
    _f("single_hop", "read", ["has_capital"], ["country"], "What is the capital of {a}?",
       "Which city is the capital of {a}?", "Name the capital city of {a}."),
    _f("single_hop", "read", ["flows_through"], ["river"], "Which country does {a} flow through?",
       "Through which country does {a} run?", "{a} is a river in which country?"),
    _f("single_hop", "read", ["rises_in"], ["mountain"], "In which country does {a} rise?",
       "Which country is the mountain {a} located in?", "{a} is a mountain in which country?"),
    _f("single_hop", "read", ["birth_year"], ["person"], "When was {a} born?",
       "In what year was {a} born?", "What is the birth year of {a}?"),
    _f("single_hop", "read", ["founded"], ["company"], "When was the company {a} founded?",
       "In which year was the company {a} established?", "What year was {a} set up as a company?"),
    _f("single_hop", "read", ["founded"], ["university"], "When was the university {a} founded?",
       "In which year was {a} established as a university?",
       "What is the founding year of the university {a}?"),
    _f("single_hop", "read", ["released"], ["film"], "When was {a} released?",
       "In what year did the film {a} come out?", "What year was {a} first shown?"),
    _f("single_hop", "read", ["published"], ["book"], "When was {a} published?",
       "In what year was the book {a} published?", "What year did {a} first appear in print?"),
    _f("single_hop", "read", ["population"], ["city"], "What is the population of the city {a}?",
       "How many people live in the city of {a}?", "How many inhabitants does the city {a} have?"),
    _f("single_hop", "read", ["population"], ["country"],
       "What is the population of the country {a}?",
       "How many inhabitants does the country {a} have?", "What is the total population of {a}?"),
    _f("single_hop", "read", ["length_km"], ["river"], "How long is {a}?",
       "What is the length of {a} in kilometres?", "How many kilometres long is {a}?"),
    _f("single_hop", "read", ["height_m"], ["mountain"], "How high is {a}?",
       "What is the height of {a} in metres?", "How tall is {a}?"),
]

BRIDGE = [
    _f("bridge", "chain", ["directed_by", "born_in"], ["film"],
       "Where was the director of {a} born?", "In which city was the person who directed {a} born?",
       "What is the birthplace of the director of {a}?"),
    _f("bridge", "chain", ["written_by", "born_in"], ["book"],
       "Where was the author of {a} born?", "In which city was the writer of {a} born?",
       "What is the birthplace of the author of {a}?"),
    _f("bridge", "chain", ["founded_by", "born_in"], ["company"],
       "Where was the founder of {a} born?", "In which city was the person who founded {a} born?",
       "What is the birthplace of the founder of {a}?"),
    _f("bridge", "chain", ["produced_by", "headquartered_in"], ["film"],
       "Where is the company that produced {a} headquartered?",
       "In which city is the producer of {a} based?",
       "The company that produced {a} has its headquarters in which city?"),
    _f("bridge", "chain", ["born_in", "located_in"], ["person"], "In which country was {a} born?",
       "{a} was born in a city of which country?", "What is the country of birth of {a}?"),
    _f("bridge", "chain", ["studied_at", "campus_in"], ["person"],
       "In which city did {a} go to university?",
       "In which city is the university that {a} attended?",
       "Where is the university {a} graduated from located?"),
    _f("bridge", "chain", ["headquartered_in", "located_in"], ["company"],
       "In which country is {a} headquartered?", "Which country is the head office of {a} in?",
       "The headquarters of {a} are in which country?"),
    _f("bridge", "chain", ["written_by", "birth_year"], ["book"],
       "In what year was the author of {a} born?", "When was the writer of {a} born?",
       "What is the birth year of the author of {a}?"),
    _f("bridge", "chain", ["directed_by", "studied_at"], ["film"],
       "Where did the director of {a} study?", "Which university did the director of {a} attend?",
       "From which university did the person who directed {a} graduate?"),
    _f("bridge", "chain", ["campus_in", "located_in"], ["university"],
       "In which country is the university {a}?", "The university {a} is in which country?",
       "In which country is the campus of {a}?"),
    _f("bridge", "chain", ["founded_by", "birth_year"], ["company"],
       "When was the founder of {a} born?", "In what year was the person who founded {a} born?",
       "What is the birth year of the founder of {a}?"),
]

COMPARISON = [
    _f("comparison", "compare", ["birth_year", "min"], ["person", "person"],
       "Who was born first, {a} or {b}?", "Which of {a} and {b} was born earlier?",
       "Who is older, {a} or {b}?"),
    _f("comparison", "compare", ["founded", "min"], ["company", "company"],
       "Which company was founded first, {a} or {b}?", "Which is the older company, {a} or {b}?",
       "Was {a} or {b} founded earlier?"),
    _f("comparison", "compare", ["founded", "min"], ["university", "university"],
       "Which university is older, {a} or {b}?",
       "Which university was founded first, {a} or {b}?",
       "Of {a} and {b}, which university was established earlier?"),
    _f("comparison", "compare", ["released", "min"], ["film", "film"],
       "Which film came out first, {a} or {b}?", "Which was released earlier, {a} or {b}?",
       "Of the films {a} and {b}, which is older?"),
    _f("comparison", "compare", ["published", "max"], ["book", "book"],
       "Which book was published more recently, {a} or {b}?",
       "Which is the newer book, {a} or {b}?", "Of {a} and {b}, which book came out later?"),
    _f("comparison", "compare", ["population", "max"], ["city", "city"],
       "Which city has more inhabitants, {a} or {b}?",
       "Which is the larger city by population, {a} or {b}?",
       "Is {a} or {b} the more populous city?"),
    _f("comparison", "compare", ["population", "max"], ["country", "country"],
       "Which country has a larger population, {a} or {b}?",
       "Is {a} or {b} the more populous country?",
       "Of the countries {a} and {b}, which has more people?"),
    _f("comparison", "compare", ["length_km", "max"], ["river", "river"],
       "Which river is longer, {a} or {b}?", "Is {a} or {b} the longer river?",
       "Of {a} and {b}, which river is longer?"),
    _f("comparison", "compare", ["height_m", "max"], ["mountain", "mountain"],
       "Which mountain is higher, {a} or {b}?", "Which is taller, {a} or {b}?",
       "Of {a} and {b}, which mountain has the higher summit?"),
]

YES_NO = [
    _f("yes_no", "same", ["born_in"], ["person", "person"],
       "Were {a} and {b} born in the same city?", "Do {a} and {b} share the same birthplace?",
       "Is it true that {a} and {b} were born in the same city?"),
    _f("yes_no", "same", ["located_in"], ["city", "city"], "Are {a} and {b} in the same country?",
       "Are the cities {a} and {b} located in the same country?",
       "Do {a} and {b} lie in the same country?"),
    _f("yes_no", "same", ["headquartered_in"], ["company", "company"],
       "Are {a} and {b} headquartered in the same city?",
       "Do {a} and {b} have their headquarters in the same city?",
       "Is it true that {a} and {b} share a headquarters city?"),
    _f("yes_no", "same", ["directed_by"], ["film", "film"],
       "Were {a} and {b} directed by the same person?",
       "Do the films {a} and {b} have the same director?",
       "Did the same director make both {a} and {b}?"),
    _f("yes_no", "verify", ["directed_by"], ["film", "person"], "Was {a} directed by {b}?",
       "Did {b} direct the film {a}?", "Is {b} the director of {a}?"),
    _f("yes_no", "verify", ["written_by"], ["book", "person"], "Was {a} written by {b}?",
       "Did {b} write the book {a}?", "Is {b} the author of {a}?"),
    _f("yes_no", "verify", ["has_capital"], ["country", "city"], "Is {b} the capital of {a}?",
       "Is the capital of {a} the city of {b}?", "Does {a} have {b} as its capital?"),
]

COUNTING = [
    _f("counting", "count", ["directed_by"], ["person"], "How many films did {a} direct?",
       "How many films has {a} directed?", "What is the number of films directed by {a}?"),
    _f("counting", "count", ["written_by"], ["person"], "How many books did {a} write?",
       "How many books has {a} written?", "What is the number of books written by {a}?"),
    _f("counting", "count", ["founded_by"], ["person"], "How many companies did {a} found?",
       "How many companies has {a} founded?", "What is the number of companies founded by {a}?"),
    _f("counting", "count", ["born_in"], ["city"], "How many notable people were born in {a}?",
       "How many notable people come from {a}?",
       "What is the number of notable people born in {a}?"),
    _f("counting", "count", ["headquartered_in"], ["city"],
       "How many companies are headquartered in {a}?",
       "How many companies have their headquarters in {a}?",
       "What is the number of companies based in {a}?"),
    _f("counting", "count", ["located_in"], ["country"], "How many cities does {a} have?",
       "How many cities are there in {a}?", "What is the number of cities in {a}?"),
    _f("counting", "count", ["studied_at"], ["university"],
       "How many notable alumni does {a} have?", "How many notable people graduated from {a}?",
       "What is the number of notable alumni of {a}?"),
    _f("counting", "count", ["produced_by"], ["company"], "How many films did {a} produce?",
       "How many films has {a} produced?", "What is the number of films produced by {a}?"),
    _f("counting", "count", ["flows_through"], ["country"], "How many rivers flow through {a}?",
       "How many rivers cross {a}?", "What is the number of rivers in {a}?"),
]

INTERSECTION = [
    _f("intersection", "intersect", ["born_in", "studied_at"], ["city", "university"],
       "Which person born in {a} studied at {b}?", "Who was born in {a} and graduated from {b}?",
       "Which alumnus of {b} was born in {a}?"),
    _f("intersection", "intersect", ["founded_by", "headquartered_in"], ["person", "city"],
       "Which company founded by {a} is headquartered in {b}?",
       "Which company started by {a} is based in {b}?",
       "Name the company that {a} founded whose headquarters are in {b}."),
    _f("intersection", "intersect", ["directed_by", "produced_by"], ["person", "company"],
       "Which film directed by {a} was produced by {b}?", "Which film did {a} direct for {b}?",
       "Name the film directed by {a} and produced by {b}."),
]

TEMPORAL = [
    _f("temporal", "gap", ["birth_year"], ["person", "person"],
       "How many years apart were {a} and {b} born?",
       "What is the difference in years between the births of {a} and {b}?",
       "How many years separate the birth of {a} from that of {b}?"),
    _f("temporal", "gap", ["founded"], ["company", "company"],
       "How many years apart were {a} and {b} founded?",
       "How many years passed between the founding of {a} and that of {b}?",
       "What is the gap in years between the founding of {a} and of {b}?"),
    _f("temporal", "gap", ["released"], ["film", "film"],
       "How many years apart were the films {a} and {b} released?",
       "How many years passed between the release of {a} and that of {b}?",
       "What is the gap in years between the films {a} and {b}?"),
    _f("temporal", "age", ["directed_by", "released"], ["film"],
       "How old was the director of {a} when the film was released?",
       "At what age did the director of {a} release the film?",
       "How many years old was the person who directed {a} when it came out?"),
    _f("temporal", "age", ["written_by", "published"], ["book"],
       "How old was the author of {a} when the book was published?",
       "At what age did the author of {a} publish it?",
       "How many years old was the writer of {a} when it first appeared?"),
    _f("temporal", "age", ["founded_by", "founded"], ["company"],
       "How old was the founder of {a} when the company was founded?",
       "At what age did the founder of {a} establish it?",
       "How many years old was the person who founded {a} at its founding?"),
]

FAMILIES: list[Family] = SINGLE_HOP + BRIDGE + COMPARISON + YES_NO + COUNTING + INTERSECTION + TEMPORAL
BY_NAME = {f.name: f for f in FAMILIES}


@lru_cache(maxsize=1)
def _parsers() -> list[tuple[int, re.Pattern[str], Family, int]]:
    """Template regexes, the longest literal text first, so the most specific wins."""
    out = []
    for family in FAMILIES:
        for index, template in enumerate(family.templates):
            parts = re.split(r"(\{[ab]\})", template)
            literal = sum(len(p) for p in parts if p not in ("{a}", "{b}"))
            regex = "".join(f"(?P<{p[1]}>.+?)" if p in ("{a}", "{b}") else re.escape(p)
                            for p in parts)
            out.append((literal, re.compile("^" + regex + "$"), family, index))
    out.sort(key=lambda item: -item[0])
    return out


def parse_question(question: str) -> tuple[Family, int, dict[str, str]] | None:
    """(family, template index, slot names) for a question in one of the known wordings."""
    for _, regex, family, index in _parsers():
        match = regex.match(question.strip())
        if match:
            return family, index, match.groupdict()
    return None
