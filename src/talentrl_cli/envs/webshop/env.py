"""`env=webshop`: a text WebShop over the 1,000 shipped products, with WebShop's reward.

    talentrl envs sample webshop -n 2
    talentrl mine source=webshop env=webshop
    talentrl pipeline webshop
    talentrl eval env=webshop env.goals=[human] env.page_size=5

An episode starts on the search page with the buyer's instruction. Actions, as ReAct's
WebShop prompt writes them: `search[red shoes]` (on the search page only, as in WebShop),
then `click[...]` on anything bracketed on the current page: a product id on a results
page, `click[next >]` / `click[< prev]` between result pages (and `< prev` back from an item
to its results, or from a sub-page to its item), an option value as listed (`click[large]`,
or with its group's name, `click[size 9]`), `click[description]` / `click[features]` /
`click[reviews]`, `click[back to search]` and `click[buy now]`; `think[...]` is answered
"OK.". Names are matched case-insensitively. An action that is not on the page costs a step
and lists what is. `search` ranks products with BM25 (bm25s) over title, product type,
attributes and features, keeping `max_results` (WebShop: 50) shown `page_size` a page.

Buy Now ends the episode with WebShop's reward (`reward.py`); the answer is the purchase,
`ASIN | name: value | ...`, so `score(task, answer)` needs no episode. Score is 100 x mean
reward, success reward == 1; `max_steps` actions without a purchase end with reward 0.
Tasks are the goals of `catalogue.py` (synthetic and human), split train/dev/test by target
product from the seed. A task's plan is the noise-free expert's actions (`expert.py`), its
gold strategy `paginate` (the target is not on the first results page), `choose_options`
(the goal asks for options), `scan_results` (the target is on the page but not on top) or
`direct_buy` (buy the top result). On the shipped catalogue the expert's search puts every
target in its top 5 (seed 0: 294 direct_buy, 327 choose_options, 39 scan_results of 660), so
`paginate` appears only with a weaker search, e.g. a model's own.

Needs `bm25s` and `rapidfuzz` (`pip install 'talentrl[envs]'`) and shared/data/webshop;
`talentrl envs list` says which is missing.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from talentrl_cli.envs.base import ENVS, EPISODE_OVER, Environment
from talentrl_cli.envs.search import parse_action
from talentrl_cli.envs.settings import settings_from_cfg
from talentrl_cli.envs.webshop import pages
from talentrl_cli.envs.webshop.catalogue import (
    Goal,
    Product,
    default_data_dir,
    load_catalogue,
    load_goals,
    missing_files,
    split_goals,
)
from talentrl_cli.envs.webshop.reward import purchase_reward
from talentrl_cli.errors import ConfigError
from talentrl_cli.schema import Task

SPLITS = ("train", "dev", "test")
GOAL_KINDS = ("synthetic", "human")
INSTALL = "pip install 'talentrl[envs]' (bm25s, rapidfuzz)"
DATA_HINT = "put shared/data beside the checkout, set TALENTRL_DATA=/path/to/data or env.data_dir=DIR"


@dataclass
class WebShopSettings:
    """The `env:` section for `webshop` (conf/env/webshop.yaml); unknown keys fail."""

    name: str = "webshop"
    seed: int | None = None
    data_dir: str | None = None
    goals: list[str] = field(default_factory=lambda: list(GOAL_KINDS))
    split_fractions: dict[str, float] = field(default_factory=lambda: {"train": 0.8, "dev": 0.1, "test": 0.1})
    limit: int | None = None
    max_steps: int = 15
    page_size: int = 10
    max_results: int = 50
    noise: float = 0.2

    def validate(self) -> None:
        if not self.goals or set(self.goals) - set(GOAL_KINDS):
            raise ConfigError(f"env.goals must be a non-empty subset of {list(GOAL_KINDS)}, got {self.goals}")
        weights = self.split_fractions
        if set(weights) != set(SPLITS) or min(weights.values()) < 0 or sum(weights.values()) <= 0:
            raise ConfigError(f"env.split_fractions needs non-negative weights for {', '.join(SPLITS)}, got {weights}")
        if min(self.max_steps, self.page_size, self.max_results) < 1 or not 0.0 <= float(self.noise) <= 1.0:
            raise ConfigError("env.max_steps, env.page_size and env.max_results must be >= 1 and env.noise in [0, 1]")

    def data(self) -> Path:
        return Path(self.data_dir).expanduser() if self.data_dir else default_data_dir()


@dataclass
class View:
    """The page an episode is on: search, results (of `page`), item or one of its sub-pages."""

    kind: str = "search"
    page: int = 1
    asin: str = ""


@ENVS.register("webshop")
class WebShopEnv(Environment):
    """WebShop over its 1,000 products: search, result pages, item pages with options, Buy Now."""

    name = "webshop"

    @classmethod
    def availability(cls) -> str | None:
        import importlib.util

        absent = [m for m in ("bm25s", "rapidfuzz") if importlib.util.find_spec(m) is None]
        if absent:
            return f"needs {', '.join(absent)}: {INSTALL}"
        missing = missing_files(default_data_dir())
        return f"needs {missing[0]} under {default_data_dir()}: {DATA_HINT}" if missing else None

    def __init__(self, cfg: Any = None, seed: int = 0):
        super().__init__(cfg, seed)
        self.settings = settings_from_cfg(WebShopSettings, cfg, "webshop")
        self.settings.seed = int(seed if self.settings.seed is None else self.settings.seed)
        self.settings.validate()
        missing = missing_files(self.settings.data())
        if missing:
            raise ConfigError(f"env=webshop: {missing[0]} not found under {self.settings.data()}", DATA_HINT)
        self.data_dir = str(self.settings.data().resolve())
        self.products = {p.asin: p for p in load_catalogue(self.data_dir)}
        self.task: Task | None = None
        self.goal: Goal | None = None
        self.view, self.results, self.selected = View(), [], {}
        self.steps, self.done = 0, True

    # -- tasks ----------------------------------------------------------------------------

    def tasks(self, split: str) -> list[Task]:
        if split not in SPLITS:
            raise ConfigError(f"unknown split {split!r} for env=webshop", f"use one of {', '.join(SPLITS)}")
        return list(_split_tasks(json.dumps(asdict(self.settings), sort_keys=True), self.data_dir, split))

    def task_of(self, goal: Goal, split: str) -> Task:
        """A goal as a task (its plan and strategy come from the expert: `_split_tasks`)."""
        return Task(id=f"webshop-{self.settings.seed}-{split}-{goal.id}", question=goal.instruction,
                    answers=[goal.asin], env="webshop",
                    meta={"goal": asdict(goal), "initial_observation": "[Search]"})

    # -- episodes -------------------------------------------------------------------------

    def reset(self, task: Task) -> str:
        self.task, self.goal = task, goal_of(task)
        self.view, self.results, self.selected = View(), [], {}
        self.steps, self.done = 0, False
        return pages.search_page(self.goal.instruction)

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        if self.task is None or self.done:
            return EPISODE_OVER, 0.0, True, {"valid": False}
        self.steps += 1
        info: dict[str, Any] = {"valid": False, "steps": self.steps}
        observation = self._apply(action, info)
        if not self.done and self.steps >= self.settings.max_steps:
            self.done = True
            observation += f"\nStep limit reached ({self.settings.max_steps} actions); nothing was bought."
            info.update(self.score(self.task, None), truncated=True)
        return observation, float(info.get("reward", 0.0)), self.done, info

    def _apply(self, action: str, info: dict[str, Any]) -> str:
        parsed = parse_action(action)
        if parsed is None:
            return f"Could not parse an action in {str(action)[:80]!r}. {self.valid_actions()}"
        if parsed.tool == "think":
            info["valid"] = True
            return "OK."
        if parsed.tool == "search" and self.view.kind == "search" and parsed.arg:
            info["valid"] = True
            return self.search(parsed.arg)
        target = self.resolve(parsed.arg) if parsed.tool == "click" else None
        if target is not None:
            info["valid"] = True
            return self.click(target, info)
        return f"Invalid action {str(parsed)[:80]!r} on this page. {self.valid_actions()}"

    def search(self, words: str) -> str:
        self.results = product_search(self.data_dir).rank(words, self.settings.max_results)
        return self.show_results(1)

    def show_results(self, page: int) -> str:
        size = self.settings.page_size
        self.view = View("results", page)
        shown = [self.products[a] for a in self.results[(page - 1) * size: page * size]]
        return pages.results_page(page, len(self.results), shown, page * size < len(self.results))

    def click(self, target: str, info: dict[str, Any]) -> str:
        """Follow one bracketed element of the current page (`clickables`)."""
        view, product = self.view, self.products.get(self.view.asin)
        if target == pages.BACK.lower():
            self.view = View()
            return pages.search_page(self.goal.instruction)
        if view.kind == "results":
            if target in (pages.NEXT.lower(), pages.PREV.lower()):
                return self.show_results(view.page + (1 if target == pages.NEXT.lower() else -1))
            self.view, self.selected = View("item", view.page, target.upper()), {}
            return pages.item_page(self.products[target.upper()])
        if view.kind != "item":  # a sub-page: `< prev` is its only other element
            self.view = View("item", view.page, view.asin)
            return pages.item_page(product)
        if target == pages.PREV.lower():
            return self.show_results(view.page)
        if target in (d.lower() for d in pages.DETAILS):
            self.view = View(target, view.page, view.asin)
            return pages.detail_page(product, target)
        if target == pages.BUY.lower():
            return self.buy(product, info)
        name, value = option_of(product, target)
        self.selected[name] = value
        return f"You have clicked {value}."

    def buy(self, product: Product, info: dict[str, Any]) -> str:
        self.done = True
        answer = purchase_text(product.asin, self.selected)
        info.update(self.score(self.task, answer), answer=answer)
        return f"{pages.THANKS} You bought {product.asin}. Reward: {info['reward']:g}"

    def clickables(self) -> list[str]:
        """The bracketed elements of the current page, lower-cased."""
        view, size = self.view, self.settings.page_size
        back = [pages.BACK.lower()]
        if view.kind == "search":
            return []
        if view.kind == "results":
            more = [pages.NEXT.lower()] * (view.page * size < len(self.results))
            return back + [pages.PREV.lower()] * (view.page > 1) + more + [
                a.lower() for a in self.results[(view.page - 1) * size: view.page * size]]
        if view.kind != "item":
            return back + [pages.PREV.lower()]
        values = [v.lower() for vs in self.products[view.asin].options.values() for v in vs]
        return back + [pages.PREV.lower()] + values + [d.lower() for d in pages.DETAILS] + [pages.BUY.lower()]

    def resolve(self, arg: str) -> str | None:
        """The page element `click[arg]` names (case-insensitive; an option also as
        `name value`, e.g. `size 9`), or None when it is not on the page."""
        target, here = " ".join(arg.lower().split()), self.clickables()
        if target in here or self.view.kind != "item":
            return target if target in here else None
        named = {f"{name} {v}".lower(): v.lower() for name, vs in self.products[self.view.asin].options.items()
                 for v in vs}
        return named.get(target)

    def valid_actions(self) -> str:
        if self.view.kind == "search":
            return "Valid actions: search[words], think[note]."
        return "Valid actions: " + ", ".join(f"click[{c}]" for c in self.clickables()) + ", think[note]."

    def describe_tools(self) -> str:
        # one line: it is in every execution prompt
        return ("search[words] on the search page; click[x] on any bracketed [x] of a page (a product id, an "
                "option value, next >, < prev, description, features, back to search, buy now); think[note].")

    def score(self, task: Task, answer: str | None) -> dict[str, float]:
        goal = goal_of(task)
        if answer is None:
            return purchase_reward(goal, None, [])
        asin, chosen = parse_purchase(answer)
        return purchase_reward(goal, self.products.get(asin), chosen.values())

    def expert_trajectory(self, task: Task, noise: float | None = None, rng: Any = None) -> Any:
        """The scripted expert's episode (`expert.run_expert`)."""
        from talentrl_cli.envs.webshop.expert import expert_trajectory

        return expert_trajectory(self, task, self.settings.noise if noise is None else float(noise), rng)


