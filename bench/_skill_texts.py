"""Generated skill and task texts for the MiniLM collections of `bench/retrieval.py` (a helper, not a benchmark).

Skill texts come from templates (verb x entity x tool x context x steps), rendered with the
index stage's default skill template, so they are varied but related, like mined skills;
task texts are questions built from the same vocabulary.
"""

from __future__ import annotations

import random

# conf/index/default.yaml: how the index stage embeds a skill.
SKILL_TEMPLATE = "{name}. When to use: {when_to_use} Steps: {steps}"

VERBS = ["parse", "validate", "aggregate", "deduplicate", "rank", "summarise", "translate",
         "reconcile", "index", "cache", "compress", "encrypt", "schedule", "monitor", "profile",
         "debug", "benchmark", "refactor", "migrate", "backfill", "normalise", "tokenise",
         "cluster", "classify", "forecast", "interpolate", "geocode", "scrape", "crawl",
         "visualise", "audit", "anonymise", "archive", "restore", "provision", "deploy",
         "roll back", "shard", "replicate", "throttle", "retry", "paginate", "diff", "merge",
         "annotate", "label", "transcribe", "resize", "crop", "render"]
ENTITIES = ["invoices", "server logs", "SQL tables", "CSV exports", "PDF contracts",
            "customer emails", "sensor readings", "stock prices", "weather records",
            "flight schedules", "genome sequences", "protein structures", "court rulings",
            "patent filings", "news articles", "tweets", "product reviews", "shipping manifests",
            "payroll records", "medical notes", "lab results", "satellite images", "audio clips",
            "video frames", "git commits", "pull requests", "bug reports", "API responses",
            "JSON configs", "YAML manifests", "Docker images", "Kubernetes pods", "DNS records",
            "TLS certificates", "user sessions", "clickstream events", "search queries",
            "recipe ingredients", "chess games", "football fixtures", "train timetables",
            "election results", "census tables", "Wikipedia infoboxes", "movie credits",
            "song lyrics", "exam scores", "library catalogues", "real-estate listings",
            "bank transactions", "insurance claims", "energy meter data", "traffic counts",
            "hotel bookings", "restaurant menus", "museum collections", "citation graphs",
            "email threads", "spreadsheet formulas", "map tiles"]
TOOLS = ["pandas", "SQL", "a regex", "jq", "awk", "the search tool", "a calculator", "spaCy",
         "scikit-learn", "PyTorch", "ffmpeg", "ImageMagick", "curl", "a headless browser",
         "Spark", "DuckDB", "PostgreSQL", "Redis", "Kafka", "Airflow", "Terraform", "Ansible",
         "git bisect", "a profiler", "a debugger", "unit tests", "a lookup table",
         "a Wikipedia lookup", "a unit converter", "a date parser", "an OCR engine",
         "a spell checker", "a graph database", "a vector index", "a rules engine",
         "a spreadsheet", "a shell script", "a cron job", "Prometheus", "Grafana"]
CONTEXTS = ["the input is too large to fit in memory", "records arrive out of order",
            "the source has inconsistent date formats", "duplicates span several files",
            "the question mentions two related entities",
            "the answer needs a numeric comparison", "a previous step returned an empty result",
            "the data mixes several languages",
            "the deadline is tight and partial results are acceptable",
            "the schema changed between versions", "values are missing or null",
            "the request must be reproducible", "the service rate-limits requests",
            "the user asks for a yes/no answer", "the facts must be traced to a source",
            "the entity name is ambiguous", "units differ between sources",
            "the result must be sorted by date", "several candidate answers look plausible",
            "the first search did not mention the entity", "the text contains OCR errors",
            "privacy rules forbid storing raw values", "the job must resume after a crash",
            "the output feeds a dashboard", "the numbers must add up to a known total"]
GOALS = ["find the earliest", "count the distinct", "compare the two", "extract every",
         "pick the largest", "check whether any", "list all", "compute the average of the",
         "identify the missing", "locate the duplicate", "estimate the total of the",
         "explain the change in the", "rank the top", "flag suspicious", "group related"]
STEP_TEMPLATES = [
    "{verb} the {entity} with {tool}",
    "check that the {entity} are complete before you {verb} them",
    "use {tool} to {verb} each batch of {entity}",
    "if {tool} fails, {verb} the {entity} by hand and note the gap",
    "{verb} the {entity} and write them to a temporary table",
    "compare the {entity} against the reference list",
    "{verb} only the {entity} that changed since the last run",
    "record which {entity} could not be processed",
    "sort the {entity} and keep the first match",
    "verify the result with {tool} on a small sample",
    "split the {entity} by source and {verb} each part",
    "answer with the value found, citing the {entity}",
]
TASK_TEMPLATES = [
    "How do I {verb} {entity} using {tool} when {context}?",
    "I need to {goal} {entity}; {context}. What should I do?",
    "{goal_cap} {entity} with {tool}, given that {context}.",
    "Our pipeline must {verb} {entity}. Which steps work when {context}?",
    "Task: {verb} the {entity} and {goal} results. Note: {context}.",
]


def _pick(rng: random.Random, words: list[str]) -> str:
    return words[rng.randrange(len(words))]


def _fill(rng: random.Random, template: str, entity: str | None = None,
          tool: str | None = None) -> str:
    """A template filled with random words; `entity`/`tool`, when given, are kept 70% of the time."""
    keep = rng.random() < 0.7
    return template.format(
        verb=_pick(rng, VERBS), entity=entity if entity and keep else _pick(rng, ENTITIES),
        tool=tool if tool and keep else _pick(rng, TOOLS), context=_pick(rng, CONTEXTS),
        goal=_pick(rng, GOALS), goal_cap=_pick(rng, GOALS).capitalize())


def skill_texts(n: int, seed: int = 0) -> list[str]:
    """n distinct skill texts; deterministic, and skill_texts(m) is a prefix of skill_texts(n > m)."""
    rng, seen, out = random.Random(seed), set(), []
    while len(out) < n:
        verb, entity, tool = _pick(rng, VERBS), _pick(rng, ENTITIES), _pick(rng, TOOLS)
        name = f"{verb.capitalize()} {entity} with {tool}"
        when = f"When {_pick(rng, CONTEXTS)} and you need to {_pick(rng, GOALS)} {entity}."
        steps = [_fill(rng, t, entity, tool)
                 for t in rng.sample(STEP_TEMPLATES, rng.randint(3, 5))]
        text = SKILL_TEMPLATE.format(name=name, when_to_use=when, steps="; ".join(steps))
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def task_texts(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [_fill(rng, _pick(rng, TASK_TEMPLATES)) for _ in range(n)]
