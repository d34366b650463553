"""The ReAct action grammar and the dense search tool shared by every text-QA environment.

**Grammar.** The real HotpotQA agent logs in `shared/data/trajectories/` write actions as
`Action: search[query]` (FireAct), `Search[entity]` / `Lookup[keyword]` / `Finish[answer]`
(Reflexion, ReAct) and `Action 1: Search[...]` (ReAct's few-shot prompt). `parse_action`
accepts all of these: tool names are case-insensitive (returned lower-case), the argument
runs to the matching `]` (brackets inside it may nest), text after it is ignored (FireAct's
fine-tuned model sometimes trails words after the action), and anything else, including a
cut-off `search[foo` with no `]`, gives None instead of an exception. Only the first action
of a turn counts: a model that hallucinates its own `Observation:` and a second action must
not get that second action executed.

**Search.** `SearchTool` embeds every passage (title and text) once, through the cached
`Embedder`, into the project's `VectorIndex`, and is read-only afterwards, so any number of
environment instances can share one. Its observation format, like ReAct's Wikipedia tool:

    search[q]  ->  "<title>: <first max_sentences sentences of the top passage>"
                   plus, when the top score is below `weak_below` (a doubtful match), a line
                   "Similar: ['<title 2>', '<title 3>', ...]." naming the other top hits.

ReAct's per-episode `lookup[keyword]` state (the last passage and a cursor over its
sentences containing the keyword, shown as `(Result i / n) sentence`) lives in a
`SearchSession`, one per episode, never in the shared tool.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from talentrl_cli.embedding import Embedder
from talentrl_cli.retrieval import VectorIndex

# "Action:", "Action 1:", "action 12 :" at the start of a line.
ACTION_MARK = re.compile(r"^[ \t]*Action(?:[ \t]*\d+)?[ \t]*:", re.IGNORECASE | re.MULTILINE)
_TOOL_CALL = re.compile(r"\s*([A-Za-z_][\w-]*)[ \t]*\[")
_SENTENCE_END = (".", "!", "?", '."', ".)")


@dataclass(frozen=True)
class Action:
    """One parsed tool call: `tool` lower-cased, `arg` stripped."""

    tool: str
    arg: str

    def __str__(self) -> str:
        return f"{self.tool}[{self.arg}]"


def parse_action(text: Any) -> Action | None:
    """The first `tool[arg]` of a model turn, after an optional `Action:` marker; else None."""
    if not isinstance(text, str):
        return None
    mark = ACTION_MARK.search(text)
    body = text[mark.end() :] if mark else text
    call = _TOOL_CALL.match(body)
    if call is None:
        return None
    arg = _bracket_content(body[call.end() :].split("\n", 1)[0])
    if arg is None:
        return None
    return Action(call.group(1).lower(), arg.strip())


def _bracket_content(line: str) -> str | None:
    """`line` up to the `]` closing an already-open `[`; None if it is never closed."""
    depth = 1
    for i, char in enumerate(line):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return line[:i]
    return None


def split_sentences(text: str) -> list[str]:
    """ReAct's splitter: lines, then ". "; each sentence ends with one period.

    A deliberate copy of ReAct's rule (not a real sentence tokenizer) so `lookup` walks the
    same units as the tool the logs were recorded with.
    """
    sentences = []
    for paragraph in text.split("\n"):
        for piece in paragraph.strip().split(". "):
            piece = piece.strip()
            if piece:
                sentences.append(piece if piece.endswith(_SENTENCE_END) else piece + ".")
    return sentences


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    text: str

    def embed_text(self) -> str:
        return f"{self.title}\n{self.text}" if self.title else self.text


class SearchTool:
    """Dense top-k passage search over a fixed corpus; read-only once built, so shareable."""

    def __init__(
        self,
        passages: Sequence[Passage],
        embedder: Embedder,
        top_k: int = 5,
        weak_below: float = 0.5,
        max_sentences: int = 5,
        index_params: dict[str, Any] | None = None,
    ):
        if not passages:
            raise ValueError("SearchTool needs at least one passage")
        self.passages = {p.id: p for p in passages}
        self.embedder = embedder
        self.top_k = int(top_k)
        self.weak_below = float(weak_below)
        self.max_sentences = int(max_sentences)
        vectors = embedder.encode([p.embed_text() for p in passages])
        self.index = VectorIndex.build(vectors, [p.id for p in passages], **(index_params or {}))

    def hits(
        self, queries: Sequence[str], k: int | None = None
    ) -> list[list[tuple[Passage, float]]]:
        """Top-k (passage, cosine) per query, best first, in one batched encode + query."""
        if not queries:
            return []
        ids, scores = self.index.query(self.embedder.encode(list(queries)), k or self.top_k)
        return [
            [(self.passages[i], float(s)) for i, s in zip(row, srow, strict=True)]
            for row, srow in zip(ids, scores, strict=True)
        ]

    def search_ids(self, queries: Sequence[str], k: int | None = None) -> list[list[str]]:
        """Top-k passage ids per query (batched; for recall evaluation)."""
        return [[p.id for p, _ in row] for row in self.hits(queries, k)]

    def search(self, query: str) -> str:
        """The observation for `search[query]` (format in the module docstring)."""
        return self._search(query)[0]

    def _search(self, query: str) -> tuple[str, Passage | None]:
        if not query.strip():
            return "Empty search query. Use search[entity or question].", None
        row = self.hits([query])[0]
        top, score = row[0]
        obs = self.render(top)
        if score < self.weak_below:
            others = list(dict.fromkeys(p.title for p, _ in row[1:] if p.title != top.title))
            if others:
                obs += f"\nSimilar: {others}."
        return obs, top

    def render(self, passage: Passage) -> str:
        text = passage.text
        if self.max_sentences > 0:
            text = " ".join(split_sentences(text)[: self.max_sentences])
        return f"{passage.title}: {text}" if passage.title else text

    def session(self) -> SearchSession:
        return SearchSession(self)


class SearchSession:
    """One episode's view of a SearchTool: remembers the last passage for `lookup`."""

    def __init__(self, tool: SearchTool):
        self.tool = tool
        self.passage: Passage | None = None
        self._keyword: str | None = None
        self._matches: list[str] = []
        self._cursor = 0

    def search(self, query: str) -> str:
        obs, passage = self.tool._search(query)
        if passage is not None:
            self.passage, self._keyword = passage, None
        return obs

    def lookup(self, keyword: str) -> str:
        """The next sentence of the last passage containing `keyword` (case-insensitive)."""
        if self.passage is None:
            return "No passage to look up in yet: use search[...] first."
        if not keyword.strip():
            return "Empty lookup keyword. Use lookup[keyword]."
        if keyword != self._keyword:
            self._keyword, self._cursor = keyword, 0
            needle = keyword.lower()
            self._matches = [s for s in split_sentences(self.passage.text) if needle in s.lower()]
        if self._cursor >= len(self._matches):
            return "No more results."
        self._cursor += 1
        return f"(Result {self._cursor} / {len(self._matches)}) {self._matches[self._cursor - 1]}"
