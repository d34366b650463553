"""Streaming JSONL reading and atomic, deterministic JSONL writing.

Every input file problem becomes one `DataError` that names `file:line` (and the field for
validation errors), because a user debugging a 50k-line log needs the exact spot:

    data.jsonl:7: field 'task.question': Input should be a valid string

`iter_jsonl(..., on_error="skip", stats=ReadStats())` skips bad lines instead and counts
them per reason, so a stage can report what it dropped. File-level problems (missing file,
empty file, a JSON array instead of JSONL) always raise: skipping would silently yield nothing.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from talentrl_cli.errors import ConfigError, DataError

ON_ERROR_CHOICES = ("fail", "skip")

# Reasons a line can be skipped; the keys of `ReadStats.skipped`.
MALFORMED = "malformed_json"
ENCODING = "not_utf8"
NOT_OBJECT = "not_object"
INVALID = "invalid_record"
DUPLICATE = "duplicate_key"


class RecordError(ValueError):
    """Raised by a record converter for a bad record; `iter_jsonl` adds file:line."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field

    def describe(self) -> str:
        return f"field '{self.field}': {self.message}" if self.field else self.message


class _LineError(Exception):
    """Internal: one bad line, with the reason it is counted under in skip mode."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass
class ReadStats:
    """What a read did: records yielded, blank lines, and skipped lines per reason."""

    records: int = 0
    blank_lines: int = 0
    skipped: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)
    max_examples: int = 5

    def add_skip(self, reason: str, message: str) -> None:
        self.skipped[reason] += 1
        if len(self.examples) < self.max_examples:
            self.examples.append(message)

    @property
    def total_skipped(self) -> int:
        return sum(self.skipped.values())

    def summary(self) -> str:
        """One line for logs and reports, e.g. 'read 463 records; skipped 2 (not_utf8: 2)'."""
        text = f"read {self.records} records"
        if self.total_skipped:
            reasons = ", ".join(f"{k}: {v}" for k, v in sorted(self.skipped.items()))
            text += f"; skipped {self.total_skipped} ({reasons})"
            text += "".join(f"\n  e.g. {e}" for e in self.examples)
        return text


def check_on_error(on_error: str) -> str:
    if on_error not in ON_ERROR_CHOICES:
        raise ConfigError(
            f"on_error must be one of {', '.join(ON_ERROR_CHOICES)}, got {on_error!r}"
        )
    return on_error


def format_validation_error(err: ValidationError) -> str:
    """Pydantic's first error as "field 'a.b[2]': message (+N more errors)"."""
    errors = err.errors()
    first = errors[0]
    loc = _format_loc(first.get("loc", ()))
    text = f"field '{loc}': {first['msg']}" if loc else first["msg"]
    if len(errors) > 1:
        text += f" (+{len(errors) - 1} more errors)"
    return text


