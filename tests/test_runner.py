"""Stage commands through the CLI, with the test-only stages alpha and beta."""

from __future__ import annotations

import json

from talentrl_cli.artifacts import ArtifactStore


def test_stage_publishes_and_prints_ref_last(run_cli, test_stages):
    code, out, err = run_cli("alpha", "seed=3")
    assert code == 0 and out.strip().splitlines()[-1] == "alpha:v1"
    assert "alpha:v1 published in " in err and "(value=3)" in err  # its time and key metric, on stderr
    manifest = ArtifactStore(run_cli.root).resolve("alpha:v1").manifest
    assert manifest["config"] == {"seed": 3}
    assert manifest["metrics"] == {"value": 3}
    assert set(manifest["files"]) == {"value.txt", "sub/notes.md"}


def test_reuse_force_and_dry_run(run_cli, test_stages):
    assert run_cli("alpha", "seed=3")[1].split()[-1] == "alpha:v1"
    code, out, err = run_cli("alpha", "seed=3")
    assert out.split()[-1] == "alpha:v1" and "reusing" in err
    assert run_cli("alpha", "--force", "seed=3")[1].split()[-1] == "alpha:v2"
    assert run_cli("alpha", "seed=4")[1].split()[-1] == "alpha:v3"
    code, out, _ = run_cli("alpha", "--dry-run", "seed=5")
    assert code == 0 and "would run" in out and "seed: 5" in out
    assert len(ArtifactStore(run_cli.root).list("alpha")) == 3


def test_inputs_default_to_latest_and_accept_refs(run_cli, test_stages):
    run_cli("alpha", "seed=1")
    run_cli("alpha", "seed=2")
    code, out, _ = run_cli("beta")
    assert code == 0 and out.split()[-1] == "beta:v1"
    store = ArtifactStore(run_cli.root)
    assert (store.resolve("beta:v1").path / "value.txt").read_text() == "102\n"
    assert run_cli("beta", "inputs.alpha=alpha:v1")[1].split()[-1] == "beta:v2"
    assert (store.resolve("beta:v2").path / "value.txt").read_text() == "101\n"
    # same input digest and config: reused
    assert run_cli("beta", "inputs.alpha=alpha:v1")[1].split()[-1] == "beta:v2"


def test_corrupt_input_is_refused_before_the_stage_runs(run_cli, test_stages):
    run_cli("alpha")
    store = ArtifactStore(run_cli.root)
    (store.resolve("alpha:v1").path / "value.txt").write_text("999\n")
    code, out, err = run_cli("beta")
    assert code == 1 and "fails verification" in err and "alpha:v1" in err
    assert store.list("beta") == []


def test_missing_input_names_the_stage_to_run(run_cli, test_stages):
    code, _, err = run_cli("beta")
    assert code == 1 and "run `talentrl alpha` first" in err


def test_unknown_key_and_input_name_fail_with_suggestions(run_cli, test_stages):
    code, out, err = run_cli("alpha", "sed=1")
    assert code == 1 and "unknown config key 'sed'" in err and "seed" in err
    assert "Traceback" not in out + err
    code, _, err = run_cli("beta", "inputs.alpah=alpha:v1")
    assert code == 1 and "inputs.alpah" in err and "did you mean inputs.alpha" in err


def test_verbose_shows_the_traceback(run_cli, test_stages):
    code, _, err = run_cli("-v", "alpha", "sed=1")
    assert code == 1 and "Traceback" in err


def test_failing_stage_publishes_nothing(run_cli, test_stages, monkeypatch):
    from talentrl_cli.stages import STAGES, Stage

    def boom(cfg, inputs, out_dir):
        (out_dir / "half.txt").write_text("partial")
        raise RuntimeError("crash inside the stage")

    monkeypatch.setitem(STAGES._items, "alpha", Stage("alpha", boom, "boom", "talentrl alpha"))
    try:
        run_cli("alpha")
    except RuntimeError:
        pass
    store = ArtifactStore(run_cli.root)
    assert store.list("alpha") == []
    assert not list((run_cli.root / "alpha").glob(".tmp-*"))


def test_manifest_config_is_json_serialisable(run_cli, test_stages):
    run_cli("alpha")
    manifest_path = ArtifactStore(run_cli.root).resolve("alpha:latest").path / "manifest.json"
    assert json.loads(manifest_path.read_text())["config_hash"]
