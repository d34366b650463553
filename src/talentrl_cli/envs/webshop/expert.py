"""The scripted WebShop expert: search the goal, open the target, choose its options, buy.

    talentrl mine source=webshop env=webshop source.noise=0.1

It is a policy of the page it is on, so it recovers from its own slips: on the search page it
searches the product type and the goal's attributes; on a results page it opens the target
(the goal's product, or the top result when the search missed it), else turns the page
towards it; on another item, or on a sub-page, it goes back (`< prev`); on the target it
clicks each option the goal asks for that is not yet selected, then Buy Now. At rate `noise`
a step is a slip instead: a search for the product type alone, or any other element of the
page (another product, a sub-page, the wrong option, even Buy Now on the wrong item).
Trajectories (`source=webshop`) are our own schema; success is reward == 1.
"""

from __future__ import annotations

import random
from typing import Any

from talentrl_cli.envs.webshop.catalogue import NO_CEILING, Goal
from talentrl_cli.schema import Step, Task, Trajectory


def search_words(goal: Goal) -> str:
    """The product type and the goal's attribute phrases, each once."""
    return " ".join(dict.fromkeys([goal.query, *goal.attributes]))


def expert_step(env: Any, goal: Goal) -> tuple[str, str]:
    """(thought, action) of the noise-free expert on the env's current page."""
    view = env.view
    if view.kind == "search":
        wanted = [a for a in goal.attributes if a != goal.query]
        thought = f"I need {goal.query}" + (f" with {', '.join(wanted)}" if wanted else "") + "; I search for it."
        return thought, f"search[{search_words(goal)}]"
    target = goal.asin if goal.asin in env.results else (env.results[0] if env.results else None)
    if view.kind == "results":
        return _on_results(env, goal, target)
    if view.kind != "item" or view.asin != target:
        return "This is not the page to buy from; I go back.", "click[< prev]"
    wanted = dict(goal.options)
    for name, values in env.products[target].options.items():
        value = wanted.get(name)
        if value in values and env.selected.get(name) != value:
            return f"The goal asks for {name} {value}; I select it.", f"click[{value}]"
    return "The item and its options match the goal; I buy it.", "click[buy now]"


def _on_results(env: Any, goal: Goal, target: str | None) -> tuple[str, str]:
    size, page = env.settings.page_size, env.view.page
    if target is None:
        return "Nothing matched; I search again.", "click[back to search]"
    where = env.results.index(target) // size + 1
    if where == page:
        price = "" if goal.price_upper >= NO_CEILING else f" under {goal.price_upper:.2f} dollars"
        return f"{target} is the {goal.query} asked for{price}; I open it.", f"click[{target}]"
    if where > page:
        return "The product that fits is not on this page; I look at the next one.", "click[next >]"
    return "The product that fits was on an earlier page; I go back.", "click[< prev]"


def slip(env: Any, goal: Goal, action: str, rng: random.Random) -> tuple[str, str] | None:
    """A plausible mistake instead of `action`, or None when the page offers no other move."""
    if env.view.kind == "search":
        return (f"I search for {goal.query}.", f"search[{goal.query}]") if goal.attributes else None
    others = [c for c in env.clickables() if f"click[{c}]" != action]
    if not others:
        return None
    pick = rng.choice(others)
    return f"Let me try {pick}.", f"click[{pick}]"


def run_expert(env: Any, task: Task, noise: float, rng: random.Random | None = None) -> tuple[list[Step], dict]:
    """The expert's steps on `task` in a fresh fork of `env`, and the last step's info."""
    from talentrl_cli.envs.webshop.env import goal_of

    rng = rng or random.Random(f"webshop-expert-{env.settings.seed}-{task.id}-{noise}")
    episode, goal = env.fork(), goal_of(task)
    episode.reset(task)
    steps, info = [], {}
    while not episode.done:
        thought, action = expert_step(episode, goal)
        if noise and rng.random() < noise:
            thought, action = slip(episode, goal, action, rng) or (thought, action)
        observation, _, _, info = episode.step(action)
        steps.append(Step(thought=thought, action=action, observation=observation))
    return steps, info


def expert_trajectory(env: Any, task: Task, noise: float, rng: random.Random | None = None) -> Trajectory:
    steps, info = run_expert(env, task, noise, rng)
    reward = float(info.get("reward", 0.0))
    return Trajectory(id=f"{task.id}-expert", task=task, steps=steps, success=reward >= 1.0,
                      final_answer=info.get("answer"), reward=reward, source="webshop",
                      meta={"expert": True, "noise": noise})


def generate_trajectories(cfg: Any, split: str = "train", n: int | None = None,
                          noise: float | None = None, seed: int = 0) -> list[Trajectory]:
    """Expert trajectories on the first `n` tasks of `split` (all when n is None); past the
    end of the split, tasks repeat with fresh random streams (ids get a `-r<k>` suffix)."""
    from talentrl_cli.envs.webshop.env import WebShopEnv

    env = WebShopEnv(cfg, seed)
    noise = env.settings.noise if noise is None else float(noise)
    tasks = env.tasks(split)
    count = len(tasks) if n is None else int(n)
    out = []
    for i in range(count if tasks else 0):
        task, rep = tasks[i % len(tasks)], i // len(tasks)
        rng = random.Random(f"webshop-expert-{env.settings.seed}-{task.id}-{noise}-{rep}")
        trajectory = expert_trajectory(env, task, noise, rng)
        if rep:
            trajectory.id = f"{trajectory.id}-r{rep}"
        out.append(trajectory)
    return out
