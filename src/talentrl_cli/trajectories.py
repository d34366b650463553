"""Trajectory loaders: every supported log format into the common `Trajectory` schema.

`TRAJECTORY_SOURCES` maps a config string (`talentrl mine source=react source.path=FILE`)
to a loader `load(path, on_error="fail", stats=None) -> Iterator[Trajectory]`:

- `native` / `worldqa`: our own schema, as written by `jsonl.write_jsonl`.
- `react`: chat logs `{"id", "question", "messages": [{"role", "content"}...], "success",
  optional "final_answer", "reward"}` (FireAct), or the same with `"steps":
  [{thought, action, observation}]` and `"status"` instead of messages (Reflexion).
  Any tool names are accepted: an action is kept as the text the agent wrote.
- `alfworld_react`: ReAct ALFWorld logs `{task, initial_observation, steps: [{action,
  observation}], task_type, style}`; `think: ...` actions become the next action's thought.

Every bad record raises `DataError` with file:line and field (or is skipped and counted with
`on_error="skip"`), because these files come from users and from other codebases.
`load_trajectories(source, paths)` mixes several files and rejects ids repeated across them.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from talentrl_cli.errors import ConfigError
from talentrl_cli.jsonl import ReadStats, RecordError, check_on_error, iter_jsonl
from talentrl_cli.metrics import extract_final_answer
from talentrl_cli.registry import Registry
from talentrl_cli.schema import Trajectory

Loader = Callable[..., Iterator[Trajectory]]
TRAJECTORY_SOURCES: Registry[Loader] = Registry("trajectory source")

# Protocol markers at the start of a line, optionally numbered as in the original ReAct
# prompts ("Thought 2:", "Action 2:").
_ACTION = re.compile(r"^[ \t]*Action(?:[ \t]*\d+)?[ \t]*:[ \t]*", re.M | re.I)
_THOUGHT = re.compile(r"^\s*Thought(?:[ \t]*\d+)?[ \t]*:[ \t]*", re.I)
_OBSERVATION = re.compile(r"^\s*Observation(?:[ \t]*\d+)?[ \t]*:[ \t]?", re.I)
# A model that runs on past its action writes the next protocol line itself; the
# environment never sees that text (ReAct stops generation at "\nObservation"), so cut it.
_NEXT_MARKER = re.compile(r"\n[ \t]*(?:Thought|Action|Observation)(?:[ \t]*\d+)?[ \t]*:", re.I)
_THINK = re.compile(r"^\s*think\s*:\s*", re.I)

# React fields turned into schema fields; everything else is kept in `Trajectory.meta`.
_REACT_FIELDS = {"id", "task_id", "question", "messages", "steps", "success", "final_answer"}
_REACT_FIELDS |= {"reward", "answers", "answer", "env", "source"}
_ALFWORLD_FIELDS = {"id", "task_id", "task", "initial_observation", "steps", "success"}
_ALFWORLD_FIELDS |= {"task_type", "source"}


@TRAJECTORY_SOURCES.register("native")
@TRAJECTORY_SOURCES.register("worldqa")
@TRAJECTORY_SOURCES.register("textworld")
@TRAJECTORY_SOURCES.register("webshop")
@TRAJECTORY_SOURCES.register("alfworld")
def load_native(
    path: str | os.PathLike,
    on_error: str = "fail",
    stats: ReadStats | None = None,
    *,
    seen: dict | None = None,
) -> Iterator[Trajectory]:
    """Our own `Trajectory` JSONL (what the WorldQA and TextWorld experts write, and user files
    in our schema)."""
    return iter_jsonl(path, Trajectory, on_error, stats, unique_key="id", seen=seen)


@TRAJECTORY_SOURCES.register("react")
def load_react(
    path: str | os.PathLike,
    on_error: str = "fail",
    stats: ReadStats | None = None,
    *,
    seen: dict | None = None,
) -> Iterator[Trajectory]:
    """ReAct chat logs (FireAct) and step lists (Reflexion); see the module docstring."""
    convert = partial(react_record, file=Path(path).name)
    return iter_jsonl(path, None, on_error, stats, convert=convert, unique_key="id", seen=seen)


@TRAJECTORY_SOURCES.register("alfworld_react")
def load_alfworld_react(
    path: str | os.PathLike,
    on_error: str = "fail",
    stats: ReadStats | None = None,
    *,
    seen: dict | None = None,
) -> Iterator[Trajectory]:
    """ReAct/Act ALFWorld expert trajectories; see the module docstring."""
    convert = partial(alfworld_record, file=Path(path).name)
    return iter_jsonl(path, None, on_error, stats, convert=convert, unique_key="id", seen=seen)


def load_trajectories(
    source: str,
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    on_error: str = "fail",
    stats: ReadStats | None = None,
) -> Iterator[Trajectory]:
    """Trajectories from several files of one source, in order; ids must be unique overall."""
    loader = TRAJECTORY_SOURCES.get(source)
    check_on_error(on_error)
    paths = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    if not paths:
        raise ConfigError(f"trajectory source {source!r}: no files given (set source.path)")
    return _chain(loader, paths, on_error, stats)


def _chain(loader: Loader, paths: list, on_error: str, stats: ReadStats | None) -> Iterator:
    seen: dict = {}  # shared, so an id repeated in a second file is reported with both places
    for path in paths:
        yield from loader(path, on_error=on_error, stats=stats, seen=seen)


# --- react ---------------------------------------------------------------------------


def react_record(record: dict, file: str = "") -> Trajectory:
    """One react-format record as a `Trajectory`; raises `RecordError` naming the field."""
    traj_id = _required_str(record, "id")
    if "messages" in record:
        first_user, steps = _steps_from_messages(record["messages"])
    elif "steps" in record:
        first_user, steps = None, _steps_from_list(record["steps"])
    else:
        raise RecordError("missing: give 'messages' (chat turns) or 'steps'", field="messages")
    question = record.get("question", first_user)
    if question is None:
        raise RecordError("missing, and there is no first user message to take it from", "question")
    success = _react_success(record)
    final_answer = _final_answer(record, steps)
    answers, from_final = _gold_answers(record, success, final_answer)
    meta = _extra_meta(record, _REACT_FIELDS, file)
    if from_final:
        meta["answers_from_final_answer"] = True  # gold inferred: a success's own answer
    task = {"id": record.get("task_id", traj_id), "question": _str_field(question, "question")}
    task |= {"answers": answers, "env": record.get("env", "")}
    return Trajectory.model_validate(
        {"id": traj_id, "task": task, "steps": steps, "success": success,
         "final_answer": final_answer, "reward": _reward(record), "source": "react", "meta": meta}
    )  # fmt: skip


def _steps_from_messages(messages: Any) -> tuple[str | None, list[dict]]:
    """(first user message, steps): assistant turns are Thought/Action, user turns observations."""
    if not isinstance(messages, list):
        raise RecordError("expected a list of {role, content} objects", field="messages")
    question, steps = None, []
    for i, message in enumerate(messages):
        role, content = _message_parts(message, i)
        if role == "system":
            continue  # instructions, not part of the episode
        if role == "assistant":
            thought, action = parse_react_turn(content, field=f"messages[{i}].content")
            steps.append({"thought": thought, "action": action, "observation": ""})
        elif question is None and not steps:
            question = content
        elif not steps:
            raise RecordError("a second user turn before any assistant turn", f"messages[{i}]")
        else:
            _add_observation(steps[-1], _OBSERVATION.sub("", content, count=1).strip())
    return question, steps


def _message_parts(message: Any, i: int) -> tuple[str, str]:
    if not isinstance(message, dict):
        raise RecordError("expected an object with 'role' and 'content'", f"messages[{i}]")
    role, content = message.get("role"), message.get("content")
    if not isinstance(role, str):
        raise RecordError("expected a string such as 'user' or 'assistant'", f"messages[{i}].role")
    if not isinstance(content, str):
        raise RecordError("expected a string", f"messages[{i}].content")
    return role.lower(), content


def _add_observation(step: dict, text: str) -> None:
    # Two environment turns in a row belong to the same step.
    step["observation"] = f"{step['observation']}\n{text}" if step["observation"] else text


def parse_react_turn(content: str, field: str = "content") -> tuple[str, str]:
    """Split an assistant turn 'Thought: ...\\nAction: tool[arg]' into (thought, action)."""
    match = _ACTION.search(content)
    if match is None:
        raise RecordError("assistant turn has no 'Action:' line", field=field)
    thought = _THOUGHT.sub("", content[: match.start()], count=1).strip()
    action = _NEXT_MARKER.split(content[match.end() :], maxsplit=1)[0].strip()
    return thought, action


def _steps_from_list(steps: Any) -> list[dict]:
    """Reflexion-style steps; only thought/action/observation are kept."""
    if not isinstance(steps, list):
        raise RecordError("expected a list of {thought, action, observation}", field="steps")
    out = []
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            raise RecordError("expected an object", field=f"steps[{i}]")
        out.append({k: step[k] for k in ("thought", "action", "observation") if k in step})
    return out


def _react_success(record: dict) -> bool:
    """Outcome from 'success', else 'reward', 'em' (full credit) or Reflexion's 'status'."""
    if "success" in record:
        return _bool_field(record["success"], "success")
    for key in ("reward", "em"):
        if key in record:
            value = record[key]
            return value if isinstance(value, bool) else _number_field(value, key) >= 1.0
    if "status" in record:
        return _str_field(record["status"], "status").strip().lower() == "correct"
    raise RecordError("missing: give 'success' (true/false), 'reward', 'em' or 'status'", "success")


