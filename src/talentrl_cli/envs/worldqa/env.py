"""`env=worldqa`: the embedded, generated, offline QA suite with a search tool.

    talentrl envs sample worldqa -n 3
    talentrl envs sample worldqa -n 3 env.seed=1 env.noise=0.5 env.retriever=lexical
    talentrl mine source=worldqa

A seeded world (`world`) is rendered as a passage corpus (`corpus`), questions of seven
strategy types are generated from it (`questions`), and episodes run ReAct-style with
`search[query]`, `lookup[keyword]` and `finish[answer]` over the corpus, through the
project's shared `SearchTool` (dense retrieval with the sentence embedder by default;
`retriever: lexical` swaps in character n-gram TF-IDF vectors, which need no model and
build in under a second, for tests and quick runs). The reward is EM on
`finish` (F1 is reported in `info`); an episode without an answer after `max_steps`
actions ends with reward 0. The episode loop itself is `react_env.SearchEnvironment`,
shared with `env=qa`, so observations and step formats are the same by construction.

The world, corpus, task splits and search tool depend only on the settings, so they are
built once per process and cached (`functools.lru_cache`, keyed by the settings that
shape them); `fork()` and new instances are cheap. Tasks are generated without building
the search tool: listing tasks needs no model.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from talentrl_cli.envs.base import ENVS
from talentrl_cli.envs.react_env import SearchEnvironment
from talentrl_cli.envs.search import Passage, SearchTool
from talentrl_cli.envs.settings import settings_from_cfg
from talentrl_cli.envs.worldqa.corpus import Document, build_corpus
from talentrl_cli.envs.worldqa.expert import Expert
from talentrl_cli.envs.worldqa.questions import generate_tasks
from talentrl_cli.envs.worldqa.world import World, build_world
from talentrl_cli.errors import ConfigError
from talentrl_cli.schema import Task, Trajectory

SPLITS = ("train", "dev", "test")
RETRIEVERS = ("dense", "lexical")


@dataclass
class WorldQASettings:
    """The `env:` section for `worldqa` (see conf/env/worldqa.yaml); unknown keys fail."""

    name: str = "worldqa"
    seed: int | None = None
    n_entities: int = 400
    n_tasks: int = 2000
    split_fractions: dict[str, float] = field(
        default_factory=lambda: {"train": 0.8, "dev": 0.1, "test": 0.1})
    top_k: int = 5
    max_sentences: int = 5
    weak_below: float = 0.5
    max_steps: int = 12
    noise: float = 0.2
    retriever: str = "dense"
    embedder: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_cfg(cls, cfg: Any, seed: int = 0) -> WorldQASettings:
        settings = settings_from_cfg(cls, cfg, "worldqa")
        settings.seed = int(seed if settings.seed is None else settings.seed)
        settings.validate()
        return settings

    def validate(self) -> None:
        if self.retriever not in RETRIEVERS:
            raise ConfigError(f"env.retriever must be one of {', '.join(RETRIEVERS)}, "
                              f"got {self.retriever!r}")
        if self.n_entities < 60 or self.n_tasks < 1 or self.max_steps < 1 or self.top_k < 1:
            raise ConfigError("env.n_entities must be >= 60 and env.n_tasks, env.max_steps, "
                              "env.top_k >= 1")
        if not 0.0 <= float(self.noise) <= 1.0:
            raise ConfigError(f"env.noise must be in [0, 1], got {self.noise}")
        fracs = self.split_fractions
        if set(fracs) != set(SPLITS) or any(v < 0 for v in fracs.values()) or not sum(fracs.values()):
            raise ConfigError(f"env.split_fractions needs non-negative weights for "
                              f"{', '.join(SPLITS)}, got {fracs}")

    def fractions(self) -> tuple[tuple[str, float], ...]:
        total = sum(self.split_fractions.values())
        return tuple((s, float(self.split_fractions[s]) / total) for s in SPLITS)


# -- shared, cached state --------------------------------------------------------------------


@lru_cache(maxsize=4)
def shared_world(seed: int, n_entities: int) -> tuple[World, tuple[Document, ...]]:
    """The world and its corpus (about 0.3 s for 400 entities)."""
    world = build_world(seed, n_entities)
    return world, tuple(build_corpus(world, seed))


@lru_cache(maxsize=8)
def shared_tasks(seed: int, n_entities: int, n_tasks: int,
                 fractions: tuple[tuple[str, float], ...]) -> dict[str, tuple[Task, ...]]:
    world, _ = shared_world(seed, n_entities)
    splits = generate_tasks(world, seed, n_tasks, dict(fractions))
    return {name: tuple(tasks) for name, tasks in splits.items()}


class LexicalEmbedder:
    """Character 3-4-gram TF-IDF vectors (hashed, IDF fitted on the corpus) with the title
    line boosted: no model, deterministic, builds in under a second for 400 passages. On
    this corpus of made-up names it finds an entity's passage by name as reliably as MiniLM
    (`retriever: lexical`, for tests and quick runs)."""

    name = "lexical-char34-tfidf"

    def __init__(self, corpus_texts: list[str], n_features: int = 4096, title_boost: float = 3.0):
        from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer

        self.hasher = HashingVectorizer(analyzer="char_wb", ngram_range=(3, 4),
                                        n_features=n_features, alternate_sign=False, norm=None)
        self.idf = TfidfTransformer(sublinear_tf=True).fit(self.hasher.transform(corpus_texts))
        self.title_boost = float(title_boost)

    def _tfidf(self, texts: list[str]) -> np.ndarray:
        return self.idf.transform(self.hasher.transform(texts)).toarray()

    def encode(self, texts) -> np.ndarray:
        """Rows for `texts`; a text's first line (a passage title, or a whole query) counts
        1 + title_boost times."""
        texts = list(texts)
        first = [t.split("\n", 1)[0] for t in texts]
        return (self._tfidf(texts) + self.title_boost * self._tfidf(first)).astype(np.float32)


@lru_cache(maxsize=4)
def _shared_tool(seed: int, n_entities: int, retriever: str, embedder_json: str,
                 top_k: int, max_sentences: int, weak_below: float) -> SearchTool:
    _, docs = shared_world(seed, n_entities)
    passages = [Passage(d.id, d.title, d.text) for d in docs]
    if retriever == "lexical":
        embedder: Any = LexicalEmbedder([p.embed_text() for p in passages])
    else:  # the embedder caches vectors on disk (${TALENTRL_CACHE}/embeddings by default)
        from talentrl_cli.embedding import Embedder

        embedder = Embedder.from_config(json.loads(embedder_json))
    return SearchTool(passages, embedder, top_k=top_k, weak_below=weak_below,
                      max_sentences=max_sentences)


def shared_tool(s: WorldQASettings) -> SearchTool:
    """The per-process search tool for these settings (built on first use)."""
    key = json.dumps(s.embedder, sort_keys=True, default=str)
    return _shared_tool(s.seed, s.n_entities, s.retriever, key, s.top_k, s.max_sentences,
                        float(s.weak_below))


# -- the environment ---------------------------------------------------------------------------


@ENVS.register("worldqa")
class WorldQAEnv(SearchEnvironment):
    """Generated offline QA world (seven strategies) with search/lookup/finish and an expert."""

    name = "worldqa"

    def __init__(self, cfg: Any = None, seed: int = 0):
        super().__init__(cfg, seed)
        self.settings = WorldQASettings.from_cfg(cfg, seed)
        self.seed = self.settings.seed

    @property
    def world(self) -> World:
        return shared_world(self.seed, self.settings.n_entities)[0]

    @property
    def corpus(self) -> tuple[Document, ...]:
        return shared_world(self.seed, self.settings.n_entities)[1]

    @property
    def tool(self) -> SearchTool:
        return shared_tool(self.settings)

    def tasks(self, split: str) -> list[Task]:
        if split not in SPLITS:
            raise ConfigError(f"unknown split {split!r} (known: {', '.join(SPLITS)})")
        s = self.settings
        return list(shared_tasks(self.seed, s.n_entities, s.n_tasks, s.fractions())[split])

    # -- what the episode loop (SearchEnvironment) asks of this env ----------------------------

    def describe_tools(self) -> str:
        # one line: it is in every execution prompt (see prompts.py on the token budget)
        return "search[query] finds an article; lookup[keyword] its next sentence with keyword; finish[answer]."

    def score(self, task: Task, answer: str | None) -> dict[str, float]:
        from talentrl_cli.metrics import exact_match, f1

        em = exact_match(answer, task.answers)
        return {"reward": em, "em": em, "f1": f1(answer, task.answers)}

    # -- the scripted expert ---------------------------------------------------------------------

    def expert_trajectory(self, task: Task, noise: float | None = None,
                          rng: random.Random | None = None) -> Trajectory:
        """A ReAct trajectory of the scripted expert on `task`, run on a forked instance.

        `noise` defaults to the config's; `rng` defaults to one seeded by (seed, task id),
        so the same task always gives the same trajectory."""
        noise = self.settings.noise if noise is None else noise
        rng = rng or random.Random(f"worldqa-expert-{self.seed}-{task.id}-{noise}")
        return Expert(self.fork(), self.world, rng, noise).solve(task)


def generate_trajectories(cfg: Any, split: str = "train", n: int | None = None,
                          noise: float | None = None, seed: int | None = None) -> list[Trajectory]:
    """Expert trajectories on the first `n` tasks of `split` (all when n is None); when n
    exceeds the split, tasks repeat with fresh random streams (ids get a `-r<k>` suffix).

    `cfg` is the `env:` section, or a root config (one with an `env` key), whose `seed`
    is then the default seed. `noise` defaults to the config's."""
    if _has_env_section(cfg):
        seed = cfg.get("seed", 0) if seed is None else seed
        cfg = cfg["env"]
    env = WorldQAEnv(cfg, int(seed or 0))
    tasks = env.tasks(split)
    n = len(tasks) if n is None else int(n)
    out = []
    for i in range(n):
        task, rep = tasks[i % len(tasks)], i // len(tasks)
        rng = random.Random(f"worldqa-expert-{env.seed}-{task.id}-{noise}-{rep}")
        traj = env.expert_trajectory(task, noise=noise, rng=rng)
        if rep:
            traj.id = f"{traj.id}-r{rep}"
        out.append(traj)
    return out


def _has_env_section(cfg: Any) -> bool:
    try:
        return cfg is not None and "env" in cfg and hasattr(cfg["env"], "keys")
    except TypeError:
        return False
