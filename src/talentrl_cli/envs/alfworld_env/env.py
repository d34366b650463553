"""`env=alfworld`: ALFWorld's household games on TextWorld's PDDL engine.

    talentrl eval env=alfworld eval.limit=10                    # the 134 valid_unseen games
    talentrl sft env=alfworld source=alfworld_react ...          # prompts only: no engine needed
    talentrl envs sample alfworld env.scenes=generated -n 2     # generated scenes (scenes.py)

`env.scenes=alfworld` (the default) plays the real games: `AlfredTWEnv` collects a split's
solvable `game.tw-pddl` files under `$ALFWORLD_DATA` (`engine.py`). `env.splits` maps our splits
to ALFWorld's: train -> train (3,553 games), dev and test -> valid_unseen (the 134 games
ALFWorld, ReAct and Reflexion report on; ALFWorld has no other held-out set besides
valid_seen). `env.scenes=generated` plays household scenes made from templates of the six task
types against ALFWorld's own domain and grammar (`scenes.py`).

A task is one game: its question the goal ("put a clean mug in coffeemachine."), its first
observation the room ("You are in the middle of a room. ..."), its gold strategy the task
type (pick_and_place_simple, look_at_obj_in_light, pick_clean_then_place_in_recep,
pick_heat_then_place_in_recep, pick_cool_then_place_in_recep, pick_two_obj_and_place). An
action is one game command (`Action: take mug 1 from countertop 1`); `think: ...` is answered
"OK.", as in ReAct's ALFWorld loop; `put X in/on Y` (the ReAct logs' spelling) is played as
the grammar's `move X to Y` and back. Each observation ends with the admissible commands
(`examine`/`look`/`inventory` left out, `go to` last), after the goal again with
`env.remind_task=true` (ALFWorld's own "Your task is to: ..." line, for small policies: SmolLM2
talent SFT on 60 generated scenes, the goal only at the top, took a wrong object in 6 of 12 dev
scenes and the right one in 3). The reward is 1 when the game is won; ALFWorld's limit is 50 actions.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from talentrl_cli.envs.alfworld_env import engine
from talentrl_cli.envs.alfworld_env.tasks import (
    default_tasks_file,
    known_games,
    relative_gamefile,
    split_opening,
    task_type_of,
)
from talentrl_cli.envs.base import ENVS, EPISODE_OVER, Environment
from talentrl_cli.envs.search import ACTION_MARK
from talentrl_cli.envs.settings import cache_folder, settings_from_cfg
from talentrl_cli.errors import ConfigError
from talentrl_cli.schema import Step, Task, Trajectory

SPLITS = ("train", "dev", "test")
SCENES = ("alfworld", "generated")
THINK_REPLY = "OK."
_HIDDEN = re.compile(r"^(examine|look|inventory|help)\b")
_THINK = re.compile(r"^\s*think\s*:", re.I)
_PUT = re.compile(r"^(?:put|move) (.+?) (?:in/on|in|on|into|to) (.+)$")
_UNSAFE = re.compile(r"[^a-z0-9/ -]")
MAX_COMMAND = 120


@dataclass
class AlfWorldSettings:
    """The `env:` section for `alfworld` (conf/env/alfworld.yaml)."""

    name: str = "alfworld"
    seed: int | None = None
    scenes: str = "alfworld"
    data_dir: str | None = None
    tasks_file: str | None = None
    splits: dict[str, str] = field(default_factory=lambda: {"train": "train", "dev": "valid_unseen",
                                                            "test": "valid_unseen"})
    limit: dict[str, int | None] = field(default_factory=lambda: {"train": 200})
    n_scenes: dict[str, int] = field(default_factory=lambda: {"train": 60, "dev": 12, "test": 12})
    max_steps: int = 50
    max_commands: int = 30
    remind_task: bool = False
    noise: float = 0.1
    logic_dir: str | None = None
    cache_dir: str | None = None

    def validate(self) -> None:
        if self.scenes not in SCENES:
            raise ConfigError(f"env.scenes={self.scenes!r} is not one of {', '.join(SCENES)}")
        bad = {s: a for s, a in self.splits.items() if s not in SPLITS or a not in engine.TRAIN_EVAL}
        if bad:
            raise ConfigError(f"env.splits maps our splits ({', '.join(SPLITS)}) to ALFWorld's "
                              f"({', '.join(engine.TRAIN_EVAL)}), got {bad}")
        if self.max_steps < 1 or self.max_commands < 0 or not 0.0 <= float(self.noise) <= 1.0:
            raise ConfigError("env.max_steps must be >= 1, env.max_commands >= 0 and env.noise in [0, 1]")

    def games_root(self) -> str:
        return str(engine.data_root(self.data_dir))

    def tasks_path(self) -> str:
        return str(Path(self.tasks_file).expanduser() if self.tasks_file else default_tasks_file())

    def cache(self) -> Path:
        return cache_folder(self.cache_dir, "alfworld")


@ENVS.register("alfworld")
class AlfWorldEnv(Environment):
    """ALFWorld household tasks (six types, real games or generated scenes) on TextWorld's PDDL engine."""

    name = "alfworld"
    action_format = "a game command"

    @classmethod
    def availability(cls) -> str | None:
        return engine.availability_line()

    def __init__(self, cfg: Any = None, seed: int = 0):
        super().__init__(cfg, seed)
        self.settings = settings_from_cfg(AlfWorldSettings, cfg, "alfworld")
        self.settings.seed = int(seed if self.settings.seed is None else self.settings.seed)
        self.settings.validate()
        self.game: Any = None
        self.state: Any = None
        self.task: Task | None = None
        self.steps, self.done, self.won = 0, True, False
        self.plan_at = 0  # the generated expert's place in its script (`expert_command`)

    # -- tasks ----------------------------------------------------------------------------

    def tasks(self, split: str) -> list[Task]:
        if split not in SPLITS:
            raise ConfigError(f"unknown split {split!r} for env=alfworld", f"use one of {', '.join(SPLITS)}")
        settings = json.dumps(asdict(self.settings), sort_keys=True)
        if self.settings.scenes == "generated":
            from talentrl_cli.envs.alfworld_env import scenes

            return list(scenes.split_tasks(settings, split))
        engine.require(self.settings.data_dir)
        return list(_real_tasks(settings, split))

    # -- episodes -------------------------------------------------------------------------

    def reset(self, task: Task, expert: bool = False) -> str:
        self.close()
        self.game = _start(task, expert)
        self.state = self.game.reset()
        self.task, self.steps, self.done, self.won, self.plan_at = task, 0, False, False, 0
        return task.meta.get("initial_observation") or split_opening(self.state["feedback"])[0]

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        if self.task is None or self.done:
            return EPISODE_OVER, 0.0, True, {"valid": False}
        self.steps += 1
        if _THINK.match(ACTION_MARK.split(str(action))[-1]):
            feedback, over, valid, command = THINK_REPLY, False, True, "think"
        else:
            command = resolve(command_of(action), self.admissible())
            valid = command in self.admissible()
            self.state, _, over = self.game.step(command or "look")
            feedback = self.state["feedback"]
            self.won = bool(self.state.get("won"))
            self.plan_at += int(valid and command == self.scripted_next())
        self.done = self.won or bool(over) or self.steps >= self.settings.max_steps
        info: dict[str, Any] = {"valid": valid, "steps": self.steps, "command": command}
        observation = clean(feedback)
        if self.done:
            info.update(self.score(self.task, None))
            if not self.won and not over:
                observation += f"\nStep limit reached ({self.settings.max_steps} actions)."
                info["truncated"] = True
        else:
            observation += "".join("\n" + line for line in self.reminders())
        return observation, float(info.get("reward", 0.0)), self.done, info

    def reminders(self) -> list[str]:
        """The lines after a running episode's observation: the goal again (`env.remind_task`),
        then the commands that apply (`env.max_commands`)."""
        lines = [f"Your task is to: {self.task.question}"] if self.settings.remind_task and self.task else []
        if self.settings.max_commands:
            lines.append(commands_line(self.admissible(), self.settings.max_commands))
        return lines

    def admissible(self) -> list[str]:
        return list((self.state or {}).get("admissible_commands") or [])

    def describe_tools(self) -> str:
        return ("one game command per turn: go to <receptacle>, open/close <receptacle>, "
                "take <object> from <receptacle>, move <object> to <receptacle> (or put <object> "
                "in/on <receptacle>), "
                "heat/cool/clean <object> with <appliance>, use <lamp>; each observation lists "
                "the commands that apply.")

    def score(self, task: Task, answer: str | None) -> dict[str, float]:
        playing = self.task is not None and self.task.id == task.id
        return {"reward": float(playing and self.won)}

    def close(self) -> None:
        if self.game is not None:
            self.game.close()
            self.game = None

    # -- the expert -------------------------------------------------------------------------

    def scripted_next(self) -> str | None:
        """The generated scene's scripted command at the expert's place, None past its end."""
        plan = self.task.plan if self.task is not None and self.task.meta.get("scenes") == "generated" else []
        return plan[self.plan_at] if self.plan_at < len(plan) else None

    def expert_command(self) -> str | None:
        """The expert's next command: ALFWorld's hand-coded expert on the real games; on a
        generated scene its script, going back first when a detour left the script's place."""
        if self.task is None or self.task.meta.get("scenes") != "generated":
            plan = list((self.state or {}).get("extra.expert_plan") or [])
            return plan[0] if plan else None
        command = self.scripted_next()
        if command is None or command in self.admissible():
            return command
        back = [c for c in reversed(self.task.plan[: self.plan_at]) if c.startswith("go to ")]
        return back[0] if back else command

    def expert_trajectory(self, task: Task, noise: float | None = None,
                          rng: random.Random | None = None) -> Trajectory:
        """The expert's commands, a harmless detour (`go to`/`examine` elsewhere) at rate `noise`."""
        noise = self.settings.noise if noise is None else float(noise)
        rng = rng or random.Random(f"alfworld-expert-{self.settings.seed}-{task.id}-{noise}")
        env = self.fork()
        env.reset(task, expert=True)
        steps = []
        while not env.done:
            command = env.expert_command()
            if command is None:
                break
            detours = [c for c in env.admissible() if c != command and re.match(r"(go to|examine) ", c)]
            if detours and rng.random() < noise:
                command = rng.choice(detours)
            observation, _, _, _ = env.step(f"Action: {command}")
            steps.append(Step(thought="", action=command, observation=observation))
        won = env.won
        env.close()
        return Trajectory(id=f"{task.id}-expert", task=task, steps=steps, success=won, reward=float(won),
                          source="alfworld", meta={"expert": True, "noise": noise})


