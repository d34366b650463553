"""`env=qa`: real open-domain / multi-hop QA with a dense search tool over a passage corpus.

Reads the Search-R1 / FlashRAG formats, so any of the seven QA sets in `shared/data/qa/`
(or a user's own file) plugs in:

- questions: JSONL `{"id", "question", "answers": [...]}` (extra fields are kept in
  `Task.meta`; HotpotQA `supporting_facts` and MuSiQue `is_supporting` paragraphs become
  `meta["supporting_titles"]`);
- corpus: JSONL `{"id", "title", "contents"}` with `contents = "\\"Title\\"\\n" + text`, or
  wiki-18's `{"id", "contents"}` whose first line is the quoted title.

    talentrl envs sample qa
    talentrl eval env=qa env.path=../shared/data/qa/nq_test_500.jsonl \\
        env.corpus=../shared/data/corpus/wiki18_dpr_sample_1000.jsonl env.reward=f1

Splits: the benchmark files hold one split each, so with `split: all` (the default)
`tasks(name)` returns every task for train, dev and test alike. `split: hash` assigns each
task by `sha256(id)` to train/dev/test in the `split_fractions` proportions: deterministic,
independent of file order, and a task keeps its split when others are added. `limit` then
keeps the first N tasks of the split, in file order.

Episodes follow ReAct: `search[query]`, `lookup[keyword]`, `finish[answer]`; the reward
(EM by default, or F1) is paid on `finish`, and an episode without an answer after
`max_steps` actions ends with reward 0. An unparsable or unknown action costs a step and
returns an observation listing the valid actions. That episode loop is
`react_env.SearchEnvironment`, shared with `env=worldqa`; this module supplies the tasks,
the scoring and the search tool.

The search tool (embeddings + index) is built on the first `reset`, not in the constructor,
so listing tasks needs no model; it is cached per process and shared by every instance with
the same corpus and settings (`fork()` is cheap).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from talentrl_cli.embedding import Embedder
from talentrl_cli.envs.base import ENVS
from talentrl_cli.envs.react_env import SearchEnvironment
from talentrl_cli.envs.search import Passage, SearchTool
from talentrl_cli.envs.settings import settings_from_cfg
from talentrl_cli.errors import ConfigError
from talentrl_cli.jsonl import RecordError, iter_jsonl
from talentrl_cli.schema import Task

SPLITS = ("train", "dev", "test")
REWARDS = ("em", "f1")
_TOOL_CACHE: dict[str, SearchTool] = {}
_DATA_HINT = "set it on the command line, e.g. env.path=/data/qa/nq.jsonl, or set TALENTRL_DATA"


@dataclass
class QASettings:
    """The `env:` section for `qa`; unknown keys are a ConfigError."""

    name: str = "qa"
    path: str = "???"
    corpus: str = "???"
    split: str = "all"
    split_fractions: dict[str, float] = field(
        default_factory=lambda: {"train": 0.8, "dev": 0.1, "test": 0.1}
    )
    limit: int | None = None
    top_k: int = 5
    max_steps: int = 8
    reward: str = "em"
    weak_below: float = 0.5
    max_sentences: int = 5
    hnsw: dict[str, Any] = field(default_factory=dict)
    embedder: dict[str, Any] = field(default_factory=dict)
    cache_dir: str | None = None

    @classmethod
    def from_cfg(cls, cfg: Any) -> QASettings:
        settings = settings_from_cfg(cls, cfg, "qa")
        settings.validate()
        return settings

    def validate(self) -> None:
        if self.split not in ("all", "hash"):
            raise ConfigError(f"env.split must be 'all' or 'hash', got {self.split!r}")
        if self.reward not in REWARDS:
            raise ConfigError(
                f"env.reward must be one of {', '.join(REWARDS)}, got {self.reward!r}"
            )
        if int(self.max_steps) < 1 or int(self.top_k) < 1:
            raise ConfigError("env.max_steps and env.top_k must be at least 1")
        weights = self.split_fractions
        if set(weights) != set(SPLITS) or min(weights.values()) < 0 or sum(weights.values()) <= 0:
            raise ConfigError(
                f"env.split_fractions needs non-negative weights for {', '.join(SPLITS)}, "
                f"got {self.split_fractions}"
            )


def _existing_file(value: str, key: str) -> Path:
    if not value or value == "???":
        raise ConfigError(f"env.{key} is required for env=qa", _DATA_HINT)
    path = Path(value).expanduser()
    if not path.is_file():
        raise ConfigError(f"env.{key}: file not found: {path}", _DATA_HINT)
    return path


# -- reading ------------------------------------------------------------------------------


def task_from_record(record: dict) -> Task:
    """A Search-R1/FlashRAG question line as a Task; raises RecordError for a bad line."""
    for key in ("id", "question", "answers"):
        if key not in record:
            raise RecordError("missing (expected {id, question, answers})", key)
    answers = record["answers"]
    answers = [answers] if isinstance(answers, str) else answers
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise RecordError("must be a list of strings", "answers")
    if not isinstance(record["question"], str) or not record["question"].strip():
        raise RecordError("must be a non-empty string", "question")
    meta = {k: v for k, v in record.items() if k not in ("id", "question", "answers", "context")}
    meta["supporting_titles"] = _supporting_titles(record)
    meta["context_titles"] = _context_titles(record)
    return Task(
        id=str(record["id"]), question=record["question"], answers=answers, env="qa", meta=meta
    )


def _supporting_titles(record: dict) -> list[str]:
    """Gold titles: HotpotQA `supporting_facts` [[title, i]], MuSiQue `context[].is_supporting`."""
    titles = [f[0] for f in record.get("supporting_facts") or [] if isinstance(f, list) and f]
    titles += [
        c.get("title")
        for c in record.get("context") or []
        if isinstance(c, dict) and c.get("is_supporting")
    ]
    return list(dict.fromkeys(t for t in titles if isinstance(t, str)))


def _context_titles(record: dict) -> list[str]:
    """Titles of the given paragraphs: HotpotQA [[title, sentences]], MuSiQue [{title, ...}]."""
    items = [i for i in record.get("context") or [] if isinstance(i, list | dict) and i]
    titles = [i[0] if isinstance(i, list) else i.get("title") for i in items]
    return list(dict.fromkeys(t for t in titles if isinstance(t, str)))


def passage_from_record(record: dict) -> Passage:
    """A corpus line `{id, title, contents}` or wiki-18 `{id, contents}` as a Passage."""
    if "id" not in record:
        raise RecordError("missing (expected {id, title, contents} or {id, contents})", "id")
    contents = record.get("contents", record.get("text"))
    if not isinstance(contents, str):
        raise RecordError("missing or not a string (expected {id, title, contents})", "contents")
    head, _, rest = contents.partition("\n")
    quoted = len(head) >= 2 and head.startswith('"') and head.endswith('"')
    title = record.get("title") or (head[1:-1] if quoted else "")
    text = rest if quoted and head[1:-1] == title else contents
    return Passage(id=str(record["id"]), title=str(title), text=text.strip())


def load_tasks(path: Path) -> list[Task]:
    return list(iter_jsonl(path, convert=task_from_record, unique_key="id"))


def load_corpus(path: Path) -> list[Passage]:
    return list(iter_jsonl(path, convert=passage_from_record, unique_key="id"))


def split_of(task_id: str, fractions: dict[str, float]) -> str:
    """train/dev/test from sha256(id): stable across file order and additions."""
    u = int(hashlib.sha256(task_id.encode()).hexdigest()[:15], 16) / 16**15
    total, edge = sum(fractions.values()), 0.0
    for name in SPLITS:
        edge += fractions[name] / total
        if u < edge:
            return name
    return SPLITS[-1]


def search_tool(settings: QASettings) -> SearchTool:
    """The shared (per process) search tool for these settings' corpus."""
    corpus = _existing_file(settings.corpus, "corpus").resolve()
    stat = corpus.stat()
    key = json.dumps(
        [
            str(corpus),
            stat.st_size,
            stat.st_mtime_ns,
            settings.embedder,
            settings.cache_dir,
            settings.hnsw,
            settings.top_k,
            settings.weak_below,
            settings.max_sentences,
        ],
        sort_keys=True,
        default=str,
    )
    if key not in _TOOL_CACHE:
        embedder = Embedder.from_config(settings.embedder, cache_dir=settings.cache_dir)
        _TOOL_CACHE[key] = SearchTool(
            load_corpus(corpus),
            embedder,
            top_k=settings.top_k,
            weak_below=settings.weak_below,
            max_sentences=settings.max_sentences,
            index_params=settings.hnsw,
        )
    return _TOOL_CACHE[key]


