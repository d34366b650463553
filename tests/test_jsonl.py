"""JSONL reading and writing: streaming, file:line errors, skip-mode stats, atomic writes."""

from __future__ import annotations

import json
import os

import pytest

from talentrl_cli.errors import ConfigError, DataError
from talentrl_cli.jsonl import ReadStats, iter_jsonl, read_jsonl, write_jsonl
from talentrl_cli.schema import Step, Task, Trajectory


def _traj(i: int, question: str = "Where is 北京?") -> Trajectory:
    return Trajectory(
        id=f"t{i}",
        task=Task(id=f"q{i}", question=question, answers=["Beijing"]),
        steps=[Step(thought="look it up", action="search[北京]", observation="a city")],
        success=True,
        reward=1.0,
    )


def _write_bytes(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_roundtrip_models_is_deterministic_and_keeps_unicode(tmp_path):
    path = tmp_path / "out" / "trajs.jsonl"  # parent folder is created
    assert write_jsonl(path, [_traj(0), _traj(1)]) == 2
    first = path.read_bytes()
    write_jsonl(path, (t for t in [_traj(0), _traj(1)]))
    assert path.read_bytes() == first
    text = first.decode("utf-8")
    assert "北京" in text and text.count("\n") == 2
    assert list(json.loads(text.splitlines()[0]))[:3] == ["id", "task", "steps"]  # schema order
    assert read_jsonl(path, Trajectory) == [_traj(0), _traj(1)]


def test_write_dicts_and_empty(tmp_path):
    path = tmp_path / "d.jsonl"
    write_jsonl(path, [{"b": 1, "a": [1, 2]}])
    assert path.read_text() == '{"b": 1, "a": [1, 2]}\n'  # insertion order kept, not sorted
    assert write_jsonl(tmp_path / "none.jsonl", []) == 0


def test_write_is_atomic_on_failure(tmp_path):
    path = tmp_path / "keep.jsonl"
    write_jsonl(path, [{"x": 1}])

    def broken():
        yield {"x": 2}
        raise RuntimeError("crash mid-write")

    with pytest.raises(RuntimeError):
        write_jsonl(path, broken())
    assert path.read_text() == '{"x": 1}\n'
    assert sorted(os.listdir(tmp_path)) == ["keep.jsonl"]  # no temp file left behind


def test_write_rejects_nan(tmp_path):
    with pytest.raises(ValueError, match="record 2"):
        write_jsonl(tmp_path / "n.jsonl", [{"r": 1.0}, {"r": float("nan")}])
    assert not (tmp_path / "n.jsonl").exists()


def test_streams_lazily(tmp_path):
    path = _write_bytes(tmp_path, "s.jsonl", b'{"a": 1}\n{"a": 2}\n{broken\n')
    it = iter_jsonl(path)
    assert next(it) == {"a": 1}  # yielded before the bad line 3 is read
    assert next(it) == {"a": 2}
    with pytest.raises(DataError, match=r"s\.jsonl:3: malformed JSON"):
        next(it)


def test_blank_lines_crlf_and_bom(tmp_path):
    path = _write_bytes(tmp_path, "b.jsonl", b'\xef\xbb\xbf{"a": 1}\r\n\r\n   \n{"a": 2}\r\n')
    stats = ReadStats()
    assert list(iter_jsonl(path, stats=stats)) == [{"a": 1}, {"a": 2}]
    assert stats.records == 2 and stats.blank_lines == 2 and stats.total_skipped == 0


@pytest.mark.parametrize("data", [b"", b"\n\n  \n"])
def test_empty_file(tmp_path, data):
    path = _write_bytes(tmp_path, "empty.jsonl", data)
    for on_error in ("fail", "skip"):
        with pytest.raises(DataError, match=r"empty\.jsonl: file is empty"):
            list(iter_jsonl(path, on_error=on_error))


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(DataError, match="not found"):
        list(iter_jsonl(tmp_path / "nope.jsonl"))
    with pytest.raises(DataError, match="is a directory"):
        list(iter_jsonl(tmp_path))


def test_truncated_last_line(tmp_path):
    path = _write_bytes(tmp_path, "t.jsonl", b'{"a": 1}\n{"a": 2, "b": [1, 2')
    with pytest.raises(DataError, match=r"t\.jsonl:2: malformed JSON.*truncated"):
        list(iter_jsonl(path))


def test_non_utf8_names_the_line(tmp_path):
    path = _write_bytes(tmp_path, "latin.jsonl", b'{"a": 1}\n{"q": "caf\xe9"}\n')
    with pytest.raises(DataError, match=r"latin\.jsonl:2: not valid UTF-8"):
        list(iter_jsonl(path))


@pytest.mark.parametrize(
    "data", [b'[{"a": 1}, {"a": 2}]\n', b'[\n  {"a": 1}\n]\n', b'\n[{"a": 1}]']
)
def test_json_array_is_detected_even_in_skip_mode(tmp_path, data):
    path = _write_bytes(tmp_path, "arr.json", data)
    for on_error in ("fail", "skip"):
        with pytest.raises(
            DataError, match=r"arr\.json:\d: this is a JSON array, not JSONL"
        ) as exc:
            list(iter_jsonl(path, on_error=on_error))
        assert "jq -c '.[]'" in str(exc.value)


def test_pretty_printed_object_hint(tmp_path):
    path = _write_bytes(tmp_path, "pretty.json", b'{\n  "a": 1\n}\n')
    with pytest.raises(DataError, match=r"pretty\.json:1: .*pretty-printed"):
        list(iter_jsonl(path))


@pytest.mark.parametrize(("line", "kind"), [("[1, 2]", "list"), ('"x"', "str"), ("null", "null")])
def test_non_object_line(tmp_path, line, kind):
    path = _write_bytes(tmp_path, "n.jsonl", f'{{"a": 1}}\n{line}\n'.encode())
    with pytest.raises(DataError, match=rf"n\.jsonl:2: expected a JSON object, got {kind}"):
        list(iter_jsonl(path))


def test_validation_error_names_field(tmp_path):
    good = _traj(0).model_dump(mode="json")
    bad = _traj(1).model_dump(mode="json")
    bad["task"]["question"] = 7
    path = tmp_path / "data.jsonl"
    write_jsonl(path, [good, bad])
    with pytest.raises(DataError) as exc:
        list(iter_jsonl(path, Trajectory))
    assert str(exc.value) == f"{path}:2: field 'task.question': Input should be a valid string"


def test_validation_error_nested_index_and_count(tmp_path):
    record = _traj(0).model_dump(mode="json")
    record["steps"][0]["action"] = None
    del record["success"]
    path = tmp_path / "v.jsonl"
    write_jsonl(path, [record])
    with pytest.raises(
        DataError, match=r"v\.jsonl:1: field 'steps\[0\]\.action'.*\(\+1 more errors\)"
    ):
        list(iter_jsonl(path, Trajectory))


def test_duplicate_keys(tmp_path):
    path = tmp_path / "dup.jsonl"
    write_jsonl(path, [{"id": "a"}, {"id": "b"}, {"id": "a"}])
    with pytest.raises(
        DataError, match=r"dup\.jsonl:3: duplicate id 'a' \(first seen at .*dup\.jsonl:1\)"
    ):
        list(iter_jsonl(path, unique_key="id"))
    assert len(list(iter_jsonl(path))) == 3  # no key, no check


def test_duplicates_across_files_with_shared_seen(tmp_path):
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    write_jsonl(one, [{"id": "a"}])
    write_jsonl(two, [{"id": "b"}, {"id": "a"}])
    seen: dict = {}
    list(iter_jsonl(one, unique_key="id", seen=seen))
    with pytest.raises(
        DataError, match=r"two\.jsonl:2: duplicate id 'a' \(first seen at .*one\.jsonl:1\)"
    ):
        list(iter_jsonl(two, unique_key="id", seen=seen))


def test_skip_mode_counts_per_reason(tmp_path):
    lines = [
        b'{"id": "a"}',
        b"{oops",
        b'{"q": "caf\xe9"}',
        b"[1]",
        b'{"id": "a"}',
        b"",
        b'{"id": "b"}',
    ]
    path = _write_bytes(tmp_path, "mixed.jsonl", b"\n".join(lines) + b"\n")
    stats = ReadStats(max_examples=2)
    records = list(iter_jsonl(path, on_error="skip", stats=stats, unique_key="id"))
    assert [r["id"] for r in records] == ["a", "b"]
    assert dict(stats.skipped) == {
        "malformed_json": 1,
        "not_utf8": 1,
        "not_object": 1,
        "duplicate_key": 1,
    }
    assert stats.records == 2 and stats.blank_lines == 1 and stats.total_skipped == 4
    assert len(stats.examples) == 2 and stats.examples[0].startswith(f"{path}:2: malformed JSON")
    assert "skipped 4" in stats.summary()


def test_skip_mode_counts_validation_errors(tmp_path):
    path = tmp_path / "v.jsonl"
    write_jsonl(path, [_traj(0), {"id": "x"}, _traj(2)])
    stats = ReadStats()
    assert [t.id for t in iter_jsonl(path, Trajectory, "skip", stats)] == ["t0", "t2"]
    assert dict(stats.skipped) == {"invalid_record": 1}


def test_on_error_is_validated(tmp_path):
    path = tmp_path / "x.jsonl"
    write_jsonl(path, [{"a": 1}])
    with pytest.raises(ConfigError, match="on_error must be one of fail, skip"):
        list(iter_jsonl(path, on_error="ignore"))


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_are_refused_at_their_line(tmp_path, constant):
    good = json.dumps(_traj(1).model_dump(mode="json"))
    bad = good.replace('"reward": 1.0', f'"reward": {constant}')
    path = _write_bytes(tmp_path, "t.jsonl", f"{good}\n{bad}\n{good}\n".encode())
    with pytest.raises(DataError, match=rf"t.jsonl:2: {constant} is not valid JSON"):
        list(iter_jsonl(path, Trajectory))
    stats = ReadStats()
    assert len(list(iter_jsonl(path, Trajectory, "skip", stats, unique_key=None))) == 2
    assert stats.total_skipped == 1
