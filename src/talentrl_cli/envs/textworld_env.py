"""`env=textworld`: games made by TextWorld's own generators, played on its engine.

    talentrl envs sample textworld -n 2
    talentrl mine source=textworld env=textworld
    talentrl pipeline textworld
    talentrl eval env=textworld "env.games={coin: 'tw-coin_collector --level 10'}"

`env.games` maps a task type (the gold strategy) to `tw-make` arguments; a split's games cycle
through the types, each game made from its own seed (sha256 of env seed, split, type, index:
disjoint splits), compiled once into `$TALENTRL_CACHE/textworld` and reused. A task is one
game: its question the game's objective, its first observation the opening room
(`task.meta.initial_observation`), its plan the walkthrough. An action is one game command
(`Action: go east`); the observation is the engine's answer, followed by the admissible
commands (without `examine`/`look`, which never advance a quest, to keep prompts short).
The reward is 1 when the game is won, at the end of the episode; `score` also reports the
game's points over its maximum. The expert follows the engine's own winning commands from the
current state (`policy_commands`), taking a random admissible command instead at rate `noise`.

Needs the `textworld` package (`pip install 'talentrl[envs]'`); `talentrl envs list` says so.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from talentrl_cli.envs.base import ENVS, EPISODE_OVER, Environment
from talentrl_cli.envs.search import ACTION_MARK
from talentrl_cli.envs.settings import cache_folder, settings_from_cfg
from talentrl_cli.errors import ConfigError, DataError
from talentrl_cli.schema import Step, Task, Trajectory

SPLITS = ("train", "dev", "test")
INSTALL = "pip install 'talentrl[envs]' (textworld==1.7.0)"
_HIDDEN_COMMANDS = re.compile(r"^(examine|look)\b")
_UNSAFE = re.compile(r"[^a-z0-9' -]")
MAX_COMMAND = 80
# the interpreter's own verbs: `save`/`script` write files into the working directory (seen:
# a policy's `script` left a transcript in the repo), `restore`/`undo`/`restart`/`quit` move
# the engine behind TextWorld's state tracking; a game never needs them
META_VERBS = frozenset({"save", "restore", "script", "unscript", "transcript", "noscript", "record",
                        "replay", "playback", "undo", "restart", "quit", "q"})
META_REFUSAL = "That command is not available in this game."
# the z-machine's status bar (room, score/moves) and its end-of-game menu: engine chrome
_CHROME = re.compile(r"^\s*(-= .* =-\s*-?\d+/\d+|Would you like to RESTART.*)\s*$", re.M)


@dataclass
class TextWorldSettings:
    """The `env:` section for `textworld` (conf/env/textworld.yaml)."""

    name: str = "textworld"
    seed: int | None = None
    games: dict[str, str] = field(default_factory=lambda: {"coin": "tw-coin_collector --level 5"})
    n_games: dict[str, int] = field(default_factory=lambda: {"train": 40, "dev": 20, "test": 20})
    max_steps: int = 20
    noise: float = 0.2
    max_commands: int = 20
    cache_dir: str | None = None

    def validate(self) -> None:
        if not self.games:
            raise ConfigError("env.games is empty", "map a task type to tw-make arguments, e.g. "
                              "\"env.games={coin: 'tw-coin_collector --level 5'}\"")
        if set(self.n_games) - set(SPLITS) or min(self.n_games.values(), default=0) < 0:
            raise ConfigError(f"env.n_games needs non-negative counts for {', '.join(SPLITS)}, got {self.n_games}")
        if self.max_steps < 1 or not 0.0 <= float(self.noise) <= 1.0:
            raise ConfigError("env.max_steps must be >= 1 and env.noise in [0, 1]")

    def cache(self) -> Path:
        return cache_folder(self.cache_dir, "textworld")


@ENVS.register("textworld")
class TextWorldEnv(Environment):
    """TextWorld games (coin collector, treasure hunter, simple, cooking, custom) on the real engine."""

    name = "textworld"
    action_format = "a game command"

    @classmethod
    def availability(cls) -> str | None:
        import importlib.util

        return None if importlib.util.find_spec("textworld") else f"needs textworld: {INSTALL}"

    def __init__(self, cfg: Any = None, seed: int = 0):
        super().__init__(cfg, seed)
        self.settings = settings_from_cfg(TextWorldSettings, cfg, "textworld")
        self.settings.seed = int(seed if self.settings.seed is None else self.settings.seed)
        self.settings.validate()
        self.game: Any = None
        self.state: Any = None
        self.task: Task | None = None
        self.steps, self.done = 0, True

    def tasks(self, split: str) -> list[Task]:
        if split not in SPLITS:
            raise ConfigError(f"unknown split {split!r} for env=textworld", f"use one of {', '.join(SPLITS)}")
        return list(_split_tasks(json.dumps(vars(self.settings), sort_keys=True), split))

    def reset(self, task: Task) -> str:
        if self.game is not None:
            self.game.close()
        self.game = _start(task.meta["game"])
        self.state = self.game.reset()
        self.task, self.steps, self.done = task, 0, False
        return task.meta["initial_observation"]

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        if self.task is None or self.done:
            return EPISODE_OVER, 0.0, True, {"valid": False}
        command = command_of(action)
        self.steps += 1
        refused = command.split(" ")[0] in META_VERBS
        if refused:
            over, feedback = False, META_REFUSAL
        else:
            self.state, _, over = self.game.step(command or "look")
            feedback = self.state.feedback
        self.done = bool(over) or self.steps >= self.settings.max_steps
        info: dict[str, Any] = {"valid": bool(command) and not refused, "steps": self.steps, "command": command}
        observation = clean(feedback)
        if self.done:
            info.update(self.score(self.task, None))
            if not over:
                observation += f"\nStep limit reached ({self.settings.max_steps} actions)."
                info["truncated"] = True
        else:
            observation += "\n" + self.commands_line()
        return observation, float(info.get("reward", 0.0)), self.done, info

    def commands_line(self) -> str:
        shown = [c for c in self.state.admissible_commands or [] if not _HIDDEN_COMMANDS.match(c)]
        return "Commands: " + ", ".join(shown[: self.settings.max_commands])

    def describe_tools(self) -> str:
        return ("one game command per turn, e.g. go east, take <thing>, open <container>, "
                "put <thing> on <supporter>; each observation lists the commands that apply.")

    def score(self, task: Task, answer: str | None) -> dict[str, float]:
        playing = self.state is not None and self.task is not None and self.task.id == task.id
        won = bool(playing and self.state.won)
        points = float(self.state.score) / max(float(self.state.max_score or 1), 1.0) if playing else 0.0
        return {"reward": float(won), "points": round(points, 4)}

    def expert_trajectory(self, task: Task, noise: float | None = None,
                          rng: random.Random | None = None) -> Trajectory:
        """The engine's winning commands from each state, a random other command at rate `noise`."""
        noise = self.settings.noise if noise is None else float(noise)
        rng = rng or random.Random(f"textworld-expert-{self.settings.seed}-{task.id}-{noise}")
        env = self.fork()
        env.reset(task)
        steps = []
        while not env.done:
            plan = list(env.state.policy_commands or [])
            if not plan:
                break
            command = plan[0]
            others = [c for c in env.state.admissible_commands or [] if c != command]
            if others and rng.random() < noise:
                command = rng.choice(others)
            observation, _, _, _ = env.step(f"Action: {command}")
            steps.append(Step(thought="", action=command, observation=observation))
        won = bool(env.state.won)
        env.close()
        return Trajectory(id=f"{task.id}-expert", task=task, steps=steps, success=won,
                          reward=float(won), source="textworld", meta={"expert": True, "noise": noise})

    def close(self) -> None:
        if self.game is not None:
            self.game.close()
            self.game = None


