"""`talentrl mine` end to end through the CLI: outputs, determinism, gold agreement, bad input."""

from __future__ import annotations

import json
import os

import pytest
from mining.synthetic import synthetic_trajectories

from talentrl_cli.artifacts import ArtifactStore
from talentrl_cli.jsonl import write_jsonl
from talentrl_cli.schema import Skill, Talent


@pytest.fixture
def synthetic_file(tmp_path):
    path = tmp_path / "synthetic.jsonl"
    trajectories = synthetic_trajectories()
    failed = trajectories[0].model_copy(update={"id": "failed-0", "success": False})
    write_jsonl(path, [*trajectories, failed])
    return path


def _mine(run_cli, path, *extra):
    return run_cli("mine", "source=native", f"source.path={path}", *extra)


def test_mine_writes_the_contract_files(run_cli, synthetic_file):
    code, out, err = _mine(run_cli, synthetic_file)
    assert code == 0, err
    artifact = ArtifactStore(run_cli.root).resolve(out.split()[-1])
    assert set(artifact.manifest["files"]) == {"skills.jsonl", "talents.jsonl", "labels.jsonl", "trajectories.jsonl",
                                                  "report.md"}
    skills = [Skill.model_validate_json(line) for line in (artifact.path / "skills.jsonl").open()]
    talents = [Talent.model_validate_json(line) for line in (artifact.path / "talents.jsonl").open()]
    labels = [json.loads(line) for line in (artifact.path / "labels.jsonl").open()]
    assert skills and all(s.name and s.when_to_use and s.steps for s in skills)
    assert {sid for t in talents for sid in t.skills} <= {s.id for s in skills}
    assert all(0.0 <= w <= 1.0 for t in talents for w in t.skills.values())
    assert all(t.exemplars and t.support > 0 for t in talents)
    assert len(labels) == 45 and {lab["talent"] for lab in labels} <= {t.name for t in talents}
    metrics = artifact.manifest["metrics"]
    assert metrics["n_failed"] == 1 and metrics["n_success"] == 45
    assert metrics["nmi"] >= 0.8 and metrics["purity"] >= 0.85
    report = (artifact.path / "report.md").read_text()
    assert "| talent | size |" in report and "NMI" in report and "1 failed" in report


def test_mine_is_byte_deterministic(run_cli, synthetic_file):
    first = ArtifactStore(run_cli.root).resolve(_mine(run_cli, synthetic_file)[1].split()[-1])
    second = ArtifactStore(run_cli.root).resolve(_mine(run_cli, synthetic_file, "--force")[1].split()[-1])
    assert first.version != second.version
    for name in ("skills.jsonl", "talents.jsonl", "labels.jsonl"):
        assert (first.path / name).read_bytes() == (second.path / name).read_bytes()


def test_kmeans_miner_and_fixed_k(run_cli, synthetic_file):
    code, out, err = _mine(run_cli, synthetic_file, "mine.miner=kmeans", "mine.n_talents=3")
    assert code == 0, err
    metrics = ArtifactStore(run_cli.root).resolve(out.split()[-1]).manifest["metrics"]
    assert metrics["n_talents"] == 3 and metrics["nmi"] >= 0.8


def _write(path, text: bytes):
    path.write_bytes(text)
    return path


GOOD = synthetic_trajectories(1)[0].model_dump_json().encode()


@pytest.mark.parametrize("name, content, message", [
    ("empty", b"", "file is empty"),
    ("truncated", GOOD + b"\n" + GOOD[:40], ":2:"),
    ("binary", GOOD + b"\n\xff\xfe{}\n", ":2:"),
    ("array", b"[" + GOOD + b"]", "JSON array"),
    ("wrongtype", GOOD.replace(b'"success":true', b'"success":"maybe"') + b"\n", "success"),
    ("dupes", GOOD + b"\n" + GOOD + b"\n", "duplicate"),
])
def test_bad_input_is_one_clear_message(run_cli, tmp_path, name, content, message):
    path = _write(tmp_path / f"{name}.jsonl", content)
    code, out, err = _mine(run_cli, path)
    assert code == 1 and message in err and f"{name}.jsonl" in err
    assert "Traceback" not in out + err
    assert ArtifactStore(run_cli.root).list("mine") == []


def test_no_successful_trajectory(run_cli, tmp_path):
    failed = [t.model_copy(update={"success": False}) for t in synthetic_trajectories(2)]
    path = tmp_path / "failed.jsonl"
    write_jsonl(path, failed)
    code, _, err = _mine(run_cli, path)
    assert code == 1 and "no successful trajectory" in err


def test_skip_mode_counts_bad_lines(run_cli, tmp_path):
    lines = [t.model_dump_json().encode() for t in synthetic_trajectories()]
    lines[3] = lines[3][:30]
    lines[7] = b"\xff\xfe"
    path = _write(tmp_path / "mixed.jsonl", b"\n".join(lines) + b"\n")
    code, out, err = _mine(run_cli, path, "mine.on_error=skip")
    assert code == 0, err
    artifact = ArtifactStore(run_cli.root).resolve(out.split()[-1])
    assert artifact.manifest["metrics"]["skipped_lines"] == 2
    assert "skipped input lines: 2" in (artifact.path / "report.md").read_text()
    assert "skipped 2 bad input line(s)" in err  # on the terminal too, not only in report.md
    modes = {p.name: p.stat().st_mode & 0o777 for p in artifact.path.iterdir()}
    umask = os.umask(0)
    os.umask(umask)
    assert set(modes.values()) == {0o666 & ~umask}, modes  # one mode, the umask's


def test_high_min_support_explains_itself(run_cli, synthetic_file):
    code, _, err = _mine(run_cli, synthetic_file, "mine.min_support=999")
    assert code == 1 and "mine.min_support=999" in err
