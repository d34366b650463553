"""The corruption matrix (issue #18, item 2): one byte flipped, the file truncated to half, or
the file deleted, for each file type an artifact holds (manifest, jsonl, npy, index.bin,
safetensors, tokenizer, config), against every stage that reads that artifact. Each case
must end in exit 1 before the stage uses the input, with one message naming the file, no
traceback, and nothing new published."""

from __future__ import annotations

import shutil

import pytest
from conftest import SMALL_WORLD, run_stages

WORLD = (*SMALL_WORLD, "index.k=2")
EVAL_FAST = ("eval.limit=2", "eval.max_steps=2", "eval.max_new_tokens=6", "eval.n_bootstrap=100", "eval.modes=[talent]")
RL_FAST = ("rl.steps=1", "rl.tasks_per_step=1", "rl.group_size=2", "rl.max_steps=2", "rl.max_new_tokens=6")
POLICY_FILES = ("manifest.json", "adapter_model.safetensors", "tokenizer.json", "adapter_config.json",
                "base_model.json", "train_log.jsonl")
# artifact -> (its files, one per type; the commands of the stages that read it)
READERS = {
    "mine": (("manifest.json", "skills.jsonl", "trajectories.jsonl"),
             (("index", *WORLD), ("sft", *WORLD, "sft.max_examples=2"))),
    "index": (("manifest.json", "skills.jsonl", "talent_weights.npy", "index/embeddings.npy", "index/index.bin",
               "embedder.json", "index/meta.json"),
              (("sft", *WORLD, "sft.max_examples=2"), ("rl", *WORLD, *RL_FAST), ("eval", *WORLD, *EVAL_FAST))),
    "sft": (POLICY_FILES, (("rl", *WORLD, *RL_FAST, "inputs.model=sft:v1"),
                           ("eval", *WORLD, *EVAL_FAST, "inputs.model=sft:v1"))),
    "rl": (POLICY_FILES, (("rl", *WORLD, *RL_FAST, "inputs.model=rl:v1"),
                          ("eval", *WORLD, *EVAL_FAST, "inputs.model=rl:v1"))),
    "eval": (("manifest.json", "results.jsonl", "metrics.json"), (("report", "eval:v1"),)),
}
MUTATIONS = ("flip", "truncate", "delete")
CASES = [(artifact, name, mutation, reader)
         for artifact, (names, readers) in READERS.items()
         for name in names for mutation in MUTATIONS for reader in readers]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One artifact of each stage, with the tiny model, built once."""
    return run_stages(tmp_path_factory.mktemp("corruption") / "artifacts",
                      ["mine", *WORLD, "source.n=60"], ["index", *WORLD],
                      ["sft", *WORLD, "sft.max_examples=4", "sft.batch_size=1", "sft.grad_accum=1"],
                      ["rl", *WORLD, *RL_FAST], ["eval", *WORLD, *EVAL_FAST, "inputs.model=rl:v1"])


def mutate(path, how: str) -> None:
    blob = path.read_bytes()
    if how == "delete":
        path.unlink()
    elif how == "truncate":
        path.write_bytes(blob[: len(blob) // 2])
    else:  # one bit of the middle byte
        middle = len(blob) // 2
        path.write_bytes(blob[:middle] + bytes([blob[middle] ^ 0x01]) + blob[middle + 1:])


def test_the_matrix_covers_every_file_type_and_reader():
    names = {name for names, _ in READERS.values() for name in names}
    kinds = {n.rsplit(".", 1)[-1] for n in names} | {"tokenizer" for n in names if "tokenizer" in n}
    assert {"json", "jsonl", "npy", "bin", "safetensors", "tokenizer"} <= kinds
    assert len(CASES) >= 140


@pytest.mark.parametrize(("artifact", "name", "mutation", "reader"), CASES,
                         ids=[f"{a}-{n}-{m}-{r[0]}" for a, n, m, r in CASES])
def test_a_corrupt_input_is_refused_before_use_naming_the_file(built, run_cli, artifact, name, mutation, reader):
    shutil.copytree(built, run_cli.root)
    mutate(run_cli.root / artifact / "v1" / name, mutation)
    published = {p.name for p in (run_cli.root / reader[0]).glob("v*")} if reader[0] != "report" else set()
    code, out, err = run_cli(*reader)
    assert code == 1, (out, err)
    assert "Traceback" not in out + err and sum(line.startswith("error:") for line in err.splitlines()) == 1, err
    shown = err.replace("\n", "")
    assert name.rsplit("/", 1)[-1] in shown or (name == "manifest.json" and "manifest" in shown), err
    if reader[0] != "report":
        assert {p.name for p in (run_cli.root / reader[0]).glob("v*")} == published
    else:
        assert not (run_cli.root / "reports").exists()