def command_of(action: str) -> str:
    """The game command in a model turn: the first line after `Action:`, else the whole turn,
    as lower-case ASCII words of at most `MAX_COMMAND` characters. Why: frotz's line reader
    (`os_read_line`) copies the command into a fixed buffer, and a long or non-ASCII command
    from an untrained policy crashed the process (SIGSEGV in strcat, seen under rl with the
    tiny model); every TextWorld command is a few plain words."""
    text = str(action)
    found = ACTION_MARK.search(text)  # the ReAct grammar's marker, as parse_action reads it
    lines = (text[found.end():] if found else text).strip().splitlines()
    words = _UNSAFE.sub(" ", lines[0].lower()).split() if lines else []
    return " ".join(words)[:MAX_COMMAND].strip()


def clean(feedback: str) -> str:
    """The engine's text without its prompt marker, status bar, end menu and blank runs."""
    text = _CHROME.sub("", (feedback or "").replace(">", " "))
    text = re.sub(r"[ \t]+", " ", re.sub(r"\s*\n\s*", "\n", text)).strip()
    return text


def generate_trajectories(cfg: Any, split: str = "train", n: int | None = None,
                          noise: float | None = None, seed: int = 0) -> list[Trajectory]:
    """Expert trajectories on the first `n` games of `split` (all when n is None)."""
    env = TextWorldEnv(cfg, seed)
    tasks = env.tasks(split)
    return [env.expert_trajectory(t, noise=noise) for t in tasks[: len(tasks) if n is None else int(n)]]


