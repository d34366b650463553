"""env=alfworld: the real adapter's logic on a stub of ALFWorld's `AlfredTWEnv` and engine (no
package needed): the task list from the 134 valid_unseen tasks file, observation and command
formatting, the 50-step limit, the one-line message when the package or the games are missing
(from `tasks()`, from a stage, from `talentrl envs list`), ReAct trajectories as SFT prompts;
and the generated scenes: their scripts and PDDL, their game files and the expert's detours on
a stand-in engine, and their play on the real one where TextWorld's PDDL engine
(fast_downward) is installed. Tests on shared/data skip cleanly without it."""

from __future__ import annotations

import importlib.util
import json
import random
import re
from collections import Counter
from types import SimpleNamespace

import pytest

from talentrl_cli.envs import make_env
from talentrl_cli.envs.alfworld_env import engine, scenes
from talentrl_cli.envs.alfworld_env.env import (
    THINK_REPLY,
    AlfWorldEnv,
    _real_tasks,
    clean,
    command_of,
    commands_line,
    resolve,
)
from talentrl_cli.envs.alfworld_env.tasks import TASK_TYPES, split_opening, task_type_of
from talentrl_cli.envs.base import EPISODE_OVER
from talentrl_cli.errors import ConfigError

ROOM = ("You are in the middle of a room. Looking quickly around you, you see a cabinet 1, "
        "a coffeemachine 1, and a countertop 1.")
GOAL = "put a clean mug in coffeemachine."
WELCOME = f"-= Welcome to TextWorld, ALFRED! =-\n\n{ROOM}\n\nYour task is to: {GOAL}"
SCRIPT = ["go to countertop 1", "take mug 1 from countertop 1", "go to coffeemachine 1",
          "move mug 1 to coffeemachine 1"]
COMMANDS = ["examine countertop 1", "go to cabinet 1", "go to coffeemachine 1", "inventory", "look",
            "move mug 1 to coffeemachine 1", "take mug 1 from countertop 1", "go to countertop 1"]
GAME = "json_2.1.1/{split}/{task}/trial_T1/game.tw-pddl"


# -- a stub of the alfworld package's surface ------------------------------------------------


class FakeGame:
    """What the adapter plays: reset/step/close on GameState-like dicts; the last script
    command wins; `extra.expert_plan` as ALFWorld's hand-coded expert gives it."""

    def __init__(self, gamefile: str, expert: bool):
        self.gamefile, self.expert, self.commands, self.closed = gamefile, expert, [], False

    def _state(self, feedback: str, won: bool = False) -> dict:
        done = len([c for c in self.commands if c in SCRIPT])
        plan = SCRIPT[done: done + 1] if self.expert else []
        return {"feedback": feedback, "admissible_commands": COMMANDS, "won": won, "extra.expert_plan": plan}

    def reset(self) -> dict:
        self.commands = []
        return self._state(WELCOME)

    def step(self, command: str):
        self.commands.append(command)
        won = command == SCRIPT[-1]
        feedback = f"You do: {command}." if command in COMMANDS else "Nothing happens."
        return self._state(feedback, won), float(won), won

    def close(self) -> None:
        self.closed = True


class FakeAlfredTWEnv:
    """`AlfredTWEnv(config, train_eval)`: collects a split's solvable `game_files` (and prints)."""

    files: dict[str, list[str]] = {}
    configs: list = []

    def __init__(self, config: dict, train_eval: str = "train"):
        print("Initializing AlfredTWEnv...")
        FakeAlfredTWEnv.configs.append((config, train_eval))
        self.game_files = list(self.files.get(train_eval, []))


@pytest.fixture
def fake_alfworld(monkeypatch, tmp_path):
    """ALFWorld 'installed': $ALFWORLD_DATA with json_2.1.1/, the stub for its classes."""
    (tmp_path / "json_2.1.1").mkdir()
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    monkeypatch.setattr(engine, "missing", lambda data_dir=None: [])
    games: list[FakeGame] = []

    def start(gamefile, expert=False):
        games.append(FakeGame(gamefile, expert))
        return games[-1]

    monkeypatch.setattr(engine, "api", lambda: engine.Api(AlfredTWEnv=FakeAlfredTWEnv, start=start))
    monkeypatch.setattr(FakeAlfredTWEnv, "files", {})
    monkeypatch.setattr(FakeAlfredTWEnv, "configs", [])
    monkeypatch.setenv("TALENTRL_CACHE", str(tmp_path / "cache"))
    _real_tasks.cache_clear()
    yield SimpleNamespace(root=tmp_path, games=games)
    _real_tasks.cache_clear()


