"""The versioned artifact store: publish, refs, verification, reuse, atomicity."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from talentrl_cli.artifacts import ArtifactStore, verify
from talentrl_cli.errors import ArtifactError


def _publish(store: ArtifactStore, stage: str = "alpha", text: str = "x", inputs=None):
    with store.staging(stage) as tmp:
        (tmp / "data.txt").write_text(text)
        return store.publish(tmp, stage=stage, config={"seed": 0}, config_hash="h" * 64,
                             inputs=inputs or {}, metrics={"n": 1})


def test_publish_assigns_versions_and_moves_latest(tmp_path):
    store = ArtifactStore(tmp_path)
    first, second = _publish(store, text="a"), _publish(store, text="b")
    assert (first.version, second.version) == ("v1", "v2")
    assert store.resolve("alpha:latest").version == "v2"
    assert store.resolve("alpha:v1").path == first.path
    assert store.resolve(str(first.path)).ref == "alpha:v1"
    manifest = json.loads((second.path / "manifest.json").read_text())
    for key in ("stage", "version", "created", "code_version", "config", "config_hash",
                "inputs", "files", "metrics", "digest"):
        assert key in manifest
    assert set(manifest["files"]) == {"data.txt"}
    assert not list((tmp_path / "alpha").glob(".tmp-*"))


def test_inputs_are_recorded_with_digests(tmp_path):
    store = ArtifactStore(tmp_path)
    parent = _publish(store)
    child = _publish(store, stage="beta", inputs={"alpha": parent})
    record = child.manifest["inputs"]["alpha"]
    assert record["ref"] == "alpha:v1" and record["digest"] == parent.digest


@pytest.mark.parametrize("ref", ["alpha:../../etc", "alpha:v0", "Alpha:v1", "alpha:v1/../v2", "alpha:"])
def test_malformed_and_escaping_refs_are_rejected(tmp_path, ref):
    store = ArtifactStore(tmp_path)
    _publish(store)
    with pytest.raises(ArtifactError):
        store.resolve(ref)


def test_explicit_path_outside_root_is_allowed(tmp_path):
    other = ArtifactStore(tmp_path / "elsewhere")
    artifact = _publish(other)
    store = ArtifactStore(tmp_path / "root")
    relative = os.path.relpath(artifact.path, Path.cwd())
    assert store.resolve(relative).digest == artifact.digest


def test_missing_latest_names_the_fix(tmp_path):
    with pytest.raises(ArtifactError, match="run `talentrl mine` first"):
        ArtifactStore(tmp_path).resolve("mine:latest")


def test_verify_detects_flipped_byte_missing_and_extra_files(tmp_path):
    store = ArtifactStore(tmp_path)
    artifact = _publish(store, text="hello")
    assert verify(artifact) == []
    data = artifact.path / "data.txt"
    data.write_bytes(b"jello")
    assert verify(artifact) == ["sha256 mismatch in data.txt"]
    data.unlink()
    assert verify(artifact) == ["missing file data.txt"]
    data.write_text("hello")
    (artifact.path / "stray.bin").write_text("?")
    assert verify(artifact) == ["unexpected file stray.bin"]


def test_resolve_verified_refuses_a_corrupt_input(tmp_path):
    store = ArtifactStore(tmp_path)
    artifact = _publish(store, text="hello")
    (artifact.path / "data.txt").write_text("tampered")
    with pytest.raises(ArtifactError, match="fails verification"):
        store.resolve_verified("alpha:latest")


def test_find_reusable_matches_config_and_inputs(tmp_path):
    store = ArtifactStore(tmp_path)
    artifact = _publish(store)
    assert store.find_reusable("alpha", "h" * 64, {}) == artifact
    assert store.find_reusable("alpha", "g" * 64, {}) is None
    assert store.find_reusable("alpha", "h" * 64, {"x": "d"}) is None
    (artifact.path / "data.txt").write_text("tampered")
    assert store.find_reusable("alpha", "h" * 64, {}) is None


_PUBLISHER = textwrap.dedent("""
    import sys, time
    from talentrl_cli.artifacts import ArtifactStore
    store = ArtifactStore(sys.argv[1])
    for i in range(int(sys.argv[3])):
        with store.staging("alpha") as tmp:
            (tmp / "data.txt").write_text(f"{sys.argv[2]}-{i}")
            store.publish(tmp, stage="alpha", config={}, config_hash="h" * 64, inputs={}, metrics={})