def _reward(record: dict) -> float | None:
    value = record.get("reward")
    if value is None:
        return None
    return float(value) if isinstance(value, bool) else _number_field(value, "reward")


def _final_answer(record: dict, steps: list[dict]) -> str | None:
    """The record's 'final_answer', else the answer of the last finish[...] action."""
    if "final_answer" in record:
        value = record["final_answer"]
        return None if value is None else _str_field(value, "final_answer")
    for step in reversed(steps):
        answer = extract_final_answer(str(step.get("action", "")))
        if answer is not None:
            return answer
    return None


def _gold_answers(record: dict, success: bool, final_answer: str | None) -> tuple[list, bool]:
    """(gold answers, inferred?): 'answers'/'answer', else a successful run's final answer."""
    for key in ("answers", "answer"):
        if key in record:
            value = record[key]
            return ([value] if isinstance(value, str) else value), False
    if success and final_answer:
        return [final_answer], True
    return [], False


# --- alfworld_react ------------------------------------------------------------------


def alfworld_record(record: dict, file: str = "") -> Trajectory:
    """One ReAct ALFWorld record as a `Trajectory` (the task type is the gold strategy)."""
    traj_id = _required_str(record, "id")
    goal = _required_str(record, "task")
    initial = _str_field(record.get("initial_observation", ""), "initial_observation")
    task_type = record.get("task_type")
    steps, trailing = _merge_thinks(record.get("steps"))
    meta = _extra_meta(record, _ALFWORLD_FIELDS, file)
    if trailing:
        meta["trailing_thought"] = trailing  # a think with no action after it
    task_meta = {"initial_observation": initial}
    if task_type is not None:
        task_meta["task_type"] = task_type
    task = {"id": record.get("task_id") or _content_id("alfworld", goal, initial)}
    task |= {"question": goal, "env": "alfworld", "strategy": task_type, "meta": task_meta}
    return Trajectory.model_validate(
        {"id": traj_id, "task": task, "steps": steps, "success": record.get("success", True),
         "source": "alfworld_react", "meta": meta}
    )  # fmt: skip