def _format_loc(loc: Iterable[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def iter_jsonl(
    path: str | os.PathLike,
    model: type[BaseModel] | None = None,
    on_error: str = "fail",
    stats: ReadStats | None = None,
    *,
    convert: Callable[[dict], Any] | None = None,
    unique_key: str | None = None,
    seen: dict[Any, str] | None = None,
) -> Iterator[Any]:
    """Yield each line of a JSONL file as a dict, a validated `model`, or `convert(dict)`.

    Streams line by line. Blank lines are skipped silently. `convert` may raise
    `RecordError` or `ValidationError`; both are reported with file:line. With
    `unique_key`, a repeated value of that key (looked up on the result) is an error;
    pass the same `seen` dict to several calls to catch repeats across files.
    """
    check_on_error(on_error)
    stats = stats if stats is not None else ReadStats()
    seen = seen if seen is not None else {}
    name = str(path)
    saw_content = False
    for lineno, raw, last in _iter_raw_lines(path):
        try:
            record = _parse_line(name, lineno, raw, last, first=not saw_content)
            if record is None:
                stats.blank_lines += 1
                continue
            saw_content = True
            result = _convert(record, model, convert)
            if unique_key is not None:
                _check_unique(result, unique_key, seen, f"{name}:{lineno}")
        except _LineError as err:
            saw_content = True
            message = f"{name}:{lineno}: {err.message}"
            if on_error == "fail":
                raise DataError(message) from None
            stats.add_skip(err.reason, message)
            continue
        stats.records += 1
        yield result
    if not saw_content:
        raise DataError(f"{name}: file is empty (expected one JSON object per line)")


def _iter_raw_lines(path: str | os.PathLike) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, bytes, is_last) for each line; raises for a missing file."""
    p = Path(path)
    if not p.is_file():
        what = "is a directory" if p.is_dir() else "not found"
        raise DataError(f"{p}: file {what}")
    with p.open("rb") as fh:
        # Reading one line ahead tells us which line is the last (truncation hints).
        prev = fh.readline()
        lineno = 1
        for nxt in fh:
            yield lineno, prev, False
            prev, lineno = nxt, lineno + 1
        if prev:
            yield lineno, prev, True


def _parse_line(name: str, lineno: int, raw: bytes, last: bool, first: bool) -> dict | None:
    text = _decode(raw, lineno)
    stripped = text.strip()
    if not stripped:
        return None
    if first and stripped.startswith("["):
        # A whole-file problem: skipping line by line would just yield nothing.
        raise DataError(
            f"{name}:{lineno}: this is a JSON array, not JSONL (one JSON object per line)",
            hint=f"convert with `jq -c '.[]' {name} > converted.jsonl`",
        )
    try:
        value = json.loads(stripped, parse_constant=_refuse_non_finite)
    except json.JSONDecodeError as err:
        raise _LineError(MALFORMED, _json_error_message(err, stripped, raw, last)) from None
    if not isinstance(value, dict):
        kind = type(value).__name__.replace("NoneType", "null")
        raise _LineError(NOT_OBJECT, f"expected a JSON object, got {kind}")
    return value


def _refuse_non_finite(constant: str) -> None:
    """Python's json reads NaN and Infinity, which JSON does not have: a reward of NaN passed
    here once and failed later, naming a temporary output file instead of this line."""
    raise _LineError(MALFORMED, f"{constant} is not valid JSON (write a number or null)")


def _decode(raw: bytes, lineno: int) -> str:
    if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]  # a UTF-8 byte-order mark, as some Windows editors write
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        bad = raw[err.start : err.end]
        message = f"not valid UTF-8 ({bad!r} at byte {err.start + 1} of the line)"
        raise _LineError(ENCODING, message + "; re-encode the file as UTF-8") from None


def _json_error_message(err: json.JSONDecodeError, text: str, raw: bytes, last: bool) -> str:
    message = f"malformed JSON: {err.msg} (column {err.colno})"
    if text == "{":
        message += (
            "; this looks like pretty-printed JSON, JSONL needs one object per line (`jq -c .`)"
        )
    elif last and not raw.endswith(b"\n"):
        message += "; the last line looks truncated (the file does not end with a newline)"
    return message


def _convert(record: dict, model: type[BaseModel] | None, convert: Callable | None) -> Any:
    try:
        if convert is not None:
            return convert(record)
        return model.model_validate(record) if model is not None else record
    except ValidationError as err:
        raise _LineError(INVALID, format_validation_error(err)) from None
    except RecordError as err:
        raise _LineError(INVALID, err.describe()) from None


def _check_unique(result: Any, key: str, seen: dict[Any, str], where: str) -> None:
    value = result.get(key) if isinstance(result, dict) else getattr(result, key, None)
    if value is None:
        raise _LineError(INVALID, f"field '{key}': missing (needed as a unique key)")
    if isinstance(value, list | dict):
        value = json.dumps(value, sort_keys=True)  # make it hashable, same text -> same key
    if value in seen:
        raise _LineError(DUPLICATE, f"duplicate {key} {value!r} (first seen at {seen[value]})")
    seen[value] = where


def read_jsonl(
    path: str | os.PathLike, model: type[BaseModel] | None = None, **kwargs: Any
) -> list:
    """`iter_jsonl` into a list, for small files (configs, labels, test fixtures)."""
    return list(iter_jsonl(path, model, **kwargs))


def dumps_record(record: BaseModel | dict) -> str:
    """One record as one JSON line (no newline): stable key order, UTF-8 kept as is."""
    data = record.model_dump(mode="json") if isinstance(record, BaseModel) else record
    # allow_nan=False: NaN/Infinity are not JSON and break jq and other readers downstream.
    return json.dumps(data, ensure_ascii=False, sort_keys=False, allow_nan=False)


def write_jsonl(path: str | os.PathLike, records: Iterable[BaseModel | dict]) -> int:
    """Write records one per line, atomically (temp file + os.replace); return the count.

    A crash mid-write leaves any previous file untouched and no partial file behind.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    count = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            for count, record in enumerate(records, start=1):
                fh.write(_dump_or_explain(record, count, target) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as err:  # a full disk says so without a name: give it the file's
        Path(tmp).unlink(missing_ok=True)
        raise OSError(err.errno, err.strerror, err.filename or str(target)) from err
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count


def _dump_or_explain(record: Any, index: int, target: Path) -> str:
    try:
        return dumps_record(record)
    except ValueError as err:  # NaN/Infinity: a bug upstream, name the record
        raise ValueError(f"{target}: record {index} is not valid JSON: {err}") from err