""")


def test_two_processes_publishing_give_distinct_verifiable_versions(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", _PUBLISHER, str(tmp_path), name, "20"])
             for name in ("p", "q")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    artifacts = ArtifactStore(tmp_path).list("alpha")
    assert [a.version for a in artifacts] == [f"v{i}" for i in range(1, 41)]
    contents = {(a.path / "data.txt").read_text() for a in artifacts}
    assert len(contents) == 40
    assert all(verify(a) == [] for a in artifacts)
    assert ArtifactStore(tmp_path).resolve("alpha:latest").version == "v40"


_SLOW_WRITER = textwrap.dedent("""
    import sys, time
    from talentrl_cli.artifacts import ArtifactStore
    store = ArtifactStore(sys.argv[1])
    with store.staging("alpha") as tmp:
        with open(tmp / "big.bin", "wb") as f:
            for _ in range(10_000):
                f.write(b"x" * 4096); f.flush()
                print("writing", flush=True)
                time.sleep(0.01)
        store.publish(tmp, stage="alpha", config={}, config_hash="h" * 64, inputs={}, metrics={})
""")


def test_sigkill_mid_write_leaves_no_visible_version(tmp_path):
    store = ArtifactStore(tmp_path)
    _publish(store, text="before")
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_WRITER, str(tmp_path)], stdout=subprocess.PIPE)
    assert proc.stdout.readline().startswith(b"writing")
    time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert [a.version for a in store.list("alpha")] == ["v1"]
    assert store.resolve("alpha:latest").version == "v1"
    assert list((tmp_path / "alpha").glob(".tmp-*")), "the killed writer's staging folder stays hidden"
    _publish(store, text="after")  # the next publisher removes the orphan
    assert [p.name for p in (tmp_path / "alpha").glob(".tmp-*")] == []
    assert [a.version for a in store.list("alpha")] == ["v1", "v2"]


def test_failed_stage_body_leaves_nothing(tmp_path):
    store = ArtifactStore(tmp_path)
    with pytest.raises(RuntimeError), store.staging("alpha") as tmp:
        (tmp / "partial.txt").write_text("half")
        raise RuntimeError("stage crashed")
    assert store.list("alpha") == []
    assert list((tmp_path / "alpha").glob(".tmp-*")) == []


def test_verify_cli_exits_1_on_flipped_byte_and_missing_file(run_cli):
    store = ArtifactStore(run_cli.root)
    artifact = _publish(store, text="hello")
    code, out, _ = run_cli("artifacts", "verify", "alpha:latest")
    assert code == 0 and "OK" in out
    (artifact.path / "data.txt").write_bytes(b"hellp")
    code, out, _ = run_cli("artifacts", "verify", "alpha:latest")
    assert code == 1 and "sha256 mismatch in data.txt" in out
    (artifact.path / "data.txt").unlink()
    code, out, _ = run_cli("artifacts", "verify", "--all")
    assert code == 1 and "missing file data.txt" in out


def test_artifacts_list_show_lineage(run_cli):
    store = ArtifactStore(run_cli.root)
    parent = _publish(store)
    _publish(store, stage="beta", inputs={"alpha": parent})
    code, out, _ = run_cli("artifacts", "list")
    assert code == 0 and "alpha:v1" in out and "beta:v1" in out
    code, out, _ = run_cli("artifacts", "show", "beta:latest")
    assert code == 0 and json.loads(out)["inputs"]["alpha"]["ref"] == "alpha:v1"
    code, out, _ = run_cli("artifacts", "lineage", "beta:v1")
    assert code == 0 and "beta:v1" in out and "alpha: alpha:v1" in out


def test_bad_ref_is_one_clear_message(run_cli):
    code, out, err = run_cli("artifacts", "show", "alpha:../../etc")
    assert code == 1
    assert "bad artifact ref" in err and "Traceback" not in err + out


def test_a_corrupt_manifest_is_reported_and_the_others_still_listed_and_verified(run_cli):
    store = ArtifactStore(run_cli.root)
    broken, _ = _publish(store, text="a"), _publish(store, text="b")
    (broken.path / "manifest.json").write_text("{not json")
    code, out, err = run_cli("artifacts", "list")
    flat = out.replace("\n", "")  # rich wraps long paths
    assert code == 0 and "UNREADABLE" in out and "alpha/v1/manifest.json" in flat and "alpha:v2" in out
    code, out, err = run_cli("artifacts", "verify", "--all")
    assert code == 1 and "FAILED unreadable manifest" in out and "OK alpha:v2" in out
    assert "Traceback" not in out + err


def test_a_stale_latest_pointer_says_so_and_how_to_fix_it(tmp_path):
    store = ArtifactStore(tmp_path)
    _publish(store)
    (tmp_path / "alpha" / "latest").write_text("v7")
    with pytest.raises(ArtifactError, match=r"stale pointer .*latest: it names v7") as info:
        store.resolve("alpha:latest")
    assert "artifacts list alpha" in info.value.hint
