"""`talentrl sft` with the tiny model on a synthetic mine + index: the dataset, training, the
PEFT artifact, resume, full fine-tuning and the merged export."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import run_stages
from mining.synthetic import synthetic_trajectories

from talentrl_cli.artifacts import ArtifactStore
from talentrl_cli.jsonl import write_jsonl

FAST = ("sft.max_examples=4", "sft.batch_size=1", "sft.grad_accum=1", "sft.max_length=2048", "sft.logging_steps=1",
        "index.k=1")


@pytest.fixture(scope="module")
def indexed_root(tmp_path_factory):
    """An artifacts root holding mine:v1 and index:v1, built once for the module."""
    folder = tmp_path_factory.mktemp("sft-inputs")
    write_jsonl(folder / "synthetic.jsonl", synthetic_trajectories())
    return run_stages(folder / "artifacts", ["mine", "source=native", f"source.path={folder / 'synthetic.jsonl'}"],
                      ["index"])


@pytest.fixture
def indexed(run_cli, indexed_root):
    shutil.copytree(indexed_root, run_cli.root)
    return "index:v1"


def _sft(run_cli, *extra):
    code, out, err = run_cli("sft", *FAST, *extra)
    assert code == 0, err
    return ArtifactStore(run_cli.root).resolve(out.split()[-1])


def _examples(artifact):
    return [json.loads(line) for line in (artifact.path / "sft_data.jsonl").open()]


def test_sft_trains_a_peft_adapter_that_loads_and_generates(run_cli, indexed):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    artifact = _sft(run_cli, "sft.max_steps=2")
    files = set(artifact.manifest["files"])
    assert {"adapter_config.json", "adapter_model.safetensors", "base_model.json", "train_log.jsonl",
            "sft_data.jsonl", "tokenizer.json", "tokenizer_config.json"} <= files
    metrics = artifact.manifest["metrics"]
    assert metrics["steps"] == 2 and len(metrics["loss_curve"]) == 2 and metrics["tokens_per_s"] > 0
    assert metrics["loss_start"] > 0 and metrics["n_examples"] == 4 and metrics["mode"] == "talent"
    assert 0 < metrics["tokens"] < metrics["tokens_per_epoch"]  # 2 of the 4 examples
    base_info = json.loads((artifact.path / "base_model.json").read_text())
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base_info["path"]), artifact.path)
    tokenizer = AutoTokenizer.from_pretrained(artifact.path)
    prompt = tokenizer.apply_chat_template(_examples(artifact)[0]["messages"][:2], tokenize=False,
                                           add_generation_prompt=True)
    ids = tokenizer(prompt, return_tensors="pt").input_ids
    out = model.generate(ids, max_new_tokens=5, do_sample=False)
    assert out.shape[1] > ids.shape[1]
    assert not list((run_cli.root / ".checkpoints" / "sft").glob("*/checkpoint-*"))  # a finished run cleans up


def test_the_console_is_one_step_bar_without_log_dicts_or_library_noise(run_cli, indexed):
    code, out, err = run_cli("sft", *FAST, "sft.max_steps=2")
    assert code == 0 and out.strip().splitlines()[-1] == "sft:v1"
    assert "sft: train  0/2 steps" in err and "sft: train  2/2 steps  done in" in err
    assert "loss " in err and " tok/s" in err and "sft:v1 published in " in err
    assert "{'loss'" not in out + err and "Loading weights" not in err and "Warning" not in err
    assert "examples/s" not in err  # datasets' map bars


@pytest.fixture
def inputs(run_cli, indexed):
    store = ArtifactStore(run_cli.root)
    return store.resolve("mine:v1"), store.resolve("index:v1")


def _dataset(inputs, *overrides):
    from talentrl_cli.config import compose
    from talentrl_cli.stages.sft import build_dataset

    return build_dataset(compose([*FAST, *overrides]), *inputs)


def test_talent_mode_routes_then_acts_with_the_labels_skills(inputs):
    examples = _dataset(inputs)
    labels = {json.loads(line)["trajectory_id"]: json.loads(line)["talent"]
              for line in inputs[0].file("labels.jsonl").open()}
    assert len(examples) == 4 and all(e["talent"] == labels[e["id"]] and len(e["skills"]) == 1 for e in examples)
    first = examples[0]["messages"]
    assert [m["role"] for m in first[:4]] == ["system", "user", "assistant", "user"]
    assert first[2]["content"] == f"<talent>{examples[0]['talent']}</talent>"
    assert "Talents:" in first[1]["content"] and "Skills:" in first[3]["content"]
    assert all(m["content"].startswith("Observation: ") for m in first[5::2])
    assert first[-1]["role"] == "assistant" and "respond[" in first[-1]["content"]


def test_flat_and_none_modes(inputs):
    flat = _dataset(inputs, "sft.mode=flat")
    assert all(e["talent"] is None and e["skills"] for e in flat)
    assert all("<talent>" not in m["content"] and "Talent" not in m["content"] for e in flat for m in e["messages"])
    none = _dataset(inputs, "sft.mode=none")
    assert all(not e["skills"] and "Skills:" not in e["messages"][1]["content"] for e in none)


def test_bad_mode_and_too_short_max_length_are_user_errors(run_cli, indexed):
    code, _, err = run_cli("sft", "sft.mode=bogus")
    assert code == 1 and "sft.mode" in err
    code, _, err = run_cli("sft", *FAST, "sft.max_length=16")
    assert code == 1 and "sft.max_length=16" in err


def test_resume_continues_from_the_last_checkpoint(run_cli, indexed, monkeypatch):
    from transformers import TrainerCallback

    from talentrl_cli import sft_train

    class Interrupt(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 2:
                raise RuntimeError("simulated crash")

    monkeypatch.setattr(sft_train, "_wandb_callback", Interrupt)
    with pytest.raises(RuntimeError, match="simulated crash"):
        run_cli("sft", *FAST, "sft.max_steps=3", "sft.save_steps=1")
    assert [p.name for p in (run_cli.root / ".checkpoints" / "sft").glob("*/checkpoint-*")] == ["checkpoint-1"]
    assert not (run_cli.root / "sft" / "latest").exists()  # the crash published nothing
    monkeypatch.undo()
    code, out, err = run_cli("sft", "--resume", *FAST, "sft.max_steps=3", "sft.save_steps=1")
    assert code == 0, err
    resumed = ArtifactStore(run_cli.root).resolve(out.split()[-1])
    assert resumed.manifest["config"]["sft"]["resume"] is True
    metrics = resumed.manifest["metrics"]
    assert metrics["resumed_from"] == "checkpoint-1" and metrics["steps"] == 3
    assert [step for step, _ in metrics["loss_curve"]] == [1, 2, 3]


def test_full_finetune_and_merged_export(run_cli, indexed):
    from transformers import AutoModelForCausalLM

    full = _sft(run_cli, "sft.max_steps=1", "sft.full_finetune=true")
    files = set(full.manifest["files"])
    assert "model.safetensors" in files and "adapter_config.json" not in files
    assert full.manifest["metrics"]["trainable_params"] > 50_000
    merged = _sft(run_cli, "sft.max_steps=1", "sft.merge=true")
    assert {"adapter_model.safetensors", "merged/model.safetensors", "merged/tokenizer.json"} <= set(merged.manifest["files"])
    model = AutoModelForCausalLM.from_pretrained(merged.path / "merged")
    assert not any("lora" in name for name, _ in model.named_parameters())


@pytest.mark.slow
def test_two_process_data_parallel_cpu_run_gives_the_same_artifact_format(run_cli, indexed):
    """`accelerate launch --cpu --num_processes 2`: two gloo processes (the entry point
    re-launches under torchrun, see `distributed`), and the artifact format of a single run."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    single = _sft(run_cli, "sft.max_steps=2")
    accelerate = Path(sys.executable).with_name("accelerate")
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}
    proc = subprocess.run(
        [str(accelerate), "launch", "--cpu", "--num_processes", "2", "--num_machines", "1",
         "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "29517",
         "-m", "talentrl_cli", "--artifacts-root", str(run_cli.root), "sft", "--force", *FAST,
         "sft.max_steps=2"],
        env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ref = proc.stdout.split()[-1]
    parallel = ArtifactStore(run_cli.root).resolve(ref)
    assert set(parallel.manifest["files"]) == set(single.manifest["files"])
    metrics = parallel.manifest["metrics"]
    assert metrics["world_size"] == 2 and metrics["epochs"] == 1.0  # 2 steps x 2 processes x batch 1 = 4 examples
    assert sorted(p.name for p in (run_cli.root / "sft").iterdir() if p.name.startswith("v")) == ["v1", "v2"]