def one_game_env(fake, task_type="pick_clean_then_place_in_recep", **settings) -> AlfWorldEnv:
    rel = GAME.format(split="valid_unseen", task=f"{task_type}-Mug-None-CoffeeMachine-5")
    FakeAlfredTWEnv.files = {"eval_out_of_distribution": [str(fake.root / rel)]}
    return make_env("alfworld", {"tasks_file": str(fake.root / "none.jsonl"), **settings})


# -- without the package or the games ----------------------------------------------------------


@pytest.fixture
def nothing_installed(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("alfworld", "fast_downward") else real(name, *a))
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path / "nowhere"))


def test_the_missing_package_and_data_are_one_line_saying_how_to_get_them(nothing_installed):
    line = AlfWorldEnv.availability()
    assert line and "\n" not in line
    for needed in ("alfworld package", "game files", "ALFWORLD_DATA", "pip install alfworld", "alfworld-download"):
        assert needed in line


def test_missing_game_files_are_named(monkeypatch, tmp_path):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: SimpleNamespace(submodule_search_locations=None))
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    assert f"{tmp_path / 'json_2.1.1'} is absent" in AlfWorldEnv.availability()


def test_tasks_without_the_package_end_with_that_line(nothing_installed):
    env = make_env("alfworld", {})  # prompts need nothing
    assert env.describe_tools() and env.action_format == "a game command"
    with pytest.raises(ConfigError) as raised:
        env.tasks("dev")
    assert str(raised.value) == f"env=alfworld {AlfWorldEnv.availability()}"


def test_a_stage_ends_with_the_one_message_and_no_traceback(nothing_installed, run_cli):
    code, out, err = run_cli("eval", "env=alfworld", "inputs.model=none", "inputs.index=none", "eval.modes=[zero_shot]")
    assert code == 1 and "pip install alfworld" in out + err and "Traceback" not in out + err


def test_envs_list_shows_alfworld(run_cli):
    code, out, _ = run_cli("envs", "list")
    assert code == 0 and "alfworld" in out


def test_bad_settings_name_the_key():
    with pytest.raises(ConfigError, match="env.scenes"):
        AlfWorldEnv({"scenes": "thor"})
    with pytest.raises(ConfigError, match="env.splits"):
        AlfWorldEnv({"splits": {"dev": "valid_test"}})
    with pytest.raises(ConfigError, match="env.max_step"):
        AlfWorldEnv({"max_step": 10})


# -- the task list ------------------------------------------------------------------------------


def test_valid_unseen_follows_the_134_tasks_file(fake_alfworld, shared_data):
    """Every game of the file in its order with its goal, opening and type; a game the file
    lacks plays its first turn (once: the opening is cached)."""
    path = shared_data / "alfworld" / "valid_unseen_134_tasks.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    extra = GAME.format(split="valid_unseen", task="pick_heat_then_place_in_recep-Egg-None-Fridge-9")
    FakeAlfredTWEnv.files = {"eval_out_of_distribution": [str(fake_alfworld.root / r["gamefile"])
                                                           for r in reversed(records)]
                             + [str(fake_alfworld.root / extra)]}
    env = make_env("alfworld", {"tasks_file": str(path)})
    tasks = env.tasks("dev")
    assert [t.id for t in tasks[:134]] == [r["id"] for r in records]
    assert tasks[0].question == records[0]["task"]
    assert tasks[0].meta["initial_observation"] == records[0]["initial_observation"]
    assert Counter(t.strategy for t in tasks[:134]) == {
        "pick_clean_then_place_in_recep": 31, "pick_and_place_simple": 24, "pick_heat_then_place_in_recep": 23,
        "pick_cool_then_place_in_recep": 21, "look_at_obj_in_light": 18, "pick_two_obj_and_place": 17}
    assert (tasks[134].id, tasks[134].question, tasks[134].strategy) == \
        ("valid_unseen_0134", GOAL, "pick_heat_then_place_in_recep")
    assert tasks[134].meta["initial_observation"] == ROOM
    assert FakeAlfredTWEnv.configs[-1][1] == "eval_out_of_distribution"
    assert FakeAlfredTWEnv.configs[-1][0]["dataset"]["eval_ood_data_path"].endswith("json_2.1.1/valid_unseen")
    _real_tasks.cache_clear()
    played = len(fake_alfworld.games)
    assert make_env("alfworld", {"tasks_file": str(path)}).tasks("test") == tasks
    assert len(fake_alfworld.games) == played  # the opening came from the cache


