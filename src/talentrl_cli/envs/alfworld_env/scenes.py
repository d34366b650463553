"""`env.scenes=generated`: household scenes made from a seed, played on ALFWorld's own domain
and grammar (alfred.pddl, alfred.twl2) by TextWorld's PDDL engine.

    talentrl envs sample alfworld env.scenes=generated -n 2
    talentrl mine source=alfworld env=alfworld env.scenes=generated

A scene is one of four room templates (kitchen, bathroom, bedroom, living room), one receptacle
per location as in ALFWorld, the task's objects and a few distractors placed at random, and
an ALFWorld goal of one of the six task types (a split cycles through them; each scene from
its own seed, sha256 of env seed, split and index). It is written as ALFWorld's game format, a
`.tw-pddl` JSON of `pddl_domain`, `grammar` (the goal put in as `add_task_to_grammar` does) and
`pddl_problem`, cached under `$TALENTRL_CACHE/alfworld/generated`. The expert is the template's
script (`go to`, `open`, `take`, `clean`/`heat`/`cool`, `use`, `move`), searching the receptacles
in listed order as a player who cannot see inside them must (`script`), which the engine checks:
a scene whose script does not win is an error. Needs textworld's PDDL support
(`pip install 'talentrl[alfworld]'`: fast-downward-textworld, which textworld[pddl] names); the domain and grammar come from
`env.logic_dir`, `$ALFWORLD_DATA/logic` (`~/.cache/alfworld`), the `alfworld` package or shared/data/alfworld/raw.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from talentrl_cli.envs.alfworld_env import engine
from talentrl_cli.envs.alfworld_env.tasks import TASK_TYPES, default_tasks_file, split_opening
from talentrl_cli.envs.settings import cache_folder
from talentrl_cli.errors import ConfigError, DataError
from talentrl_cli.schema import Task

PDDL_INSTALL = "pip install 'talentrl[alfworld]' (fast-downward-textworld: a C++ build, needs cmake and g++)"
LOGIC_FILES = ("alfred.pddl", "alfred.twl2")
# receptacles (openable ones marked *) and the objects found in each room
ROOMS = {
    "kitchen": (["countertop", "cabinet*", "drawer*", "fridge*", "microwave*", "sinkbasin", "diningtable",
                 "stoveburner", "shelf", "garbagecan"],
                ["apple", "tomato", "potato", "egg", "mug", "cup", "bowl", "plate", "knife", "spatula", "bread"]),
    "bathroom": (["countertop", "cabinet*", "sinkbasin", "toilet", "towelholder", "shelf", "garbagecan"],
                 ["soapbar", "cloth", "spraybottle", "candle", "toiletpaper", "soapbottle"]),
    "bedroom": (["bed", "desk", "drawer*", "shelf", "sidetable", "dresser", "garbagecan"],
                ["book", "cellphone", "pen", "pencil", "keychain", "creditcard", "alarmclock", "cd"]),
    "livingroom": (["sofa", "armchair", "coffeetable", "sidetable", "drawer*", "shelf", "tvstand"],
                   ["remotecontrol", "keychain", "box", "newspaper", "statue", "vase", "creditcard"]),
}
# task type -> (rooms it fits, the appliance it needs, the state it checks, the goal's words)
KINDS = {
    "pick_and_place_simple": (("kitchen", "bathroom", "bedroom", "livingroom"), None, None, "put some {o} on {r}."),
    "look_at_obj_in_light": (("bedroom", "livingroom"), "desklamp", "lit", "look at {o} under the desklamp."),
    "pick_clean_then_place_in_recep": (("kitchen", "bathroom"), "sinkbasin", "isclean", "put a clean {o} in {r}."),
    "pick_heat_then_place_in_recep": (("kitchen",), "microwave", "ishot", "put a hot {o} in {r}."),
    "pick_cool_then_place_in_recep": (("kitchen",), "fridge", "iscool", "put a cool {o} in {r}."),
    "pick_two_obj_and_place": (("kitchen", "bathroom", "bedroom", "livingroom"), None, None, "put two {o} in {r}."),
}
VERB = {"isclean": "clean", "ishot": "heat", "iscool": "cool"}
FOODS = {"apple", "tomato", "potato", "egg", "bread", "mug", "cup"}  # what a microwave or fridge takes


@dataclass
class Scene:
    """A generated game: receptacles (name, openable), objects (name -> receptacle), the task."""

    kind: str
    receptacles: list[tuple[str, bool]]
    objects: dict[str, str]
    targets: list[str]  # the task's object(s)
    goal_recep: str  # where they go (the lamp's receptacle for look_at_obj_in_light)
    appliance: str | None
    goal: str


# -- scene templates ------------------------------------------------------------------------


def make_scene(kind: str, rng: random.Random) -> Scene:
    """One scene of `kind`: its room, receptacles, objects (targets first) and goal."""
    rooms, appliance, state, words = KINDS[kind]
    room = rng.choice(rooms)
    receps, things = ROOMS[room]
    receptacles = _receptacles(receps, rng)
    names = [n for n, _ in receptacles]
    pool = [t for t in things if t in FOODS] if state in ("ishot", "iscool") else list(things)
    target_type = rng.choice(pool)
    n_targets = 2 if kind == "pick_two_obj_and_place" else 1
    lamp_at = rng.choice([n for n in names if n.split()[0] in ("desk", "sidetable", "dresser", "shelf")]) \
        if kind == "look_at_obj_in_light" else None
    holders = [n for n in names if n.split()[0] not in ("microwave", "sinkbasin", "garbagecan") and n != lamp_at]
    goal_recep = lamp_at or rng.choice([n for n in holders if not n.startswith(appliance or "-")])
    sources = [n for n in holders if n != goal_recep]
    objects = {f"{target_type} {i + 1}": rng.choice(sources) for i in range(n_targets)}
    for other in rng.sample([t for t in things if t != target_type], k=min(4, len(things) - 1)):
        objects[f"{other} 1"] = rng.choice(holders)
    if lamp_at:
        objects["desklamp 1"] = lamp_at
    r_word = goal_recep.rsplit(" ", 1)[0]
    return Scene(kind=kind, receptacles=receptacles, objects=objects, targets=list(objects)[:n_targets],
                 goal_recep=goal_recep, appliance=appliance, goal=words.format(o=target_type, r=r_word))


def _receptacles(template: list[str], rng: random.Random) -> list[tuple[str, bool]]:
    """1-3 of each receptacle type that may repeat (cabinets, drawers, shelves, countertops)."""
    out = []
    for spec in template:
        kind, openable = spec.rstrip("*"), spec.endswith("*")
        many = kind in ("cabinet", "drawer", "shelf", "countertop")
        out += [(f"{kind} {i + 1}", openable) for i in range(rng.randint(1, 3) if many else 1)]
    return out


NEVER_HOLDS = ("microwave", "sinkbasin", "garbagecan")  # no generated object starts in these


def script(scene: Scene) -> list[str]:
    """The expert's commands, acting only on what it has seen: it searches the receptacles in the
    room's listed order (opening closed ones) until a target shows, treats it, and puts it in the
    first receptacle of the goal's type; the desklamp is searched for the same way.

    Why not walk straight to the object: the scene knows where it is, the policy does not (the
    room's first observation lists receptacles only), so a direct walk cannot be imitated; SFT on
    it taught SmolLM2 to wander (0 of 12 dev scenes won)."""
    openable = dict(scene.receptacles)
    order = sorted((n for n, _ in scene.receptacles if n.split()[0] not in NEVER_HOLDS), key=_listing_key)
    commands: list[str] = []
    visited: list[str] = []
    here = ""

    def go(recep: str) -> None:
        nonlocal here
        if here != recep:
            commands.append(f"go to {recep}")
            here = recep
        if openable.get(recep) and recep not in visited:
            commands.append(f"open {recep}")
        if recep not in visited:
            visited.append(recep)

    def find(recep: str) -> None:
        if recep in visited:
            return go(recep)
        for candidate in order:
            if candidate not in visited or candidate == recep:
                go(candidate)
                if candidate == recep:
                    return

    goal_type = scene.goal_recep.rsplit(" ", 1)[0]
    place = min((n for n, _ in scene.receptacles if n.rsplit(" ", 1)[0] == goal_type), key=_listing_key)
    rank = {n: i for i, n in enumerate(order)}
    for target in sorted(scene.targets, key=lambda t: rank[scene.objects[t]]):  # the first one seen first
        find(scene.objects[target])
        commands.append(f"take {target} from {scene.objects[target]}")
        if scene.kind == "look_at_obj_in_light":
            find(scene.goal_recep)
            commands.append("use desklamp 1")
            continue
        state = KINDS[scene.kind][2]
        if state:  # used shut: alfred.pddl allows it, and the engine checks that each script wins
            if here != f"{scene.appliance} 1":  # a cool task's object may start in the fridge
                here = f"{scene.appliance} 1"
                commands.append(f"go to {here}")
            commands.append(f"{VERB[state]} {target} with {scene.appliance} 1")
        go(place)
        commands.append(f"move {target} to {place}")
    return commands


def _listing_key(name: str) -> tuple[str, int]:
    kind, number = name.rsplit(" ", 1)
    return kind, int(number)


# -- the PDDL problem -----------------------------------------------------------------------


def pddl_id(name: str) -> str:
    return name.replace(" ", "_")


def type_id(name: str) -> str:
    return name.rsplit(" ", 1)[0] + "type"


def problem(scene: Scene, name: str) -> str:
    """The scene as a PDDL problem of ALFWorld's `alfred` domain, one location per receptacle."""
    receps, objs = [r for r, _ in scene.receptacles], list(scene.objects)
    types = sorted({type_id(o) for o in objs} | {"knifetype", "butterknifetype"})
    rtypes = sorted({type_id(r) for r in receps} | {"sinkbasintype", "microwavetype", "fridgetype"})
    declared = (["agent1 - agent", "loc_start - location"] + [f"loc_{pddl_id(r)} - location" for r in receps]
                + [f"{pddl_id(r)} - receptacle" for r in receps] + [f"{pddl_id(o)} - object" for o in objs]
                + [f"{t} - otype" for t in types] + [f"{t} - rtype" for t in rtypes])
    init = ["(= (total-cost) 0)", "(atLocation agent1 loc_start)"]
    for recep, openable in scene.receptacles:
        init += [f"(receptacleAtLocation {pddl_id(recep)} loc_{pddl_id(recep)})",
                 f"(receptacleType {pddl_id(recep)} {type_id(recep)})"]
        init += [f"(openable {pddl_id(recep)})"] if openable else []
    for obj, recep in scene.objects.items():
        init += [f"(objectType {pddl_id(obj)} {type_id(obj)})", f"(inReceptacle {pddl_id(obj)} {pddl_id(recep)})",
                 f"(objectAtLocation {pddl_id(obj)} loc_{pddl_id(recep)})"]
        init += [f"(toggleable {pddl_id(obj)})"] if obj == "desklamp 1" else \
            [f"(pickupable {pddl_id(obj)})", f"(moveable {pddl_id(obj)})", f"(cleanable {pddl_id(obj)})",
             f"(heatable {pddl_id(obj)})", f"(coolable {pddl_id(obj)})"]
    init += [f"(canContain {rt} {ot})" for rt in rtypes for ot in types]
    return (f"(define (problem {name})\n(:domain alfred)\n(:objects\n  " + "\n  ".join(declared) + "\n)\n(:init\n  "
            + "\n  ".join(init) + f"\n)\n(:goal {goal_formula(scene)})\n(:metric minimize (total-cost))\n)\n")


def goal_formula(scene: Scene) -> str:
    """ALFWorld's goal for the task type, over object and receptacle types."""
    o, r = type_id(scene.targets[0]), type_id(scene.goal_recep)
    if scene.kind == "look_at_obj_in_light":
        return ("(exists (?a - agent ?l - location ?lamp - object ?o - object) (and (objectType ?lamp desklamptype) "
                f"(isToggled ?lamp) (objectAtLocation ?lamp ?l) (atLocation ?a ?l) (objectType ?o {o}) (holds ?a ?o)))")
    if scene.kind == "pick_two_obj_and_place":
        return ("(exists (?r - receptacle ?o1 - object ?o2 - object) (and (receptacleType ?r " + r + ") "
                f"(objectType ?o1 {o}) (objectType ?o2 {o}) (inReceptacle ?o1 ?r) (inReceptacle ?o2 ?r) "
                "(not (= ?o1 ?o2))))")
    state = KINDS[scene.kind][2]
    treated = f" ({state} ?o)" if state else ""
    return (f"(exists (?r - receptacle ?o - object) (and (receptacleType ?r {r}) (objectType ?o {o}) "
            f"(inReceptacle ?o ?r){treated}))")


# -- the engine -----------------------------------------------------------------------------


def missing(configured_logic: str | None = None) -> str | None:
    """What the generated scenes need here, as one line; None when they can run."""
    if importlib.util.find_spec("textworld") is None or importlib.util.find_spec("fast_downward") is None:
        return f"env.scenes=generated needs TextWorld's PDDL engine: {PDDL_INSTALL}"
    if logic_dir(configured_logic) is None:
        return ("env.scenes=generated needs ALFWorld's alfred.pddl and alfred.twl2: set env.logic_dir, "
                "$ALFWORLD_DATA/logic, pip install alfworld, or put shared/data beside the checkout")
    return None


def logic_dir(configured: str | None) -> Path | None:
    """The first folder holding both logic files, from the places the module docstring names."""
    candidates = [configured, engine.data_root() / "logic"]
    spec = importlib.util.find_spec("alfworld")
    if spec and spec.submodule_search_locations:
        candidates.append(Path(list(spec.submodule_search_locations)[0]) / "data")
    candidates.append(default_tasks_file().parent / "raw")
    for folder in filter(None, candidates):
        if all((Path(folder).expanduser() / f).is_file() for f in LOGIC_FILES):
            return Path(folder).expanduser()
    return None


def start(gamefile: str) -> Any:
    """One generated game on the engine; objects are named as the scene names them."""
    import textworld

    class Names(textworld.core.Wrapper):
        def load(self, *args: Any, **kwargs: Any) -> None:
            super().load(*args, **kwargs)
            for info in self._entity_infos.values():
                info.name = info.id.replace("_", " ")

    infos = textworld.EnvInfos(won=True, admissible_commands=True)
    return textworld.start(gamefile, request_infos=infos, wrappers=[Names])


@lru_cache(maxsize=8)
def split_tasks(settings_json: str, split: str) -> tuple[Task, ...]:
    settings = json.loads(settings_json)
    line = missing(settings.get("logic_dir"))
    if line:
        raise ConfigError(line)
    folder = logic_dir(settings.get("logic_dir"))
    logic = {f: (folder / f).read_text() for f in LOGIC_FILES}
    from talentrl_cli.progress import current

    kinds = list(TASK_TYPES.values())
    n = int(settings["n_scenes"].get(split, 0))
    display = current()
    bar = display.task(f"alfworld: {split} scenes", total=n, unit="scenes")
    tasks = []
    for i in range(n):
        tasks.append(_scene_task(settings, logic, split, kinds[i % len(kinds)], i))
        display.update(bar, completed=i + 1)
    display.finish(bar)
    return tuple(tasks)


def _scene_task(settings: dict, logic: dict[str, str], split: str, kind: str, i: int) -> Task:
    scene_seed = int(hashlib.sha256(f"{settings['seed']}:{split}:{kind}:{i}".encode()).hexdigest()[:8], 16)
    scene = make_scene(kind, random.Random(scene_seed))
    data = {"pddl_domain": logic["alfred.pddl"], "pddl_problem": problem(scene, f"scene_{scene_seed}"),
            "grammar": logic["alfred.twl2"].replace("UNKNOWN GOAL", scene.goal.rstrip(".")),
            "walkthrough": script(scene), "solvable": True}
    gamefile = _cached_game(cache_folder(settings.get("cache_dir"), "alfworld") / "generated", data)
    room, goal = _checked_opening(gamefile, tuple(data["walkthrough"]))
    return Task(id=f"alfworld-gen-{settings['seed']}-{split}-{i:03d}", question=goal, env="alfworld",
                strategy=kind, plan=data["walkthrough"],
                meta={"gamefile": gamefile, "scenes": "generated", "scene_seed": scene_seed,
                      "initial_observation": room})


def _cached_game(folder: Path, data: dict[str, Any]) -> str:
    """The game file, named by its content's hash and written by rename (a killed run leaves none)."""
    text = json.dumps(data, sort_keys=True)
    path = folder / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.tw-pddl"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".tmp")
        partial.write_text(text)
        partial.replace(path)
    return str(path)


@lru_cache(maxsize=512)
def _checked_opening(gamefile: str, walkthrough: tuple[str, ...]) -> tuple[str, str]:
    """(room, goal) from the first turn, after playing the script to a win on the engine."""
    sidecar = Path(gamefile).with_suffix(".opening.json")
    if sidecar.exists():
        room, goal = json.loads(sidecar.read_text())
        return room, goal
    game = start(gamefile)
    try:
        state = game.reset()
        room, goal = split_opening(state["feedback"])
        for command in walkthrough:
            if command not in (state.get("admissible_commands") or []):
                break
            state, _, _ = game.step(command)
        if not state.get("won"):
            raise DataError(f"generated scene {gamefile}: its script does not win ({list(walkthrough)})")
    finally:
        game.close()
    sidecar.write_text(json.dumps([room, goal]))
    return room, goal
