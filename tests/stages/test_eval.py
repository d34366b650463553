"""`talentrl eval` end to end on a small WorldQA world with the tiny model (lexical search, so
no model but the embedder is needed): every mode, results.jsonl with transcripts, metrics with
CIs, report.md and its plots; and user errors."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from conftest import SMALL_WORLD, run_stages

from talentrl_cli.artifacts import ArtifactStore

WORLD = SMALL_WORLD
EVAL_FAST = ("eval.limit=3", "eval.max_new_tokens=6", "eval.max_steps=2", "eval.n_bootstrap=200", "index.k=2")
FAST = (*WORLD, *EVAL_FAST)


@pytest.fixture(scope="module")
def indexed_root(tmp_path_factory):
    """mine:v1 (WorldQA expert, 80 trajectories) and index:v1, built once for the module."""
    return run_stages(tmp_path_factory.mktemp("eval-inputs") / "artifacts",
                      ["mine", *WORLD, "source.n=80"], ["index", *WORLD])


@pytest.fixture
def indexed(run_cli, indexed_root):
    shutil.copytree(indexed_root, run_cli.root)


def test_eval_every_mode_writes_results_metrics_report_and_plots(run_cli, indexed):
    modes = "eval.modes=[zero_shot,flat,talent,oracle_talent,random_talent]"
    code, out, err = run_cli("eval", "inputs.model=none", *FAST, modes)
    assert code == 0, err
    artifact = ArtifactStore(run_cli.root).resolve(out.split()[-1])
    rows = [json.loads(line) for line in (artifact.path / "results.jsonl").open()]
    assert len(rows) == 5 * 3
    first = rows[0]
    assert first["mode"] == "zero_shot" and first["talent"] is None and first["skills"] == []
    assert len(first["ids"]) == len(first["mask"]) and first["messages"][-1]["role"] in ("assistant", "user")
    talent_rows = [r for r in rows if r["mode"] == "talent"]
    assert all(r["talent"] and abs(sum(r["route"].values()) - 1) < 1e-5 for r in talent_rows)
    assert all(2 in r["mask"] for r in talent_rows)  # the talent label's tokens
    assert all(len(r["skills"]) == 2 for r in rows if r["mode"] == "flat")
    metrics = json.loads((artifact.path / "metrics.json").read_text())
    talent = metrics["modes"]["talent"]
    assert len(talent["em"]) == 3 and talent["em"][1] <= talent["em"][0] <= talent["em"][2]
    assert "routing_accuracy" in talent and talent["talent_usage"] and talent["by_strategy"]
    report = (artifact.path / "report.md").read_text()
    assert "| oracle_talent |" in report and "talentrl eval" in report
    assert (artifact.path / "scores.png").stat().st_size > 0
    assert (artifact.path / "routing_confusion.png").stat().st_size > 0
    summary = artifact.manifest["metrics"]
    assert summary["benchmark"] == "worldqa/dev" and "talent/em_ci" in summary
    assert "talentrl eval: worldqa/dev" in err  # the rich table
    for mode in ("zero_shot", "oracle_talent"):  # a progress line per mode, no library noise
        assert f"eval: {mode}  0/" in err and re.search(rf"eval: {mode}  \d+/\d+ episodes  done in", err)
    assert "Loading weights" not in err and "Warning" not in err


def test_eval_rejects_unknown_modes_and_skill_modes_without_an_index(run_cli, indexed):
    code, _, err = run_cli("eval", "inputs.model=none", *FAST, "eval.modes=[zero_shot,bogus]")
    assert code == 1 and "bogus" in err
    code, _, err = run_cli("eval", "inputs.model=none", "inputs.index=none", *FAST, "eval.modes=[flat]")
    assert code == 1 and "zero_shot" in err


def test_eval_on_a_qa_file_with_a_corpus_and_generated_routing(run_cli, indexed, tmp_path):
    """env=qa (JSONL questions + passage corpus, dense search) and eval.routing=generate."""
    from talentrl_cli.jsonl import write_jsonl

    questions, corpus = tmp_path / "qa.jsonl", tmp_path / "corpus.jsonl"
    write_jsonl(questions, [{"id": f"q{i}", "question": f"Where was person {i} born?", "answers": [f"Town {i}"]}
                            for i in range(3)])
    write_jsonl(corpus, [{"id": f"p{i}", "title": f"Person {i}", "contents": f'"Person {i}"\nPerson {i} was born in Town {i}.'}
                         for i in range(3)])
    code, out, err = run_cli("eval", "inputs.model=none", *EVAL_FAST, "env=qa", f"env.path={questions}",
                             f"env.corpus={corpus}", "eval.modes=[zero_shot,talent]", "eval.routing=generate")
    assert code == 0, err
    artifact = ArtifactStore(run_cli.root).resolve(out.split()[-1])
    rows = [json.loads(line) for line in (artifact.path / "results.jsonl").open()]
    assert len(rows) == 2 * 3 and {r["mode"] for r in rows} == {"zero_shot", "talent"}
    # a generated route is one parsed label (None on a parse failure), not a distribution
    index = ArtifactStore(run_cli.root).resolve("index:latest")
    names = {json.loads(line)["name"] for line in (index.path / "talents.jsonl").open()}
    assert all(r["route"] == {} and (r["talent"] is None or r["talent"] in names)
               for r in rows if r["mode"] == "talent")
    metrics = json.loads((artifact.path / "metrics.json").read_text())
    assert metrics["benchmark"].startswith("qa/") and metrics["n_tasks"] == 3
    assert "routing_accuracy" not in metrics["modes"]["talent"]  # no gold strategy in a QA file


def test_base_modes_put_the_base_model_beside_the_trained_policy(run_cli, indexed):
    code, out, err = run_cli("sft", *WORLD, "sft.max_examples=2", "sft.max_steps=1", "sft.grad_accum=1", "index.k=2")
    assert code == 0, err
    code, out, err = run_cli("eval", f"inputs.model={out.split()[-1]}", *FAST, "eval.base_modes=[zero_shot]",
                             "eval.modes=[talent]")
    assert code == 0, err
    artifact = ArtifactStore(run_cli.root).resolve(out.split()[-1])
    metrics = json.loads((artifact.path / "metrics.json").read_text())
    assert sorted(metrics["modes"]) == ["talent", "zero_shot@base"]
    assert all(0 <= m["finished"] <= 1 for m in metrics["modes"].values())
    assert "| zero_shot@base |" in (artifact.path / "report.md").read_text()
    code, _, err = run_cli("eval", "inputs.model=none", *FAST, "eval.base_modes=[bogus]")
    assert code == 1 and "bogus" in err


def test_the_oracle_maps_every_mined_strategy_to_its_most_frequent_talent(indexed_root):
    from collections import Counter

    from talentrl_cli.jsonl import iter_jsonl
    from talentrl_cli.stages.eval import oracle_talents

    store = ArtifactStore(indexed_root)
    index, mine = store.resolve("index:latest"), store.resolve("mine:latest")
    names = {t["name"] for t in iter_jsonl(index.file("talents.jsonl"))}
    oracle = oracle_talents(index, names)
    strategy = {t["id"]: t["task"]["strategy"] for t in iter_jsonl(mine.file("trajectories.jsonl"))}
    votes = Counter((strategy[lab["trajectory_id"]], lab["talent"]) for lab in iter_jsonl(mine.file("labels.jsonl")))
    assert set(oracle) == set(strategy.values())
    for gold, talent in oracle.items():
        assert votes[(gold, talent)] == max(n for (s, _), n in votes.items() if s == gold)
    assert oracle_talents(index, set()) == {}  # no talent of the bank: nothing to route to