def test_train_is_limited_and_sorted(fake_alfworld):
    files = [str(fake_alfworld.root / GAME.format(split="train", task=f"pick_and_place_simple-Mug-None-Desk-{i}"))
             for i in (3, 1, 2)]
    FakeAlfredTWEnv.files = {"train": files}
    tasks = make_env("alfworld", {"limit": {"train": 2}}).tasks("train")
    assert [t.meta["gamefile"] for t in tasks] == sorted(files)[:2]
    assert all(t.strategy == "pick_and_place_simple" and t.question == GOAL for t in tasks)


def test_the_engine_prints_stay_off_the_screen(fake_alfworld, capsys):
    one_game_env(fake_alfworld).tasks("dev")
    assert "AlfredTWEnv" not in capsys.readouterr().out


# -- episodes -------------------------------------------------------------------------------------


def test_an_episode_formats_observations_and_commands(fake_alfworld):
    env = one_game_env(fake_alfworld)
    task = env.tasks("dev")[0]
    assert env.reset(task) == ROOM and task.strategy == "pick_clean_then_place_in_recep"
    observation, reward, done, info = env.step("Thought: the mug is on the counter.\nAction: go to countertop 1")
    first, commands = observation.split("\n")
    assert first == "You do: go to countertop 1." and info["valid"] and not done and reward == 0.0
    shown = commands.removeprefix("Commands: ").split(", ")
    assert shown == ["move mug 1 to coffeemachine 1", "take mug 1 from countertop 1", "go to cabinet 1",
                     "go to coffeemachine 1", "go to countertop 1"]
    assert env.step("Action: think: now take it")[0].startswith(THINK_REPLY)
    assert fake_alfworld.games[-1].commands == ["go to countertop 1"]  # a think never reaches the engine
    env.step("Action: take mug 1 from countertop 1")
    observation, reward, done, info = env.step("Action: put mug 1 in/on coffeemachine 1.")
    assert fake_alfworld.games[-1].commands[-1] == "move mug 1 to coffeemachine 1"
    assert done and reward == 1.0 and "Commands:" not in observation and not info.get("truncated")
    assert env.score(task, None) == {"reward": 1.0}
    assert env.step("look") == (EPISODE_OVER, 0.0, True, {"valid": False})


def test_remind_task_repeats_the_goal_before_the_commands(fake_alfworld):
    env = one_game_env(fake_alfworld, remind_task=True, max_commands=2)
    env.reset(env.tasks("dev")[0])
    observation = env.step("Action: go to countertop 1")[0]
    assert observation.split("\n") == ["You do: go to countertop 1.", f"Your task is to: {GOAL}",
                                        "Commands: move mug 1 to coffeemachine 1, take mug 1 from countertop 1"]
    env.step("Action: take mug 1 from countertop 1")
    assert "Your task is to" not in env.step("Action: move mug 1 to coffeemachine 1")[0]  # over: nothing after


def test_fifty_junk_actions_end_the_episode(fake_alfworld):
    env = one_game_env(fake_alfworld)
    task = env.tasks("dev")[0]
    env.reset(task)
    for i in range(50):
        observation, reward, done, info = env.step("Action: ☃ dance wildly ☃")
        assert done == (i == 49) and not info["valid"]
    assert "Step limit reached (50 actions)" in observation and info["truncated"] and reward == 0.0
    assert env.score(task, None)["reward"] == 0.0


def test_the_real_expert_follows_alfworlds_plan(fake_alfworld):
    env = one_game_env(fake_alfworld)
    trajectory = env.expert_trajectory(env.tasks("dev")[0], noise=0.0)
    assert [s.action for s in trajectory.steps] == SCRIPT and trajectory.success
    assert fake_alfworld.games[-1].expert and fake_alfworld.games[-1].closed


@pytest.mark.parametrize(("turn", "command"), [
    ("Thought: go.\nAction: go to cabinet 1", "go to cabinet 1"),
    ("Action 3: Put mug 1 in/on coffeemachine 1.\nObservation: ...", "put mug 1 in/on coffeemachine 1"),
    ("take apple 1 from countertop 2", "take apple 1 from countertop 2"),
])
def test_command_of_keeps_the_react_spelling(turn, command):
    assert command_of(turn) == command


def test_resolve_maps_between_the_two_grammars():
    assert resolve("put mug 1 in/on shelf 2", ["move mug 1 to shelf 2"]) == "move mug 1 to shelf 2"
    assert resolve("move mug 1 to shelf 2", ["put mug 1 in/on shelf 2"]) == "put mug 1 in/on shelf 2"
    assert resolve("put mug 1 in/on shelf 3", ["move mug 1 to shelf 2"]) == "put mug 1 in/on shelf 3"


