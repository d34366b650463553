"""`talentrl index` and `talentrl index query` through the CLI, on a synthetic mine artifact."""

from __future__ import annotations

import json

import pytest
from mining.synthetic import synthetic_trajectories

from talentrl_cli.artifacts import ArtifactStore
from talentrl_cli.jsonl import write_jsonl


@pytest.fixture
def mined(run_cli, tmp_path):
    path = tmp_path / "synthetic.jsonl"
    write_jsonl(path, synthetic_trajectories())
    code, out, err = run_cli("mine", "source=native", f"source.path={path}")
    assert code == 0, err
    return out.split()[-1]


def test_index_stores_everything_retrieval_needs(run_cli, mined):
    code, out, err = run_cli("index")
    assert code == 0, err
    artifact = ArtifactStore(run_cli.root).resolve(out.split()[-1])
    assert artifact.manifest["inputs"]["mine"]["ref"] == mined
    files = set(artifact.manifest["files"])
    assert {"index/index.bin", "index/ids.json", "index/embeddings.npy", "index/meta.json",
            "embedder.json", "talent_weights.npy", "skills.jsonl", "talents.jsonl"} <= files
    metrics = artifact.manifest["metrics"]
    assert metrics["hnsw"] is True and metrics["exact_agreement"] >= 0.99


def test_index_query_prints_the_ranking(run_cli, mined):
    run_cli("index")
    talents = (ArtifactStore(run_cli.root).resolve("mine:latest").path / "talents.jsonl").open()
    name = json.loads(next(talents))["name"]
    code, out, err = run_cli("index", "query", "How many towers does Orvandel have?", "--talent", name, "-k", "3")
    assert code == 0, err
    assert "cos" in out and "prior" in out and "total" in out and name in out
    code, _, err = run_cli("index", "query", "anything", "--talent", "no-such-talent")
    assert code == 1 and "unknown talent" in err


def test_index_refuses_a_different_embedder(run_cli, mined, tmp_path, monkeypatch):
    run_cli("index")
    artifact = ArtifactStore(run_cli.root).resolve("index:latest")
    identity = json.loads((artifact.path / "embedder.json").read_text())
    from talentrl_cli.errors import ArtifactError
    from talentrl_cli.skillbank import SkillBank

    with pytest.raises(ArtifactError, match="built with embedder"):
        SkillBank.load(artifact.path, {**identity, "dim": identity["dim"] + 1})


def test_corrupt_index_artifact_is_refused(run_cli, mined):
    run_cli("index")
    artifact = ArtifactStore(run_cli.root).resolve("index:latest")
    (artifact.path / "index" / "ids.json").write_text("[]")
    code, _, err = run_cli("index", "query", "anything")
    assert code == 1 and "fails verification" in err
