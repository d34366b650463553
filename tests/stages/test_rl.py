"""`talentrl rl` with the tiny model on a small WorldQA world: every stage chained (mine ->
index -> sft -> rl -> eval of the rl policy), the artifact, resume equivalence, no partial
artifact after a crash, and user errors."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import SMALL_WORLD, run_stages

from talentrl_cli.artifacts import ArtifactStore

WORLD = SMALL_WORLD
RL_FAST = ("rl.tasks_per_step=2", "rl.group_size=2", "rl.interventions=1", "rl.max_steps=2",
           "rl.max_new_tokens=8", "index.k=2", "rl.lr=1e-3")
TRAIN_KEYS = ("reward_mean", "a_route_mean", "a_route_std", "loss", "kl", "grad_norm", "policy_tokens", "rollouts")


@pytest.fixture(scope="module")
def trained_root(tmp_path_factory):
    """mine:v1, index:v1 and sft:v1 (4 examples), built once for the module."""
    return run_stages(tmp_path_factory.mktemp("rl-inputs") / "artifacts",
                      ["mine", *WORLD, "source.n=60"], ["index", *WORLD],
                      ["sft", *WORLD, "sft.max_examples=4", "sft.batch_size=1", "sft.grad_accum=1", "index.k=2"])


@pytest.fixture
def trained(run_cli, trained_root):
    shutil.copytree(trained_root, run_cli.root)


def _rl(run_cli, *extra):
    code, out, err = run_cli("rl", *WORLD, *RL_FAST, *extra)
    assert code == 0, err
    return ArtifactStore(run_cli.root).resolve(out.split()[-1])


def _log(artifact):
    return [json.loads(line) for line in (artifact.path / "train_log.jsonl").open()]


def test_every_stage_chains_and_eval_reads_the_rl_policy(run_cli, trained):
    artifact = _rl(run_cli, "rl.steps=3", "rl.log_rollouts_every=2")
    assert artifact.manifest["inputs"]["model"]["ref"] == "sft:v1"
    files = {p.name for p in artifact.path.iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors", "base_model.json", "train_log.jsonl",
            "rollouts.jsonl", "report.md", "curves.png"} <= files
    log = _log(artifact)
    assert [r["step"] for r in log] == [0, 1, 2]
    assert all(k in log[0] for k in (*TRAIN_KEYS, "route_entropy", "route_acc", "route_signal_share",
                                     "zero_adv_share", "clip_frac", "rollouts_per_s", "time_routing",
                                     "time_rollouts", "time_interventions", "time_logprobs", "time_backward",
                                     "time_optimizer"))
    assert log[0]["rollouts"] + log[0]["reused_interventions"] == 2 * 2 * (1 + 1)  # tasks x G x (1 + M)
    rollouts = [json.loads(line) for line in (artifact.path / "rollouts.jsonl").open()]
    assert {r["step"] for r in rollouts} == {0, 2} and all(len(r["ids"]) == len(r["mask"]) for r in rollouts)
    assert all(len(r["interventions"]) == 1 and r["route"] for r in rollouts)
    assert "## Execution credit by action" in (artifact.path / "report.md").read_text()
    code, out, err = run_cli("eval", "inputs.model=rl:latest", *WORLD, "eval.limit=2", "eval.max_new_tokens=6",
                             "eval.max_steps=2", "eval.n_bootstrap=100", "index.k=2", "eval.modes=[talent]")
    assert code == 0, err
    assert ArtifactStore(run_cli.root).resolve(out.split()[-1]).manifest["inputs"]["model"]["ref"] == "rl:v1"


def test_a_run_killed_after_step_2_and_resumed_writes_the_same_train_log(run_cli, trained, monkeypatch):
    from talentrl_cli.rl.trainer import Trainer

    whole = _log(_rl(run_cli, "rl.steps=4", "rl.save_steps=2"))
    shutil.rmtree(run_cli.root / "rl")
    real_step = Trainer.step

    def dies_at_step_2(self, step):
        if step == 2:
            raise KeyboardInterrupt
        return real_step(self, step)

    monkeypatch.setattr(Trainer, "step", dies_at_step_2)
    code, _, _ = run_cli("rl", *WORLD, *RL_FAST, "rl.steps=4", "rl.save_steps=2")
    assert code != 0 and not list((run_cli.root / "rl").glob("v*"))  # nothing half-published
    monkeypatch.setattr(Trainer, "step", real_step)
    resumed = _log(_rl(run_cli, "rl.steps=4", "rl.save_steps=2", "--resume"))
    assert [r["step"] for r in resumed] == [0, 1, 2, 3]
    for a, b in zip(whole, resumed, strict=True):
        for key in TRAIN_KEYS:
            assert a[key] == pytest.approx(b[key], rel=1e-5, abs=1e-7), (a["step"], key)


def test_inputs_model_none_starts_from_the_base_model_with_a_fresh_adapter(run_cli, trained):
    artifact = _rl(run_cli, "inputs.model=none", "rl.steps=1", "rl.intervention=ablate")
    assert "model" not in artifact.manifest["inputs"]
    assert json.loads((artifact.path / "base_model.json").read_text())["adapter"] is True


def test_max_tasks_trains_on_the_first_n_tasks_of_the_split(run_cli, trained):
    from talentrl_cli.config import compose
    from talentrl_cli.envs import env_from_config

    artifact = _rl(run_cli, "rl.max_tasks=2", "rl.steps=3", "rl.log_rollouts_every=1")
    first = [t.id for t in env_from_config(compose(list(WORLD))).tasks("train")[:2]]
    assert {json.loads(line)["task_id"] for line in (artifact.path / "rollouts.jsonl").open()} == set(first)


def test_eval_every_logs_held_out_greedy_em_before_every_nth_step_and_after_the_last(run_cli, trained):
    artifact = _rl(run_cli, "rl.steps=3", "rl.eval_every=2", "rl.eval_limit=2")
    log = _log(artifact)
    assert [("dev_em" in r) for r in log] == [True, False, True]
    assert all(0.0 <= r["dev_em"] <= 1.0 for r in log if "dev_em" in r) and "dev_em_final" in log[-1]
    assert "dev_em_start" in artifact.manifest["metrics"]


def test_no_secret_reaches_an_rl_or_eval_artifact_log_or_wandb_run(run_cli, trained, monkeypatch):
    """Issue #18: credentials in the environment, one of them interpolated into the config,
    appear nowhere under the root (manifests, logs, rollouts, the offline W&B runs)."""
    from test_tracking import PLANTED, assert_no_planted_secret

    for key, value in PLANTED.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("WANDB_MODE", "offline")
    secret = ("tracking=offline", "model.name_or_path=${oc.env:FAKE_SERVICE_API_KEY}")  # unused by model=tiny
    artifact = _rl(run_cli, "rl.steps=1", "rl.log_rollouts_every=1", *secret)
    code, out, err = run_cli("eval", "inputs.model=rl:latest", *WORLD, "eval.limit=2", "eval.max_new_tokens=6",
                             "eval.max_steps=2", "eval.n_bootstrap=100", "index.k=2", "eval.modes=[talent]", *secret)
    assert code == 0, err
    evaluated = ArtifactStore(run_cli.root).resolve(out.split()[-1])
    for manifest in (artifact.manifest, evaluated.manifest):
        assert manifest["config"]["model"]["name_or_path"] == "***"
    assert list((run_cli.root / ".wandb").rglob("*.wandb"))
    assert_no_planted_secret(run_cli.root)


def test_bad_switches_end_in_one_clear_message(run_cli, trained):
    code, _, err = run_cli("rl", *WORLD, "rl.intervention=bogus")
    assert code == 1 and "rl.intervention='bogus' is not known" in err and "Traceback" not in err
    code, _, err = run_cli("rl", *WORLD, "rl.talents=none", "rl.routing_estimator=exhaustive")
    assert code == 1 and "rl.talents=none has no routing" in err


def test_rl_help_has_an_example(run_cli):
    code, out, _ = run_cli("rl", "--help")
    assert code == 0 and "talentrl rl" in out


@pytest.mark.slow
def test_two_process_cpu_run_killed_and_resumed_matches_an_uninterrupted_one(run_cli, trained):
    """`accelerate launch --cpu --num_processes 2` (gloo; each process takes every other task
    of a step): a run killed once its step-2 checkpoint exists, resumed with --resume, writes
    the train log of an uninterrupted two-process run."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    accelerate = Path(sys.executable).with_name("accelerate")
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}

    def launch(*extra, wait=True):
        cmd = [str(accelerate), "launch", "--cpu", "--num_processes", "2", "--num_machines", "1",
               "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "29519",
               "-m", "talentrl_cli", "--artifacts-root", str(run_cli.root), "rl", *WORLD, *RL_FAST,
               "rl.tasks_per_step=4", "rl.steps=4", "rl.save_steps=2", *extra]
        if not wait:
            return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True)
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return ArtifactStore(run_cli.root).resolve(proc.stdout.split()[-1])

    whole = _log(launch("--force"))
    killed = launch("--force", wait=False)
    checkpoints = run_cli.root / ".checkpoints" / "rl"
    deadline = time.time() + 600
    while not list(checkpoints.glob("*/step-2/state.json")) and time.time() < deadline and killed.poll() is None:
        time.sleep(0.2)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    resumed = _log(launch("--resume"))
    assert [r["step"] for r in resumed] == [0, 1, 2, 3]
    for a, b in zip(whole, resumed, strict=True):
        for key in TRAIN_KEYS:
            assert a[key] == pytest.approx(b[key], rel=1e-5, abs=1e-7), (a["step"], key)