def test_openings_and_feedback_are_cleaned():
    assert split_opening(WELCOME) == (ROOM, GOAL)
    assert clean("-= Welcome =-\n  You   arrive at cabinet 1.  ") == "You arrive at cabinet 1."
    assert commands_line(COMMANDS, 2) == "Commands: move mug 1 to coffeemachine 1, take mug 1 from countertop 1"
    assert task_type_of(GAME.format(split="train", task="look_at_obj_in_light-Book-None-DeskLamp-3")) \
        == "look_at_obj_in_light"


# -- ReAct trajectories as SFT prompts (no engine) ---------------------------------------------------


def test_react_trajectories_make_sft_examples_with_the_alfworld_prompt(shared_data, nothing_installed):
    from talentrl_cli import sft_data
    from talentrl_cli.trajectories import load_trajectories

    path = shared_data / "alfworld" / "react_fewshot_trajectories.jsonl"
    trajectories = [t for t in load_trajectories("alfworld_react", [path]) if t.success][:3]
    env = make_env("alfworld", {})
    bank = SimpleNamespace(talents=[], skills=[])
    examples = sft_data.build_examples([(t, t.task.strategy) for t in trajectories], bank, None, "none", 2, 0.5,
                                       tools=env.describe_tools(), action_format=env.action_format)
    context = examples[0]["messages"][1]["content"]
    assert env.describe_tools() in context and "Action: a game command" in context
    assert trajectories[0].task.meta["initial_observation"] in context
    turns = [m["content"] for m in examples[0]["messages"] if m["role"] == "assistant"]
    assert turns[-1].endswith(trajectories[0].steps[-1].action)


# -- generated scenes ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(TASK_TYPES.values()))
def test_every_scene_template_scripts_its_task(kind):
    for seed in range(20):
        scene = scenes.make_scene(kind, random.Random(seed))
        plan = scenes.script(scene)
        assert scene.goal_recep not in (scene.objects[t] for t in scene.targets)
        takes = [c for c in plan if c.startswith("take ")]
        assert len(takes) == len(scene.targets)
        # it searches: the receptacles before the first take are the room's, in listed order, up to the target's
        searchable = sorted((n for n, _ in scene.receptacles if n.split()[0] not in scenes.NEVER_HOLDS),
                            key=scenes._listing_key)
        walked = [c.removeprefix("go to ") for c in plan[: plan.index(takes[0])] if c.startswith("go to ")]
        assert walked == searchable[: len(walked)] and takes[0].endswith(f"from {walked[-1]}")
        text = scenes.problem(scene, "p")
        assert "(:domain alfred)" in text and scenes.goal_formula(scene) in text
        assert all(f"{scenes.pddl_id(o)} - object" in text for o in scene.objects)


def test_a_cool_task_whose_object_starts_in_the_fridge_cools_it_there():
    scene = scenes.Scene(kind="pick_cool_then_place_in_recep", receptacles=[("countertop 1", False), ("fridge 1", True)],
                         objects={"tomato 1": "fridge 1"}, targets=["tomato 1"], goal_recep="countertop 1",
                         appliance="fridge", goal="put a cool tomato in countertop.")
    assert scenes.script(scene) == ["go to countertop 1", "go to fridge 1", "open fridge 1", "take tomato 1 from fridge 1",
                                    "cool tomato 1 with fridge 1", "go to countertop 1",
                                    "move tomato 1 to countertop 1"]


def test_source_n_follows_the_generated_train_scenes():
    from talentrl_cli.config import compose

    base = ["env=alfworld", "source=alfworld", "env.scenes=generated"]
    assert compose(base).source.n == 60
    assert compose([*base, "env.n_scenes.train=180"]).source.n == 180  # one setting grows the SFT data
    assert compose([*base, "env.n_scenes.train=180", "source.n=30"]).source.n == 30


def test_generated_scenes_without_the_pddl_engine_say_so(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "fast_downward" else real(name, *a))
    scenes.split_tasks.cache_clear()
    with pytest.raises(ConfigError, match=r"talentrl\[alfworld\]"):
        make_env("alfworld", {"scenes": "generated"}).tasks("dev")


SMALL = {"scenes": "generated", "n_scenes": {"train": 6, "dev": 6, "test": 2}}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    if scenes.missing():
        pytest.skip(scenes.missing())
    return make_env("alfworld", {**SMALL, "cache_dir": str(tmp_path_factory.mktemp("alfworld"))}, seed=0)


