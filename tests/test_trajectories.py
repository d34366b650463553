"""Trajectory loaders on the real logs (counts from shared/data SOURCES.md) and on bad input."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from talentrl_cli.errors import ConfigError, DataError
from talentrl_cli.jsonl import ReadStats, write_jsonl
from talentrl_cli.trajectories import (
    TRAJECTORY_SOURCES,
    load_trajectories,
    parse_react_turn,
)

FIREACT_DEV = "trajectories/fireact_hotpotqa_dev_gpt35ft_react_465.jsonl"
FIREACT_SFT = "trajectories/fireact_hotpotqa_sft_react_500.jsonl"
REFLEXION = "trajectories/reflexion_hotpotqa_react_trial1.jsonl"
ALFWORLD = "alfworld/react_fewshot_trajectories.jsonl"
ALFWORLD_TYPES = {
    "pick_and_place_simple",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "look_at_obj_in_light",
    "pick_two_obj_and_place",
}


def _load(source, *paths, **kwargs):
    return list(load_trajectories(source, [str(p) for p in paths], **kwargs))


def test_registry_names():
    assert {"native", "worldqa", "react", "alfworld_react"} <= set(TRAJECTORY_SOURCES.names())
    with pytest.raises(ConfigError, match="did you mean react"):
        TRAJECTORY_SOURCES.get("recat")


# --- real files ----------------------------------------------------------------------


def test_fireact_dev(shared_data):
    trajs = _load("react", shared_data / FIREACT_DEV)
    assert len(trajs) == 465
    assert sum(t.success for t in trajs) == 200
    assert all(t.task.answers and t.steps and t.source == "react" for t in trajs)
    by_id = {t.id: t for t in trajs}
    first = by_id["hotpotqa_dev_3"]
    assert first.task.id == "hotpotqa_dev_3" and first.task.answers == ["no"]
    assert first.final_answer == "No" and first.reward == 1.0
    assert first.steps[0].action == "search[Laleli Mosque neighborhood]"
    assert first.steps[0].observation.startswith("Laleli Mosque is located")
    # A turn where the model wrote past its action keeps only the first action, the one
    # the environment executed (FireAct's own parser kept the run-on text in the answer).
    assert by_id["hotpotqa_dev_3291"].steps[-1].action == "finish[University of Colorado]"
    assert not any("\n" in s.action for t in trajs for s in t.steps)
    runaway = by_id["hotpotqa_dev_407"]
    assert (
        runaway.steps[-1].action == "finish[Langston Hughes has at least 5 different professions]"
    )
    assert runaway.final_answer == "Langston Hughes has at least 5 different professions"


def test_fireact_sft(shared_data):
    trajs = _load("react", shared_data / FIREACT_SFT)
    assert len(trajs) == 500 and all(t.success for t in trajs)
    assert all(t.task.answers == [t.final_answer] for t in trajs)
    assert all(t.steps[-1].action.startswith("finish[") for t in trajs)


def test_reflexion(shared_data):
    trajs = _load("react", shared_data / REFLEXION)
    assert len(trajs) == 103
    assert sum(t.success for t in trajs) == 34
    assert Counter(t.meta["status"] for t in trajs) == {
        "correct": 34,
        "incorrect": 56,
        "halted": 13,
    }
    tools = Counter(s.action.split("[")[0] for t in trajs for s in t.steps)
    assert set(tools) == {"Search", "Lookup", "Finish"}  # kept as written, not special-cased
    assert [t.id for t in trajs if not t.task.answers] == ["reflexion_react_hotpotqa_102"]


def test_alfworld(shared_data):
    trajs = _load("alfworld_react", shared_data / ALFWORLD)
    assert len(trajs) == 50 and all(t.success for t in trajs)
    assert {t.task.meta["task_type"] for t in trajs} == ALFWORLD_TYPES
    assert all(t.task.strategy == t.task.meta["task_type"] for t in trajs)
    assert len({t.task.id for t in trajs}) == 18  # 18 distinct episodes, ReAct and Act styles
    assert not any(s.action.lower().startswith("think") for t in trajs for s in t.steps)
    react = [t for t in trajs if t.meta["style"] == "react"]
    assert all(any(s.thought for s in t.steps) for t in react)
    first = trajs[0]
    assert first.steps[0].thought.startswith("To solve the task")
    assert first.steps[0].action == "go to cabinet 1"


def test_mixing_files_and_duplicates_across_files(shared_data):
    stats = ReadStats()
    trajs = _load("react", shared_data / FIREACT_DEV, shared_data / FIREACT_SFT, stats=stats)
    assert len(trajs) == 965 and stats.records == 965
    with pytest.raises(DataError, match=r"react_465\.jsonl:1: duplicate id 'hotpotqa_dev_3'"):
        _load("react", shared_data / FIREACT_DEV, shared_data / FIREACT_DEV)
    stats = ReadStats()
    assert (
        len(_load("react", *[shared_data / FIREACT_DEV] * 2, on_error="skip", stats=stats)) == 465
    )
    assert stats.skipped == {"duplicate_key": 465}


def test_native_roundtrip(shared_data, tmp_path):
    trajs = _load("react", shared_data / REFLEXION) + _load(
        "alfworld_react", shared_data / ALFWORLD
    )
    path = tmp_path / "native.jsonl"
    write_jsonl(path, trajs)
    assert _load("native", path) == trajs
    assert _load("worldqa", path) == trajs


def test_load_trajectories_arguments(tmp_path):
    with pytest.raises(ConfigError, match="no files given"):
        load_trajectories("react", [])
    with pytest.raises(ConfigError, match="on_error"):
        load_trajectories("react", ["x.jsonl"], on_error="ignore")


# --- react format details ------------------------------------------------------------


def _react(i="a", **fields):
    record = {
        "id": i,
        "question": "Who?",
        "messages": [
            {"role": "user", "content": "Who?"},
            {"role": "assistant", "content": "Thought: look.\nAction: lookup[who]"},
            {"role": "user", "content": "Observation: him"},
            {"role": "assistant", "content": "Thought: got it.\nAction: finish[Him]"},
        ],
        "success": True,
    }
    record.update(fields)
    return record


def _write(tmp_path, records, name="data.jsonl"):
    path = tmp_path / name
    write_jsonl(path, records)
    return path


def test_react_generic_tools_system_and_numbered_turns(tmp_path):
    messages = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "Thought 1: compute.\nAction 1: calculator[2+2]"},
        {"role": "user", "content": "Observation 1: 4"},
        {"role": "user", "content": "(note)"},
        {"role": "assistant", "content": "Action 2: answer[4]"},
    ]
    record = {"id": "x", "messages": messages, "reward": 0.5, "answers": "4", "extra": 1}
    (traj,) = _load("react", _write(tmp_path, [record]))
    assert traj.task.question == "What is 2+2?" and traj.task.answers == ["4"]
    assert [(s.thought, s.action) for s in traj.steps] == [
        ("compute.", "calculator[2+2]"),
        ("", "answer[4]"),
    ]
    assert traj.steps[0].observation == "4\n(note)"
    assert traj.success is False and traj.reward == 0.5 and traj.final_answer is None
    assert traj.meta["extra"] == 1


def test_react_final_answer_from_last_finish(tmp_path):
    (traj,) = _load("react", _write(tmp_path, [_react()]))
    assert traj.final_answer == "Him" and traj.task.answers == ["Him"]
    assert traj.meta["answers_from_final_answer"] is True


def test_parse_react_turn_cuts_runaway_text():
    content = "Thought: a\nAction: search[x]\nObservation: invented\nThought: b"
    assert parse_react_turn(content) == ("a", "search[x]")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"success": "yes"}, "field 'success': expected true or false, got string"),
        ({"id": 3}, "field 'id': expected a string, got number"),
        (
            {"messages": {"role": "user"}},
            "field 'messages': expected a list of {role, content} objects",
        ),
        ({"question": ["Who?"]}, "field 'question': expected a string, got array"),
        ({"reward": "high", "success": None}, "field 'success': expected true or false, got null"),
        ({"answers": [1]}, "field 'task.answers[0]': Input should be a valid string"),
    ],
)
def test_react_wrong_types_name_file_line_and_field(tmp_path, fields, message):
    path = _write(tmp_path, [_react("ok"), _react("bad", **fields)])
    with pytest.raises(DataError) as exc:
        _load("react", path)
    assert str(exc.value) == f"{path}:2: {message}"


def test_react_structural_errors(tmp_path):
    no_action = _react()
    no_action["messages"][1]["content"] = "I think it is him."
    no_outcome = {k: v for k, v in _react("b").items() if k != "success"}
    path = _write(tmp_path, [no_action, no_outcome, {"id": "c", "question": "q"}])
    stats = ReadStats()
    assert _load("react", path, on_error="skip", stats=stats) == []
    assert stats.skipped == {"invalid_record": 3}
    assert (
        "data.jsonl:1: field 'messages[1].content': assistant turn has no 'Action:' line"
        in (stats.examples[0])
    )
    assert "data.jsonl:2: field 'success': missing" in stats.examples[1]
    assert "data.jsonl:3: field 'messages': missing" in stats.examples[2]


def test_alfworld_wrong_step(tmp_path):
    record = {
        "id": "a",
        "task": "put x",
        "steps": [{"action": "go to desk 1"}, {"observation": "?"}],
    }
    path = _write(tmp_path, [record])
    with pytest.raises(
        DataError, match=r"data\.jsonl:1: field 'steps\[1\]\.action': expected a string"
    ):
        _load("alfworld_react", path)


# --- bad files through the loaders ---------------------------------------------------


def _native_record(i):
    return {"id": i, "task": {"id": i, "question": "Who?"}, "steps": [], "success": False}


def _bad_file(tmp_path, kind, source="react"):
    good = json.dumps(_react("a") if source == "react" else _native_record("a")).encode()
    data = {
        "empty": b"",
        "truncated": good + b"\n" + good[:40],
        "non_utf8": good + b'\n{"id": "caf\xe9"}\n',
        "json_array": b"[" + good + b"]\n",
        "duplicate": good + b"\n" + good + b"\n",
    }[kind]
    path = tmp_path / f"{kind}.jsonl"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("kind", "pattern"),
    [
        ("empty", r"empty\.jsonl: file is empty"),
        ("truncated", r"truncated\.jsonl:2: malformed JSON.*truncated"),
        ("non_utf8", r"non_utf8\.jsonl:2: not valid UTF-8"),
        ("json_array", r"json_array\.jsonl:1: this is a JSON array, not JSONL"),
        (
            "duplicate",
            r"duplicate\.jsonl:2: duplicate id 'a' \(first seen at .*duplicate\.jsonl:1\)",
        ),
    ],
)
@pytest.mark.parametrize("source", ["react", "native"])
def test_bad_files_fail_with_file_and_line(tmp_path, kind, pattern, source):
    path = _bad_file(tmp_path, kind, source)
    with pytest.raises(DataError, match=pattern):
        _load(source, path)


@pytest.mark.parametrize(
    ("kind", "reason"),
    [("truncated", "malformed_json"), ("non_utf8", "not_utf8"), ("duplicate", "duplicate_key")],
)
def test_bad_lines_skip_and_count(tmp_path, kind, reason):
    stats = ReadStats()
    trajs = _load("react", _bad_file(tmp_path, kind), on_error="skip", stats=stats)
    assert [t.id for t in trajs] == ["a"]
    assert stats.skipped == {reason: 1} and stats.records == 1


def test_native_rejects_foreign_records(tmp_path):
    path = _write(tmp_path, [_react()])
    with pytest.raises(DataError, match=r"data\.jsonl:1: field 'task': Field required"):
        _load("native", path)


def test_the_readme_example_line_loads_as_a_react_trajectory(tmp_path):
    """README's "Your own trajectories" example is a valid `source=react` line."""
    import re

    from talentrl_cli.trajectories import load_react

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = re.search(r"### Your own trajectories.*?```json\n(.*?)```", readme, re.S).group(1)
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps(json.loads(block)) + "\n")
    (trajectory,) = list(load_react(path))
    assert [s.action for s in trajectory.steps] == ["search[Silent Summit]", "search[Themand Linon]", "finish[Hebox]"]
    assert trajectory.success and "Hebox" in trajectory.steps[1].observation
