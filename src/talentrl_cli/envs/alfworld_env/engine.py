"""The real ALFWorld games: the `alfworld` package's `AlfredTWEnv` over `$ALFWORLD_DATA`.

    pip install alfworld && alfworld-download && export ALFWORLD_DATA=~/.cache/alfworld
    talentrl eval env=alfworld eval.limit=10

`AlfredTWEnv(config, train_eval)` collects a split's solvable games (`game.tw-pddl`, the
movable/sliced ones left out, as ALFWorld does); each episode plays one of them on TextWorld's
PDDL engine with ALFWorld's own wrappers (`AlfredDemangler` names objects `apple 1`,
`AlfredExpert` computes the hand-coded expert's next command), which is what
`AlfredTWEnv.init_env` composes, for one chosen game instead of a gym batch that cycles
through them. Everything is imported lazily: without the package the env still builds
prompts (`talentrl sft env=alfworld` on ReAct trajectories) and `availability()` says what
is missing.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from talentrl_cli.errors import ConfigError

INSTALL = "pip install alfworld && alfworld-download (or export ALFWORLD_DATA=<the data folder>)"
# our split -> AlfredTWEnv's train_eval; ALFWorld's folders under json_2.1.1/
TRAIN_EVAL = {"train": "train", "valid_seen": "eval_in_distribution", "valid_unseen": "eval_out_of_distribution"}
GAMES_DIR = "json_2.1.1"


def data_root(data_dir: str | None = None) -> Path:
    """`env.data_dir`, else `$ALFWORLD_DATA`, else `~/.cache/alfworld` (alfworld's own default,
    where `alfworld-download` puts the files)."""
    return Path(data_dir or os.environ.get("ALFWORLD_DATA") or "~/.cache/alfworld").expanduser()


def missing(data_dir: str | None = None) -> list[str]:
    """What the real games still need here, as the user would install or set it."""
    needs = []
    if importlib.util.find_spec("alfworld") is None:
        needs.append("the alfworld package")
    elif importlib.util.find_spec("fast_downward") is None:
        needs.append("fast_downward (pip install 'talentrl[alfworld]')")
    games = data_root(data_dir) / GAMES_DIR
    if not games.is_dir():
        needs.append(f"its game files ({games} is absent)")
    return needs


def availability_line(data_dir: str | None = None) -> str | None:
    """One line for `talentrl envs list` and for every stage: what is missing and how to get it."""
    needs = missing(data_dir)
    if not needs:
        return None
    from talentrl_cli.envs.alfworld_env import scenes

    other = "" if scenes.missing() else "; env.scenes=generated runs without them"
    return f"needs {' and '.join(needs)}: {INSTALL}{other}"


def require(data_dir: str | None) -> None:
    """Stop a stage that would play the real games with the one line, before any work."""
    line = availability_line(data_dir)
    if line:
        raise ConfigError(f"env=alfworld {line}")


@dataclass(frozen=True)
class Api:
    """The few names of `alfworld` and `textworld` the adapter uses (a test fakes them)."""

    AlfredTWEnv: Any
    start: Any  # start(gamefile, expert: bool) -> a TextWorld env with reset()/step()/close()


@lru_cache(maxsize=1)
def api() -> Api:
    import textworld
    from alfworld.agents.environment.alfred_tw_env import (
        AlfredDemangler,
        AlfredExpert,
        AlfredInfos,
        AlfredTWEnv,
    )

    def start(gamefile: str, expert: bool = False) -> Any:
        infos = textworld.EnvInfos(won=True, admissible_commands=True, extras=["gamefile"])
        wrappers = [AlfredDemangler(shuffle=False), AlfredInfos]
        if expert:
            wrappers.append(AlfredExpert(expert_type="handcoded"))
            infos.extras.append("expert_plan")
        return textworld.start(gamefile, request_infos=infos, wrappers=wrappers)

    return Api(AlfredTWEnv=AlfredTWEnv, start=start)


def alfred_config(data_dir: str) -> dict[str, Any]:
    """The part of ALFWorld's `configs/base_config.yaml` that `AlfredTWEnv` reads."""
    games = Path(data_dir).expanduser() / GAMES_DIR
    return {
        "dataset": {"data_path": str(games / "train"), "eval_id_data_path": str(games / "valid_seen"),
                    "eval_ood_data_path": str(games / "valid_unseen"),
                    "num_train_games": -1, "num_eval_games": -1},
        "logic": {"domain": str(Path(data_dir) / "logic" / "alfred.pddl"),
                  "grammar": str(Path(data_dir) / "logic" / "alfred.twl2")},
        "env": {"type": "AlfredTWEnv", "domain_randomization": False, "task_types": [1, 2, 3, 4, 5, 6],
                "expert_timeout_steps": 150, "expert_type": "handcoded", "goal_desc_human_anns_prob": 0.0},
        "general": {"training_method": "dagger"},
        "dagger": {"training": {"max_nb_steps_per_episode": 50}},
    }


def game_files(data_dir: str, alfworld_split: str) -> list[str]:
    """The split's solvable games as `AlfredTWEnv` collects them, sorted (its os.walk order is
    the file system's). Its progress prints are kept off the CLI's screen."""
    if alfworld_split not in TRAIN_EVAL:
        raise ConfigError(f"unknown ALFWorld split {alfworld_split!r}", f"use one of {', '.join(TRAIN_EVAL)}")
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        env = api().AlfredTWEnv(alfred_config(data_dir), train_eval=TRAIN_EVAL[alfworld_split])
    return sorted(str(f) for f in env.game_files)


def start(gamefile: str, expert: bool = False) -> Any:
    """One game on the engine, ALFWorld's wrappers applied."""
    return api().start(gamefile, expert)