def _merge_thinks(raw_steps: Any) -> tuple[list[dict], str]:
    """Fold `think: ...` pseudo-actions into the thought of the next real action.

    ALFWorld answers every think with "OK." and the state does not change, so the think is
    the agent's reasoning for what it does next, exactly like a ReAct Thought.
    """
    if not isinstance(raw_steps, list):
        raise RecordError("expected a list of {action, observation}", field="steps")
    steps, thoughts = [], []
    for i, step in enumerate(raw_steps):
        action = step.get("action") if isinstance(step, dict) else None
        if not isinstance(action, str):
            raise RecordError("expected a string", field=f"steps[{i}].action")
        if _THINK.match(action):
            thoughts.append(_THINK.sub("", action, count=1).strip())
            continue
        observation = step.get("observation", "")
        steps.append({"thought": "\n".join(thoughts), "action": action.strip(),
                      "observation": observation})  # fmt: skip
        thoughts = []
    return steps, "\n".join(thoughts)


def _content_id(prefix: str, *parts: str) -> str:
    """A stable task id from the task's text, so the same episode in two logs groups together."""
    digest = hashlib.sha1("\n".join(parts).encode("utf-8")).hexdigest()[:12]
    return f"{prefix}:{digest}"


# --- shared helpers --------------------------------------------------------------------


def _extra_meta(record: dict, known: set[str], file: str) -> dict:
    meta = {k: v for k, v in record.items() if k not in known}
    if "source" in record:
        meta["origin"] = record["source"]  # where the log came from (not our loader name)
    if file:
        meta["file"] = file
    return meta


def _required_str(record: dict, key: str) -> str:
    if key not in record:
        raise RecordError("missing", field=key)
    value = _str_field(record[key], key)
    if not value.strip():
        raise RecordError("must not be empty", field=key)
    return value


def _str_field(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise RecordError(f"expected a string, got {_json_type(value)}", field=key)
    return value


def _bool_field(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise RecordError(f"expected true or false, got {_json_type(value)}", field=key)
    return value


def _number_field(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RecordError(f"expected a number, got {_json_type(value)}", field=key)
    return float(value)


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")
