"""The bad-input corpus (issue #18, item 3): every input a user can get wrong, through the real
CLI. Each case ends with exit 1 and one message naming the file:line, key or ref (and, where
there is one, the fix); no traceback; and the artifacts published before it are unchanged."""

from __future__ import annotations

import json
import os
import re

import pytest
from mining.synthetic import synthetic_trajectories

from talentrl_cli.artifacts import ArtifactStore, verify
from talentrl_cli.jsonl import write_jsonl

GOOD = synthetic_trajectories(1)[0].model_dump_json()
TRAJ = [json.loads(t.model_dump_json()) for t in synthetic_trajectories()]


def _lines(*records) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


def _without(record: dict, key: str) -> dict:
    return {k: v for k, v in record.items() if k != key}


# name -> (file text or bytes, what the message must contain besides the file name)
TRAJECTORY_FILES = {
    "empty": ("", "file is empty"),
    "blank_only": ("\n\n  \n", "empty"),
    "truncated": (GOOD + "\n" + GOOD[:40], ":2:"),
    "non_utf8": (GOOD.encode() + b"\n\xff\xfe{}\n", ":2: not valid UTF-8"),
    "array": ("[" + GOOD + "]", "JSON array"),
    "wrong_type": (_lines(GOOD.replace('"success":true', '"success":"maybe"')), "success"),
    "steps_not_list": (_lines({**TRAJ[0], "steps": "search[x]"}), "steps"),
    "missing_id": (_lines(_without(TRAJ[0], "id")), ":1:"),
    "missing_task": (_lines(_without(TRAJ[0], "task")), "task"),
    "nan_reward": (_lines(*TRAJ[:5], json.dumps({**TRAJ[5], "reward": 1.0}).replace("1.0", "NaN", 1)),
                   ":6: NaN is not valid JSON"),
    "infinity": (_lines(json.dumps({**TRAJ[0], "reward": 1.0}).replace("1.0", "Infinity", 1)), "Infinity"),
    "duplicate_ids": (_lines(TRAJ[0], TRAJ[0]), "duplicate"),
    "not_objects": (_lines(GOOD, "42"), ":2: expected a JSON object"),
    "huge_line": (_lines({**TRAJ[0], "id": "x" * 5_000_000, "steps": 3}), "steps"),
}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A root holding a published mine and index, and a folder of bad files."""
    from talentrl_cli.cli import main

    base = tmp_path_factory.mktemp("bad")
    files = base / "files"
    files.mkdir()
    for name, (content, _) in TRAJECTORY_FILES.items():
        path = files / f"{name}.jsonl"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    good = files / "good.jsonl"
    write_jsonl(good, synthetic_trajectories())
    root = base / "artifacts"
    with pytest.raises(SystemExit) as done:
        main(["--artifacts-root", str(root), "mine", "source=native", f"source.path={good}"])
    assert done.value.code in (0, None)
    with pytest.raises(SystemExit) as done:
        main(["--artifacts-root", str(root), "index"])
    assert done.value.code in (0, None)
    return base


@pytest.fixture
def run_bad(world, capsys):
    """Runs one bad case; checks exit 1, no traceback, and the published artifacts intact."""
    from talentrl_cli.cli import main

    root = world / "artifacts"
    store = ArtifactStore(root)
    def inside() -> dict:
        found = [a for a in store.list() if a.path.is_relative_to(store.root)]
        assert not any(verify(a) for a in found)
        return {a.path: a.digest for a in found}

    before = inside()

    def run(*args: str, env: dict | None = None) -> str:
        saved = {k: os.environ.get(k) for k in env or {}}
        os.environ.update(env or {})
        try:
            main(["--artifacts-root", str(root), *args]) if not env else main(list(args))
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        finally:
            for k, v in saved.items():
                os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
        out, err = capsys.readouterr()
        assert code == 1, (args, out, err)
        assert "Traceback" not in out + err, err
        assert sum(line.startswith("error:") for line in err.splitlines()) == 1, err
        assert inside() == before
        return err

    return run


@pytest.mark.parametrize("name", list(TRAJECTORY_FILES))
def test_bad_trajectory_file(run_bad, world, name):
    err = run_bad("mine", "source=native", f"source.path={world / 'files' / f'{name}.jsonl'}")
    assert f"{name}.jsonl" in err and TRAJECTORY_FILES[name][1] in err, err


def test_missing_and_directory_trajectory_paths(run_bad, world):
    assert "nowhere.jsonl" in run_bad("mine", "source=native", f"source.path={world / 'nowhere.jsonl'}")
    assert "files" in run_bad("mine", "source=native", f"source.path={world / 'files'}")


@pytest.mark.parametrize(("source", "record", "field"), [
    ("react", {"id": "r1"}, "r1"),
    ("alfworld_react", {"id": "a1", "task": "put a mug in the sink.", "steps": "go to sink 1"}, "steps"),
    ("alfworld_react", {"id": "a2", "steps": []}, "task"),
])
def test_bad_records_of_other_sources(run_bad, world, source, record, field):
    path = world / "files" / f"{source}-{record['id']}.jsonl"
    path.write_text(json.dumps(record) + "\n")
    err = run_bad("mine", f"source={source}", f"source.path={path}")
    assert path.name in err and ":1:" in err, err


QA_CASES = {
    "qa_no_question": ([{"id": "q1", "answers": ["x"]}], [{"id": "p1", "title": "t", "contents": "c"}], "question"),
    "qa_no_answers": ([{"id": "q1", "question": "q?"}], [{"id": "p1", "title": "t", "contents": "c"}], "answers"),
    "corpus_no_contents": ([{"id": "q1", "question": "q?", "answers": ["x"]}], [{"id": "p1", "title": "t"}],
                           "contents"),
    "corpus_empty": ([{"id": "q1", "question": "q?", "answers": ["x"]}], [], "empty"),
}


@pytest.mark.parametrize("name", list(QA_CASES))
def test_bad_qa_files(run_bad, world, name):
    questions, corpus, field = QA_CASES[name]
    q, c = world / "files" / f"{name}-q.jsonl", world / "files" / f"{name}-c.jsonl"
    q.write_text(_lines(*questions))
    c.write_text(_lines(*corpus))
    err = run_bad("eval", "env=qa", f"env.path={q}", f"env.corpus={c}", "inputs.model=none",
                  "eval.modes=[zero_shot]")
    assert field in err and ("-q.jsonl" in err or "-c.jsonl" in err), err


@pytest.mark.parametrize(("args", "names"), [
    (["mine", "mine.foo=1"], "mine.foo"),
    (["mine", "mine.min_support=abc"], "mine.min_support"),
    (["sft", "sft.lr=fast"], "sft.lr"),
    (["rl", "rl.resume=maybe"], "rl.resume"),
    (["index", "index.k=-1"], "index.k"),
    (["index", "index.lam=nan"], "index.lam"),
    (["rl", "rl.group_size=0"], "rl.group_size"),
    (["eval", "eval.n_bootstrap=0"], "eval.n_bootstrap"),
    (["rl", "rl.lr=-1e-5"], "rl.lr"),
    (["mine", "model=gpt5"], "model=gpt5"),
    (["mine", "+extra.key=1"], "extra.key"),
    (["eval", "inputs.model=none", "eval.modes=[bogus]"], "bogus"),
    (["mine", "env.noise=2"], "env.noise"),
    (["sft", "sft.mode=weird"], "sft.mode"),
    (["mine", "mine.k_range=[5,2]"], "mine.k_range"),
    (["mine", "mine.on_error=ignore"], "on_error"),
    (["mine", "mine.merge_cosine=high"], "mine.merge_cosine"),
])
def test_bad_config_values(run_bad, args, names):
    assert names in run_bad(*args)


@pytest.mark.parametrize(("ref", "names"), [
    ("nostage:v1", "nostage"),
    ("mine:v99", "mine:v99"),
    ("mine:../../etc", "mine:../../etc"),
    ("mine:", "mine:"),
])
def test_bad_refs(run_bad, ref, names):
    assert names in run_bad("index", f"inputs.mine={ref}")


def test_a_version_symlinked_outside_the_root_is_refused(run_bad, world, tmp_path):
    outside = tmp_path / "elsewhere"
    mine = world / "artifacts" / "mine"
    (outside).mkdir()
    (outside / "manifest.json").write_text((mine / "v1" / "manifest.json").read_text())
    link = mine / "v9"
    link.symlink_to(outside, target_is_directory=True)
    try:
        assert "outside" in run_bad("index", "inputs.mine=mine:v9")
    finally:
        link.unlink()


def test_a_stale_latest_pointer(run_bad, world):
    pointer = world / "artifacts" / "mine" / "latest"
    saved = pointer.read_text()
    pointer.write_text("v7\n")
    try:
        assert "stale pointer" in run_bad("index", "inputs.mine=mine:latest")
    finally:
        pointer.write_text(saved)


def test_model_paths(run_bad, world):
    assert "/no/such/model" in run_bad("eval", "model=hf", "model.name_or_path=/no/such/model", "inputs.model=none",
                                       "eval.limit=1", "env.retriever=lexical")
    empty = world / "files" / "not_a_model"
    empty.mkdir(exist_ok=True)
    assert "not_a_model" in run_bad("eval", "model=hf", f"model.name_or_path={empty}", "inputs.model=none",
                                    "eval.limit=1", "env.retriever=lexical")


def test_an_artifacts_root_that_is_a_file(run_bad, world):
    bad_home = world / "files" / "home_is_a_file"
    bad_home.write_text("x")
    err = run_bad("mine", "source=native", f"source.path={world / 'files' / 'good.jsonl'}",
                  env={"TALENTRL_HOME": str(bad_home)})
    assert "home_is_a_file" in err


def test_the_corpus_has_at_least_40_cases():
    """Counted from this module's own tests (each parametrised case once), so removing cases
    fails here; a test that checks two inputs counts once."""
    tests = [f for name, f in globals().items()
             if name.startswith("test_") and f is not test_the_corpus_has_at_least_40_cases]
    count = sum(len(m.args[1]) if m.name == "parametrize" else 0 for f in tests for m in getattr(f, "pytestmark", []))
    count += sum(1 for f in tests if not getattr(f, "pytestmark", None))
    assert count >= 40, count



def test_a_full_disk_during_a_stage_is_one_message_and_publishes_nothing(run_bad, world, monkeypatch):
    import errno

    import talentrl_cli.jsonl as jsonl

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(jsonl.os, "fdopen", full)
    err = run_bad("mine", "--force", "source=native", f"source.path={world / 'files' / 'good.jsonl'}")
    flat = " ".join(err.split())  # rich wraps long lines
    assert "No space left on device" in flat and re.search(r"cannot write /\S+\.jsonl:", flat), flat


def test_torch_writing_into_a_full_disk_is_one_message(run_bad, world, monkeypatch):
    """torch.save's zip writer raises a RuntimeError without an errno when the disk fills."""
    import talentrl_cli.jsonl as jsonl

    def short(*args, **kwargs):
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 65408 vs 65296")

    monkeypatch.setattr(jsonl.os, "fdopen", short)
    err = run_bad("mine", "--force", "source=native", f"source.path={world / 'files' / 'good.jsonl'}")
    assert "torch's writer stopped short" in " ".join(err.split())