def test_generated_scenes_cover_the_six_types_and_their_scripts_win(generated):
    tasks = generated.tasks("train")
    assert [t.strategy for t in tasks] == list(TASK_TYPES.values())
    for task in tasks:
        assert task.question and task.meta["initial_observation"].startswith("You are in the middle of a room")
        trajectory = generated.expert_trajectory(task, noise=0.0)
        assert trajectory.success and [s.action for s in trajectory.steps] == task.plan


def test_the_generated_expert_recovers_from_detours(generated):
    for task in generated.tasks("dev"):
        trajectory = generated.expert_trajectory(task, noise=0.3)
        assert trajectory.success and len(trajectory.steps) >= len(task.plan)


def test_generated_junk_runs_to_the_limit(generated):
    task = generated.tasks("test")[0]
    generated.reset(task)
    for _ in range(50):
        observation, reward, done, info = generated.step("Action: fly to the moon")
    assert done and info["truncated"] and reward == 0.0 and "Nothing happens." in observation


class FakeSceneGame:
    """A stand-in for the PDDL engine on a generated game file: `go to`/`examine` apply
    anywhere, the script's next command only where the script's last `go to` led; the
    script played to its end wins."""

    def __init__(self, gamefile: str):
        data = json.loads(open(gamefile).read())
        self.plan = data["walkthrough"]
        self.goal = re.search(r"Your task is to: ([^\"]*)", data["grammar"]).group(1)
        self.receps = sorted({c[6:] for c in self.plan if c.startswith("go to ")} | {"shelf 9"})

    def _state(self, feedback: str) -> dict:
        return {"feedback": feedback, "admissible_commands": self._admissible(), "won": self.done == len(self.plan)}

    def _admissible(self) -> list[str]:
        out = [f"go to {r}" for r in self.receps] + [f"examine {r}" for r in self.receps]
        if self.done < len(self.plan):
            needed = [c for c in self.plan[: self.done + 1] if c.startswith("go to ")][-1][6:]
            out += [self.plan[self.done]] if needed == self.at else []
        return out

    def reset(self) -> dict:
        self.at, self.done = None, 0
        return self._state(f"-= Welcome to TextWorld, ALFRED! =-\n\n{ROOM}\n\nYour task is to: {self.goal}")

    def step(self, command: str):
        if command not in self._admissible():
            return self._state("Nothing happens."), 0.0, False
        self.at = command[6:] if command.startswith("go to ") else self.at
        self.done += int(self.done < len(self.plan) and command == self.plan[self.done])
        state = self._state(f"You do: {command}.")
        return state, float(state["won"]), state["won"]

    def close(self) -> None:
        pass


@pytest.fixture
def fake_scenes(monkeypatch, tmp_path, shared_data):
    monkeypatch.setattr(scenes, "missing", lambda logic=None: None)
    monkeypatch.setattr(scenes, "start", FakeSceneGame)
    scenes.split_tasks.cache_clear()
    scenes._checked_opening.cache_clear()
    yield make_env("alfworld", {**SMALL, "cache_dir": str(tmp_path), "logic_dir": str(shared_data / "alfworld" / "raw")})
    scenes.split_tasks.cache_clear()
    scenes._checked_opening.cache_clear()


def test_generated_tasks_are_cached_game_files_of_the_six_types(fake_scenes, tmp_path):
    tasks = fake_scenes.tasks("train")
    assert [t.strategy for t in tasks] == list(TASK_TYPES.values())
    assert all(t.meta["initial_observation"] == ROOM and t.question.endswith(".") for t in tasks)
    game = json.loads(open(tasks[0].meta["gamefile"]).read())
    assert set(game) == {"pddl_domain", "grammar", "pddl_problem", "walkthrough", "solvable"}
    assert "Your task is to: " + tasks[0].question.rstrip(".") in game["grammar"]
    assert len(list((tmp_path / "generated").glob("*.tw-pddl"))) == 6
    assert not {t.meta["scene_seed"] for t in tasks} & {t.meta["scene_seed"] for t in fake_scenes.tasks("dev")}


def test_the_generated_expert_goes_back_after_a_detour(fake_scenes):
    detoured = 0
    for task in fake_scenes.tasks("train"):
        assert [s.action for s in fake_scenes.expert_trajectory(task, noise=0.0).steps] == task.plan
        noisy = fake_scenes.expert_trajectory(task, noise=0.2)  # the searching script runs up to ~25 commands
        assert noisy.success
        detoured += len(noisy.steps) > len(task.plan)
    assert detoured >= 3