def title_recall(tool: SearchTool, tasks: list[Task], k: int = 5) -> tuple[float, float, int]:
    """Search each gold supporting title (query = the title); found = a passage with that
    title in the top k. Returns (per-title recall, per-question recall, number of titles),
    where a question counts only when every one of its gold titles is found."""
    groups = [t.meta.get("supporting_titles", []) for t in tasks if t.meta.get("supporting_titles")]
    flat = [title for group in groups for title in group]
    if not flat:
        raise ValueError("no task has meta['supporting_titles']; recall is undefined")
    rows = tool.hits(flat, k)
    found = [title in {p.title for p, _ in row} for title, row in zip(flat, rows, strict=True)]
    per_question, cursor = [], 0
    for group in groups:
        per_question.append(all(found[cursor : cursor + len(group)]))
        cursor += len(group)
    return sum(found) / len(found), sum(per_question) / len(per_question), len(flat)


# -- the environment ------------------------------------------------------------------------


@ENVS.register("qa")
class QAEnv(SearchEnvironment):
    """Real QA sets (Search-R1/FlashRAG JSONL) with search/lookup/finish over a passage corpus."""

    name = "qa"

    def __init__(self, cfg: Any = None, seed: int = 0):
        super().__init__(cfg, seed)
        self.settings = QASettings.from_cfg(cfg)
        self._tasks: list[Task] | None = None
        self._tool: SearchTool | None = None

    # -- tasks ----------------------------------------------------------------------------

    def all_tasks(self) -> list[Task]:
        if self._tasks is None:
            self._tasks = load_tasks(_existing_file(self.settings.path, "path"))
        return self._tasks

    def tasks(self, split: str) -> list[Task]:
        if split not in SPLITS:
            raise ConfigError(f"unknown split {split!r} (known: {', '.join(SPLITS)})")
        tasks = self.all_tasks()
        if self.settings.split == "hash":
            tasks = [t for t in tasks if split_of(t.id, self.settings.split_fractions) == split]
        limit = self.settings.limit
        return tasks[: int(limit)] if limit is not None else tasks

    @property
    def tool(self) -> SearchTool:
        if self._tool is None:
            self._tool = search_tool(self.settings)
        return self._tool

    # -- what the episode loop (SearchEnvironment) asks of this env ------------------------

    def describe_tools(self) -> str:
        # one line: it is in every execution prompt (see prompts.py on the token budget)
        return "search[query] finds a passage; lookup[keyword] its next sentence with keyword; finish[answer]."

    def score(self, task: Task, answer: str | None) -> dict[str, float]:
        from talentrl_cli.metrics import exact_match, f1

        em, f = exact_match(answer, task.answers), f1(answer, task.answers)
        return {"em": em, "f1": f, "reward": em if self.settings.reward == "em" else f}