# -- helpers -----------------------------------------------------------------------------------


def goal_of(task: Task) -> Goal:
    """The goal a task carries in `meta["goal"]` (JSON turns its tuples into lists)."""
    raw = dict(task.meta["goal"])
    raw["attributes"] = tuple(raw["attributes"])
    raw["options"] = tuple(tuple(pair) for pair in raw["options"])
    return Goal(**raw)


def option_of(product: Product, value: str) -> tuple[str, str]:
    """(group name, value as listed) of a lower-cased option value on `product`."""
    return next((name, v) for name, values in product.options.items() for v in values if v.lower() == value)


def purchase_text(asin: str, selected: dict[str, str]) -> str:
    return asin + "".join(f" | {name}: {value}" for name, value in selected.items())


def parse_purchase(answer: str) -> tuple[str, dict[str, str]]:
    """`ASIN | name: value | ...` back into the ASIN and the chosen options."""
    asin, *pairs = [part.strip() for part in str(answer).split(" | ")]
    chosen = dict(pair.partition(": ")[::2] for pair in pairs if ": " in pair)
    return asin.upper(), chosen


class ProductSearch:
    """BM25 (bm25s) over each product's title, type, attributes and features; read-only, so
    every env instance on the same data shares one (`product_search`)."""

    def __init__(self, products: tuple[Product, ...]):
        import bm25s

        self.asins = [p.asin for p in products]
        texts = [" ".join([p.title, p.query, *p.attributes, *p.bullets]) for p in products]
        self.retriever = bm25s.BM25()
        self.retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)

    def rank(self, words: str, k: int) -> list[str]:
        """The ASINs of up to `k` products that share a word with `words`, best first."""
        import bm25s

        query = bm25s.tokenize([words], stopwords="en", return_ids=False, show_progress=False)
        known = [[t for t in query[0] if t in self.retriever.vocab_dict]]
        if not known[0]:
            return []
        ids, scores = self.retriever.retrieve(known, k=min(k, len(self.asins)), show_progress=False)
        return [self.asins[int(i)] for i, s in zip(ids[0], scores[0], strict=True) if s > 0]


