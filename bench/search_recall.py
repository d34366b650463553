"""Recall@k of the QA search tool on the 100 HotpotQA distractor questions.

For each question, every gold supporting title is used as a query (query = the title);
a title counts as found when a passage with that title is in the top k. Prints the
per-title recall, the per-question recall (every gold title of the question found), and
the time to build the search index (embedding + HNSW/exact) with a cold and a warm cache.

    HF_HUB_OFFLINE=1 python bench/search_recall.py [--data ../shared/data] [-k 5] [--cache DIR]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from talentrl_cli.embedding import Embedder  # noqa: E402
from talentrl_cli.envs.qa import load_corpus, load_tasks, title_recall  # noqa: E402
from talentrl_cli.envs.search import SearchTool  # noqa: E402
from talentrl_cli.retrieval import VectorIndex  # noqa: E402

QUESTIONS = "qa/hotpotqa_distractor_100_with_context.jsonl"
CORPUS = "corpus/hotpotqa_distractor_100_corpus.jsonl"


def timed_build(passages: list, cache_dir: str) -> tuple[SearchTool, float, float]:
    """(tool, seconds for the whole build, seconds for VectorIndex.build alone)."""
    start = time.perf_counter()
    tool = SearchTool(passages, Embedder(cache_dir=cache_dir))
    total = time.perf_counter() - start
    start = time.perf_counter()
    VectorIndex.build(tool.index.embeddings, tool.index.ids)
    return tool, total, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get("TALENTRL_DATA", "../shared/data"))
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument(
        "--cache", default=None, help="embedding cache dir (default: a fresh temp dir)"
    )
    args = parser.parse_args()
    data = Path(args.data)
    tasks, passages = load_tasks(data / QUESTIONS), load_corpus(data / CORPUS)
    Embedder().model  # noqa: B018  (load the model outside the timings)
    cache = args.cache or tempfile.mkdtemp(prefix="talentrl-bench-")
    tool, cold, index_only = timed_build(passages, cache)
    _, warm, _ = timed_build(passages, cache)
    per_title, per_question, n_titles = title_recall(tool, tasks, args.k)
    print(f"questions: {len(tasks)}  gold titles: {n_titles}  passages: {len(passages)}")
    print(
        f"index build ({len(passages)} passages, exact={not tool.index.uses_hnsw}): "
        f"{cold:.1f}s cold cache, {warm:.2f}s warm cache, {index_only:.2f}s of it VectorIndex.build"
    )
    print(f"recall@{args.k} per title:    {per_title:.3f}")
    print(
        f"recall@{args.k} per question: {per_question:.3f}  (every gold title in the top {args.k})"
    )


if __name__ == "__main__":
    main()
