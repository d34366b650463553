"""WorldQA: determinism, sizes, split leakage, the expert (through the tools), noise, the
action grammar shared with the FireAct logs, and the environment's reward.

The fast tests use `retriever: lexical` (no model); one slow test runs the expert with the
default dense MiniLM retriever.
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
import yaml

from talentrl_cli.envs import ENVS, make_env
from talentrl_cli.envs.search import parse_action
from talentrl_cli.envs.worldqa import WorldQAEnv, WorldQASettings, generate_trajectories
from talentrl_cli.envs.worldqa.corpus import build_corpus
from talentrl_cli.envs.worldqa.families import FAMILIES, STRATEGIES, parse_question
from talentrl_cli.envs.worldqa.grammar import (
    FACT_TEMPLATES,
    FIELD_KEYWORDS,
    LIST_KEYWORDS,
    LIST_TEMPLATES,
    read_fact,
    read_list,
    templates_for,
)
from talentrl_cli.envs.worldqa.questions import generate_tasks
from talentrl_cli.envs.worldqa.world import build_world
from talentrl_cli.errors import ConfigError
from talentrl_cli.resources import conf_dir

CFG = {"retriever": "lexical", "n_entities": 300, "n_tasks": 700, "noise": 0.2}
FRACTIONS = {"train": 0.8, "dev": 0.1, "test": 0.1}


@pytest.fixture(scope="module")
def env() -> WorldQAEnv:
    return WorldQAEnv(CFG, seed=7)


def _sample(tasks, n: int, seed: int = 0):
    """About n tasks, stratified by strategy, in a fixed order."""
    by: dict[str, list] = {}
    for task in tasks:
        by.setdefault(task.strategy, []).append(task)
    per = max(1, n // len(by))
    rng = random.Random(seed)
    return [t for group in by.values() for t in rng.sample(group, min(per, len(group)))]


# -- generation ---------------------------------------------------------------------------


def test_same_seed_same_world_corpus_and_tasks():
    a, b = build_world(3, 300), build_world(3, 300)
    assert [vars(e) for e in a.entities] == [vars(e) for e in b.entities]
    assert build_corpus(a, 3) == build_corpus(b, 3)
    ta, tb = generate_tasks(a, 3, 300, FRACTIONS), generate_tasks(b, 3, 300, FRACTIONS)
    dump = {s: [t.model_dump() for t in ts] for s, ts in ta.items()}
    assert dump == {s: [t.model_dump() for t in ts] for s, ts in tb.items()}
    other = build_world(4, 300)
    assert [e.name for e in other.entities] != [e.name for e in a.entities]


def test_sizes(env):
    world = env.world
    assert len(world.entities) >= 300
    assert len(world.types()) >= 5
    assert len(world.relations()) >= 8
    assert len(world.attributes()) >= 4
    tasks = [t for s in ("train", "dev", "test") for t in env.tasks(s)]
    assert len(tasks) == CFG["n_tasks"]
    assert len({t.strategy for t in tasks}) >= 6 and set(STRATEGIES) >= {t.strategy for t in tasks}
    for strategy in STRATEGIES:
        templates = [tpl for f in FAMILIES if f.strategy == strategy for tpl in f.templates]
        assert len(set(templates)) >= 3, strategy
    assert all(len(f.templates) >= 3 for f in FAMILIES)
    every = [tpl for f in FAMILIES for tpl in f.templates]
    assert len(every) == len(set(every)), "a wording must identify its family"


def test_names_and_aliases_are_unique(env):
    keys = [s.lower() for e in env.world.entities for s in (e.name, *e.aliases)]
    assert len(keys) == len(set(keys))
    assert len(env.corpus) == len(env.world.entities)
    assert [d.title for d in env.corpus] == [e.name for e in env.world.entities]


def test_tasks_are_well_formed(env):
    for task in env.tasks("train")[:300]:
        family, _, slots = parse_question(task.question)
        assert family.name == task.meta["family"] and slots == task.meta["slots"]
        assert task.answers and task.plan[-1] == f"finish[{task.answers[0]}]"
        assert all(parse_action(a) is not None for a in task.plan)
        assert task.env == "worldqa" and task.strategy == family.strategy


def test_no_split_leakage(env):
    splits = {s: env.tasks(s) for s in ("train", "dev", "test")}
    assert all(splits.values())
    for a, b in (("train", "dev"), ("train", "test"), ("dev", "test")):
        assert not {t.question for t in splits[a]} & {t.question for t in splits[b]}
        keys_a = {t.meta["answer_key"] for t in splits[a]}
        assert not keys_a & {t.meta["answer_key"] for t in splits[b]}
    ids = [t.id for ts in splits.values() for t in ts]
    assert len(ids) == len(set(ids))


def test_yes_no_answers_are_balanced_so_a_constant_answer_scores_half(env):
    for split in ("train", "dev", "test"):
        by_family: dict[str, Counter] = {}
        for task in env.tasks(split):
            if task.strategy == "yes_no":
                by_family.setdefault(task.meta["family"], Counter())[task.answers[0]] += 1
        assert by_family, split
        for family, answers in by_family.items():  # a family's share of a split may be odd
            assert set(answers) <= {"yes", "no"} and abs(answers["yes"] - answers["no"]) <= 1, (split, family)
    default = WorldQAEnv({"retriever": "lexical"}, seed=0)  # every yes/no candidate is taken
    for split in ("train", "dev", "test"):
        answers = Counter(t.answers[0] for t in default.tasks(split) if t.strategy == "yes_no")
        assert answers["yes"] == answers["no"] > 0, split


def test_every_fact_template_has_a_lookup_keyword():
    for field in FACT_TEMPLATES:
        for template in templates_for(field):
            assert any(k in template.lower() for k in FIELD_KEYWORDS[field]), template
    for rel, templates in LIST_TEMPLATES.items():
        for template in templates:
            assert any(k in template.lower() for k in LIST_KEYWORDS[rel]), template


def test_reader_parses_tool_observations():
    obs = "Ana Vel: Ana Vel (born 1950) is a writer. Ana Vel was born in Port Tor, a town."
    assert read_fact(obs, "Ana Vel", "birth_year") == "1950"
    assert read_fact("(Result 1 / 2) Ana Vel was born in Port Tor.", "Ana Vel", "born_in") == "Port Tor"
    assert read_fact(obs, "Bo Vel", "born_in") is None
    assert read_list("Tor: The books written by Tor are A, B Two and C.", "Tor", "written_by") == [
        "A", "B Two", "C"]


# -- the expert ---------------------------------------------------------------------------


def test_expert_solves_train_sample_at_noise_zero(env):
    tasks = _sample(env.tasks("train"), 140)
    results = [env.expert_trajectory(t, noise=0.0) for t in tasks]
    assert len({t.strategy for t in tasks}) == len(STRATEGIES)
    rate = sum(r.success for r in results) / len(results)
    assert rate >= 0.95, rate
    for traj in results:
        assert traj.meta["noise_kind"] is None
        assert traj.success == (traj.reward == 1.0)
        assert traj.steps[-1].action.startswith("finish[")


def test_expert_reads_bridge_entities_from_observations(env):
    """A bridge entity the expert searches next must have appeared in an observation."""
    bridges = [t for t in env.tasks("train") if t.strategy == "bridge"][:20]
    for task in bridges:
        traj = env.expert_trajectory(task, noise=0.0)
        searches = [parse_action(s.action).arg for s in traj.steps if s.action.startswith("search")]
        seen = " ".join(s.observation for s in traj.steps)
        assert any(q in seen for q in searches[1:]), (task.question, searches)


def test_noise_gives_both_failure_kinds(env):
    tasks = _sample(env.tasks("train"), 70, seed=1)
    results = [env.expert_trajectory(t, noise=1.0) for t in tasks]
    failures = Counter(r.meta["noise_kind"] for r in results if not r.success)
    assert failures["wrong_entity"] >= 5 and failures["premature_finish"] >= 5, failures
    for r in results:
        searched = [parse_action(s.action).arg for s in r.steps if s.action.startswith("search")]
        plan = [parse_action(a).arg for a in r.task.plan if a.startswith("search")]
        if r.meta["noise_kind"] == "premature_finish":
            assert len(searched) < len(plan)
        elif r.meta["noise_kind"] == "wrong_entity" and not r.success:
            assert set(searched) - set(plan), (searched, plan)
    assert sum(r.success for r in results) < len(results) / 2


def test_default_noise_is_realistic(env):
    tasks = _sample(env.tasks("train"), 70, seed=2)
    rate = sum(env.expert_trajectory(t).success for t in tasks) / len(tasks)
    assert 0.6 <= rate < 0.99, rate


def test_expert_trajectories_are_deterministic(env):
    task = env.tasks("train")[5]
    a, b = env.expert_trajectory(task), env.expert_trajectory(task)
    assert a.model_dump() == b.model_dump()


def test_actions_use_the_fireact_grammar(env):
    """Every expert action, written as a FireAct assistant turn, parses with parse_action."""
    for task in _sample(env.tasks("train"), 70, seed=3):
        for step in env.expert_trajectory(task).steps:
            action = parse_action(f"Thought: {step.thought}\nAction: {step.action}")
            assert action is not None and str(action) == step.action, step.action
            assert action.tool in {"search", "lookup", "finish"}


def test_fireact_tools_are_a_subset_of_ours(env, shared_data):
    path = shared_data / "trajectories" / "fireact_hotpotqa_sft_react_500.jsonl"
    theirs = Counter()
    for line in path.read_text().splitlines()[:100]:
        for msg in json.loads(line)["messages"]:
            if msg["role"] == "assistant":
                theirs[parse_action(msg["content"]).tool] += 1
    assert set(theirs) <= {"search", "lookup", "finish"}


def test_generate_trajectories(env):
    trajs = generate_trajectories(CFG, split="dev", n=len(env.tasks("dev")) + 2, noise=0.0, seed=7)
    assert len({t.id for t in trajs}) == len(trajs)
    assert trajs[-1].id.endswith("-r1") and all(t.source == "worldqa-expert" for t in trajs)
    root = generate_trajectories({"seed": 7, "env": CFG}, split="dev", n=3, noise=0.0)
    assert [t.model_dump() for t in root] == [t.model_dump() for t in trajs[:3]]


# -- the environment ----------------------------------------------------------------------


def test_reward_on_correct_and_incorrect_finish(env):
    task = next(t for t in env.tasks("train") if len(t.answers) > 1)
    episode = env.fork()
    assert episode.reset(task) == task.question
    obs, reward, done, info = episode.step(f"finish[{task.answers[0]}]")
    assert (reward, done, info["em"], info["f1"]) == (1.0, True, 1.0, 1.0)
    assert obs == "Episode finished, reward = 1"
    episode.reset(task)
    assert episode.step(f"Action: finish[{task.answers[1]}]")[1] == 1.0  # an alias
    episode.reset(task)
    obs, reward, done, info = episode.step("finish[Nobody In Particular]")
    assert (reward, done, info["em"]) == (0.0, True, 0.0) and info["f1"] < 1.0
    assert env.score(task, task.answers[0])["reward"] == 1.0


def test_search_lookup_invalid_and_step_limit(env):
    task = env.tasks("train")[0]
    name = task.meta["slots"]["a"]
    episode = WorldQAEnv({**CFG, "max_steps": 3}, seed=7)
    episode.reset(task)
    obs, reward, done, info = episode.step(f"search[{name}]")
    assert obs.startswith(f"{name}: ") and not done and reward == 0.0
    obs, _, done, info = episode.step("dance[now]")
    assert not info["valid"] and "Valid actions" in obs and not done
    obs, reward, done, info = episode.step(f"lookup[{name.split()[0]}]")
    assert obs.startswith("(Result 1 /") and done and reward == 0.0 and info["em"] == 0.0
    assert "search[" in env.describe_tools() and "finish[" in env.describe_tools()


def test_registry_and_config():
    assert "worldqa" in ENVS
    env = make_env("worldqa", {"retriever": "lexical", "n_entities": 300, "n_tasks": 50}, seed=1)
    assert isinstance(env, WorldQAEnv) and env.seed == 1
    with pytest.raises(ConfigError):
        WorldQAEnv({"n_entites": 300})
    with pytest.raises(ConfigError):
        WorldQAEnv({"retriever": "bm25"})
    keys = set(yaml.safe_load((conf_dir() / "env" / "worldqa.yaml").read_text()))
    assert keys == set(WorldQASettings.__dataclass_fields__)


@pytest.mark.slow
def test_expert_with_dense_retriever():
    env = WorldQAEnv({"n_entities": 300, "n_tasks": 400, "noise": 0.0}, seed=7)
    tasks = _sample(env.tasks("train"), 70)
    rate = sum(env.expert_trajectory(t).success for t in tasks) / len(tasks)
    assert rate >= 0.95, rate