@lru_cache(maxsize=4)
def product_search(data_dir: str) -> ProductSearch:
    return ProductSearch(load_catalogue(data_dir))


@lru_cache(maxsize=8)
def _split_tasks(settings_json: str, data_dir: str, split: str) -> tuple[Task, ...]:
    """A split's tasks, each with the noise-free expert's actions as plan and its strategy."""
    from talentrl_cli.envs.webshop.expert import run_expert, search_words

    settings = json.loads(settings_json)
    env = WebShopEnv({**settings, "data_dir": data_dir}, settings["seed"])
    goals = split_goals(load_goals(data_dir, env.settings.seed, tuple(env.settings.goals)),
                        env.settings.seed, env.settings.split_fractions)[split]
    limit = env.settings.limit
    tasks = []
    for goal in goals[: len(goals) if limit is None else int(limit)]:
        task = env.task_of(goal, split)
        plan = [step.action for step in run_expert(env, task, noise=0.0)[0]]
        ranked = product_search(data_dir).rank(search_words(goal), env.settings.max_results)
        tasks.append(task.model_copy(update={"plan": plan, "strategy": strategy_of(goal, plan, ranked)}))
    return tuple(tasks)


def strategy_of(goal: Goal, plan: list[str], ranked: list[str]) -> str:
    """What the episode takes beyond search and buy: turning result pages, choosing options,
    or reading past the top result (`scan_results`); `direct_buy` when the top one is it."""
    if "click[next >]" in plan:
        return "paginate"
    if goal.options:
        return "choose_options"
    return "direct_buy" if ranked[:1] == [goal.asin] else "scan_results"