def generate_trajectories(cfg: Any, split: str = "train", n: int | None = None,
                          noise: float | None = None, seed: int = 0) -> list[Trajectory]:
    """Expert trajectories on the first `n` games of `split` (all when n is None)."""
    env = AlfWorldEnv(cfg, seed)
    tasks = env.tasks(split)
    return [env.expert_trajectory(t, noise=noise) for t in tasks[: len(tasks) if n is None else int(n)]]


# -- commands and observations ------------------------------------------------------------


def command_of(action: str) -> str:
    """The game command in a model turn: the first line after `Action:` (else the whole turn),
    lower-case words, a final period dropped. `/` stays: the ReAct logs write `in/on`."""
    text = str(action)
    found = ACTION_MARK.search(text)
    lines = (text[found.end():] if found else text).strip().splitlines()
    words = _UNSAFE.sub(" ", lines[0].lower()).split() if lines else []
    return " ".join(words)[:MAX_COMMAND].strip()


def resolve(command: str, admissible: list[str]) -> str:
    """`command`, or the admissible command it spells another way: ALFWorld's grammar changed
    `put X in/on Y` (the ReAct logs, older game files) to `move X to Y` (alfred.twl2 today)."""
    if command in admissible:
        return command
    put = _PUT.match(command)
    for other in admissible if put else []:
        same = _PUT.match(other)
        if same and same.groups() == put.groups():
            return other
    return command