def test_the_progress_line_says_when_filtering_kept_fewer_groups_or_none():
    from talentrl_cli.stages.rl import _info

    row = {"reward_mean": 0.5, "reward_drawn_mean": 0.25, "route_acc": None, "route_entropy": 1.2,
           "seconds": 10.0, "groups_trained": 4, "groups_drawn": 4}
    assert _info(row) == "reward 0.500  H 1.20  10.0s/step"
    assert _info({**row, "groups_trained": 2, "groups_drawn": 8}).startswith(
        "reward 0.250 drawn, 0.500 on 2/8 groups  H 1.20")
    nothing = _info({**row, "reward_mean": 0.0, "route_entropy": 0.0, "groups_trained": 0, "groups_drawn": 12})
    assert nothing == "reward 0.250 drawn, no group of 12 with a signal: nothing trained  10.0s/step"


def test_the_summary_reward_is_over_every_drawn_group():
    from talentrl_cli.stages.rl import summary

    rows = [{"reward_mean": m, "reward_drawn_mean": d, "route_acc": None, "seconds": 1.0}
            for m, d in ((0.5, 0.25), (0.0, 0.0), (0.75, 0.5))]
    assert (summary(rows)["reward_first"], summary(rows)["reward_last"]) == (0.25, 0.5)
