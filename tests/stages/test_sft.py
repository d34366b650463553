"""`talentrl sft` with the tiny model on a synthetic mine + index: the dataset, training, the
PEFT artifact, resume, full fine-tuning and the merged export."""

from __future__ import annotations

import json
import shutil

import pytest
from mining.synthetic import synthetic_trajectories

from talentrl_cli.artifacts import ArtifactStore
from talentrl_cli.jsonl import write_jsonl

FAST = ("sft.max_examples=8", "sft.batch_size=4", "sft.max_length=2048", "sft.logging_steps=1", "index.k=2")


@pytest.fixture(scope="module")
def indexed_root(tmp_path_factory):
    """An artifacts root holding mine:v1 and index:v1, built once for the module."""
    from talentrl_cli.cli import main

    folder = tmp_path_factory.mktemp("sft-inputs")
    write_jsonl(folder / "synthetic.jsonl", synthetic_trajectories())
    for args in (["mine", "source=native", f"source.path={folder / 'synthetic.jsonl'}"], ["index"]):
        try:
            main(["--artifacts-root", str(folder / "artifacts"), *args])
        except SystemExit as exit_:
            assert not exit_.code
    return folder / "artifacts"


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

    artifact = _sft(run_cli, "sft.max_steps=3")
    files = set(artifact.manifest["files"])
    assert {"adapter_config.json", "adapter_model.safetensors", "base_model.json", "train_log.jsonl",
            "sft_data.jsonl", "tokenizer.json", "tokenizer_config.json"} <= files
    metrics = artifact.manifest["metrics"]
    assert metrics["steps"] == 3 and len(metrics["loss_curve"]) == 3 and metrics["tokens_per_s"] > 0
    assert metrics["loss_start"] > 0 and metrics["n_examples"] == 8
    base_info = json.loads((artifact.path / "base_model.json").read_text())
    base = AutoModelForCausalLM.from_pretrained(base_info["path"])
    model = PeftModel.from_pretrained(base, artifact.path)
    tokenizer = AutoTokenizer.from_pretrained(artifact.path)
    prompt = tokenizer.apply_chat_template(_examples(artifact)[0]["messages"][:2], tokenize=False,
                                           add_generation_prompt=True)
    ids = tokenizer(prompt, return_tensors="pt").input_ids
    out = model.generate(ids, max_new_tokens=5, do_sample=False)
    assert out.shape[1] > ids.shape[1]


def test_sft_dataset_modes(run_cli, indexed):
    talent = _examples(_sft(run_cli, "sft.max_steps=1"))
    assert all(e["talent"] and e["skills"] for e in talent)
    first = talent[0]["messages"]
    assert first[2] == {"role": "assistant", "content": f"<talent>{talent[0]['talent']}</talent>"}
    assert all(m["content"].startswith("Observation: ") for m in first[5::2])
    assert first[-1]["role"] == "assistant" and "respond[" in first[-1]["content"]
    flat = _examples(_sft(run_cli, "sft.max_steps=1", "sft.mode=flat"))
    assert all(e["talent"] is None and e["skills"] for e in flat)
    assert all("<talent>" not in m["content"] for e in flat for m in e["messages"])
    none = _examples(_sft(run_cli, "sft.max_steps=1", "sft.mode=none"))
    assert all(not e["skills"] and "Skills:" not in e["messages"][1]["content"] for e in none)
    code, _, err = run_cli("sft", "sft.mode=bogus")
    assert code == 1 and "sft.mode" in err