def commands_line(admissible: list[str], limit: int) -> str:
    """The commands that apply, the state-changing ones first: the room listing already names
    every receptacle a `go to` reaches, so those are the ones a short limit drops."""
    shown = sorted((c for c in admissible if not _HIDDEN.match(c)), key=lambda c: c.startswith("go to "))
    return "Commands: " + ", ".join(shown[:limit])


def clean(feedback: str) -> str:
    """The engine's text without the welcome banner and with single spaces."""
    lines = [re.sub(r"[ \t]+", " ", line).strip() for line in (feedback or "").splitlines()]
    return "\n".join(line for line in lines if line and not re.match(r"^-=.*=-$", line))


# -- the real games -------------------------------------------------------------------------


def _start(task: Task, expert: bool) -> Any:
    if task.meta.get("scenes") == "generated":
        from talentrl_cli.envs.alfworld_env import scenes

        return scenes.start(task.meta["gamefile"])
    return engine.start(task.meta["gamefile"], expert)


@lru_cache(maxsize=8)
def _real_tasks(settings_json: str, split: str) -> tuple[Task, ...]:
    """A split's games, in the tasks file's order where it lists them (valid_unseen), else sorted."""
    settings = AlfWorldSettings(**json.loads(settings_json))
    root, alfworld_split = settings.games_root(), settings.splits.get(split, split)
    files = engine.game_files(root, alfworld_split)
    known = known_games(settings.tasks_path())
    order = {rel: i for i, rel in enumerate(known)}
    files.sort(key=lambda f: order.get(relative_gamefile(f, root), len(order)))
    limit = (settings.limit or {}).get(split)
    chosen = files if limit is None else files[: int(limit)]
    return tuple(_real_task(settings, alfworld_split, f, known.get(relative_gamefile(f, root)), i)
                 for i, f in enumerate(chosen))