# -- games ----------------------------------------------------------------------------------


def _require_textworld() -> Any:
    try:
        import textworld
    except ImportError:
        raise ConfigError("env=textworld needs the textworld package", INSTALL) from None
    return textworld


def _start(game: str) -> Any:
    """The engine on one game; jericho's UnsupportedGameWarning is muted: it concerns its own
    score detection, which TextWorld's state tracking replaces."""
    import warnings

    textworld = _require_textworld()
    infos = textworld.EnvInfos(admissible_commands=True, policy_commands=True, won=True, lost=True,
                               objective=True, description=True, score=True, max_score=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return textworld.start(game, request_infos=infos)


@lru_cache(maxsize=8)
def _split_tasks(settings_json: str, split: str) -> tuple[Task, ...]:
    from talentrl_cli.progress import current

    settings = TextWorldSettings(**json.loads(settings_json))
    kinds = list(settings.games)
    n = int(settings.n_games.get(split, 0))
    display = current()
    bar = display.task(f"textworld: {split} games", total=n, unit="games")
    tasks = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        tasks.append(_game_task(settings, split, kind, i))
        display.update(bar, completed=i + 1)
    display.finish(bar)
    return tuple(tasks)


def _game_task(settings: TextWorldSettings, split: str, kind: str, i: int) -> Task:
    game_seed = int(hashlib.sha256(f"{settings.seed}:{split}:{kind}:{i}".encode()).hexdigest()[:8], 16)
    args = settings.games[kind]
    folder = settings.cache() / hashlib.sha256(args.encode()).hexdigest()[:12]
    meta = _cached_game(folder, args, game_seed)
    return Task(id=f"textworld-{settings.seed}-{split}-{kind}-{i:03d}", question=meta["objective"],
                env="textworld", strategy=kind, plan=meta["walkthrough"],
                meta={"game": meta["game"], "initial_observation": meta["initial_observation"],
                      "game_seed": game_seed, "tw_make": args, "max_score": meta["max_score"]})


def _cached_game(folder: Path, args: str, game_seed: int) -> dict[str, Any]:
    """The game's facts, making and compiling it first if the cache lacks it. The sidecar
    `<seed>.task.json` is written last, by rename, so a killed run never leaves a game that
    looks complete; two processes making the same game both produce identical files. A sidecar
    whose game files are gone (a cache pruned by hand) makes the game again."""
    sidecar = folder / f"{game_seed}.task.json"
    if sidecar.exists() and all((folder / f"{game_seed}{ext}").exists() for ext in (".z8", ".json")):
        return json.loads(sidecar.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".tmp-") as tmp:
        game = Path(tmp) / f"{game_seed}.z8"
        _tw_make(args, game_seed, game)
        facts = _play_opening(game)
        for made in Path(tmp).iterdir():
            os.replace(made, folder / made.name)
    facts["game"] = str(folder / f"{game_seed}.z8")
    partial = folder / f".{game_seed}.task.json.tmp"
    partial.write_text(json.dumps(facts, sort_keys=True))
    os.replace(partial, sidecar)
    return facts


def _tw_make(args: str, game_seed: int, output: Path) -> None:
    _require_textworld()
    tw_make = Path(sys.executable).with_name("tw-make")
    exe = str(tw_make) if tw_make.exists() else shutil.which("tw-make")
    command = [exe, *shlex.split(args), "--seed", str(game_seed), "--output", str(output), "-f", "--silent"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0 or not output.exists():
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise DataError(f"tw-make could not make a game from env.games entry {args!r}: {' | '.join(tail)}",
                        "check the arguments with `tw-make " + args.split()[0] + " --help`")


def _play_opening(game: Path) -> dict[str, Any]:
    env = _start(str(game))
    try:
        state = env.reset()
        return {"objective": clean(state.objective), "initial_observation": clean(state.description),
                "walkthrough": list(state.policy_commands or []), "max_score": int(state.max_score or 0)}
    finally:
        env.close()
