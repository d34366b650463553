"""ALFWorld's task types and its real task list (the 134 valid_unseen games).

    talentrl envs sample alfworld -n 2

`valid_unseen_134_tasks.jsonl` (shared/data SOURCES.md §3, from ExpeL) holds, per game, its task
type, its game file relative to `$ALFWORLD_DATA`, the goal text and the real opening
observation. The real env orders its valid_unseen split by it (ExpeL's order, so `eval.limit=N`
picks the same games as ExpeL's first N) and takes the goal and opening from it instead of
playing every game's first turn.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from talentrl_cli.jsonl import iter_jsonl

# ALFWorld's own ids (alfworld.agents.environment.alfred_tw_env.TASK_TYPES), the gold strategies
TASK_TYPES = {1: "pick_and_place_simple", 2: "look_at_obj_in_light", 3: "pick_clean_then_place_in_recep",
              4: "pick_heat_then_place_in_recep", 5: "pick_cool_then_place_in_recep",
              6: "pick_two_obj_and_place"}
TASKS_FILE = "valid_unseen_134_tasks.jsonl"
_WELCOME = re.compile(r"^\s*-=.*=-\s*$")
_GOAL = re.compile(r"^\s*Your task is to:\s*", re.I)


def default_tasks_file() -> Path:
    """`$TALENTRL_DATA/alfworld/…`, else `../shared/data/alfworld/…` beside the checkout."""
    from talentrl_cli.resources import shared_data_dir

    return shared_data_dir() / "alfworld" / TASKS_FILE


@lru_cache(maxsize=4)
def known_games(path: str) -> dict[str, dict[str, Any]]:
    """The tasks file's records by game file (relative to $ALFWORLD_DATA), in file order; empty
    when the file is absent (the env then plays each game's first turn instead)."""
    if not Path(path).is_file():
        return {}
    return {str(r["gamefile"]): r for r in iter_jsonl(Path(path))}


def task_type_of(gamefile: str) -> str | None:
    """The task type from ALFWorld's folder name, `<type>-<Object>-<Mrecep>-<Recep>-<scene>/trial_…`."""
    for part in reversed(Path(gamefile).parts):
        head = part.split("-", 1)[0]
        if head in TASK_TYPES.values():
            return head
    return None


def relative_gamefile(gamefile: str, data_dir: str) -> str:
    """`json_2.1.1/<split>/<task>/<trial>/game.tw-pddl`: the key the tasks file uses."""
    path = Path(gamefile)
    try:
        return path.resolve().relative_to(Path(data_dir).resolve()).as_posix()
    except ValueError:
        return "/".join(path.parts[-5:])


def split_opening(feedback: str) -> tuple[str, str]:
    """(first observation, goal) from ALFWorld's first feedback: a welcome banner, the room,
    then `Your task is to: …` (the parts the ReAct prompts and the tasks file keep)."""
    room, goal = [], ""
    for block in re.split(r"\n\s*\n", feedback or ""):
        block = block.strip()
        if not block or _WELCOME.match(block):
            continue
        if _GOAL.match(block):
            goal = _GOAL.sub("", block, count=1).strip()
        else:
            room.append(block)
    return "\n".join(room), goal