def _real_task(settings: AlfWorldSettings, alfworld_split: str, gamefile: str,
               record: dict[str, Any] | None, i: int) -> Task:
    rel = relative_gamefile(gamefile, settings.games_root())
    if record is None:
        room, goal = _opening(settings.cache(), gamefile)
        record = {"id": f"{alfworld_split}_{i:04d}", "task": goal, "initial_observation": room,
                  "task_type": task_type_of(rel)}
    return Task(id=str(record["id"]), question=str(record["task"]), env="alfworld",
                strategy=record.get("task_type") or task_type_of(rel),
                meta={"gamefile": gamefile, "game": rel, "scenes": "alfworld",
                      "initial_observation": str(record["initial_observation"])})


def _opening(cache: Path, gamefile: str) -> tuple[str, str]:
    """(room, goal) of a game the tasks file does not list, from its first turn, cached."""
    sidecar = cache / "openings" / f"{hashlib.sha256(gamefile.encode()).hexdigest()[:16]}.json"
    if sidecar.exists():
        room, goal = json.loads(sidecar.read_text())
        return room, goal
    game = engine.start(gamefile)
    try:
        room, goal = split_opening(game.reset()["feedback"])
    finally:
        game.close()
    sidecar.parent.mkdir(parents=True, exist_ok=True)
    partial = sidecar.with_suffix(".tmp")
    partial.write_text(json.dumps([room, goal]))
    partial.replace(sidecar)
    return room, goal
