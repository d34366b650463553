"""env=webshop: WebShop's reward on REWARD.md's worked examples (exact numbers), the page text
against WebShop's own HTML fixtures, search pagination and page navigation, the expert at
noise 0, determinism from the seed, fork independence, and `talentrl mine source=webshop`.
Everything that needs shared/data/webshop or bm25s/rapidfuzz skips cleanly without them."""

from __future__ import annotations

import random
import re

import pytest

from talentrl_cli.envs.base import EPISODE_OVER
from talentrl_cli.envs.webshop import pages
from talentrl_cli.envs.webshop.catalogue import NO_CEILING, Goal, Product, parse_query, price_upper
from talentrl_cli.errors import ConfigError

TEA_TREE = ("tea tree", "essential oils", "natural ingredients")
SHOE = "PMUYBHF Womens Fashion Flat Shoes Comfortable Running Shoes Sneakers Tennis Athletic Shoe Casual Walking Shoes"


def product(**fields) -> Product:
    base = {"asin": "B000TEST01", "title": "", "query": "scrubs & body treatments", "category": "",
            "price": 10.99, "options": {}, "attributes": (), "bullets": (), "description": ""}
    return Product(**{**base, **fields})


def goal(**fields) -> Goal:
    base = {"id": "g", "kind": "synthetic", "asin": "B000TEST01", "instruction": "", "query": "scrubs & body treatments",
            "name": "Tea Tree Body Scrub", "category": "", "attributes": TEA_TREE, "options": (), "price_upper": 20.0}
    return Goal(**{**base, **fields})


# -- the reward: REWARD.md's worked examples ------------------------------------------------------


@pytest.fixture
def reward():
    pytest.importorskip("rapidfuzz", reason="needs rapidfuzz: pip install 'talentrl[envs]'")
    from talentrl_cli.envs.webshop import reward

    return reward


def test_fuzzy_attributes_match_3_of_3(reward):
    """'essential oil' vs 'essential oils' passes the fuzzy threshold."""
    item = product(attributes=("tea tree", "essential oil", "natural ingredients"))
    assert reward.attribute_matches(TEA_TREE, item) == 3


def test_missing_attribute_matches_2_of_3(reward):
    item = product(attributes=("essential oil", "natural ingredients"))
    assert reward.attribute_matches(TEA_TREE, item) == 2


def test_substring_fallback_matches_2_of_3(reward):
    item = product(bullets=("Made with essential oils",), description="only natural ingredients inside")
    assert reward.attribute_matches(TEA_TREE, item) == 2


@pytest.mark.parametrize(("other", "match"), [("b › c › a", True), ("a › d › b", True), ("a › a › d", False)])
def test_breadcrumbs_need_two_shared_pieces(reward, other, match):
    assert reward.category_match("a › b › c", other) is match


@pytest.mark.parametrize(("query", "category", "title", "factor"), [
    (True, False, 1.0, 1.0), (False, False, 0.3, 1.0), (False, True, 0.15, 1.0), (False, False, 0.15, 0.5),
    (True, True, 0.05, 0.1), (True, True, 0.0, 0.0),  # a zero title overlap gives 0 even on a query match
])
def test_type_factor_rules_override_in_order(reward, query, category, title, factor):
    assert reward.type_factor(query, category, title) == factor


def test_title_score_is_shared_nouns_over_the_goal_names(reward):
    assert reward.title_score("Tea Tree Body Scrub", "Tree Scrub for the Body") == 0.75
    assert reward.title_score("the and of", "anything") == 0.2  # no nouns in the goal name


@pytest.mark.parametrize(("bought", "chosen", "expected"), [
    ({}, ["navy"], 1.0),                                             # (3 + 2 + 1) / 6: "navy blue" -> navy
    ({}, [], 5 / 6),                                                 # the colour missed
    ({"price": 25.0}, ["navy"], 5 / 6),                              # over the $20 ceiling
    ({"attributes": ("tea tree", "natural ingredients")}, [], 4 / 6),  # (2 + 1 + 1) / 6
    ({"title": "Stainless Steel Hinge"}, ["navy"], 0.0),             # no noun shared: r_type 0
])
def test_total_reward_is_type_times_matched_share(reward, bought, chosen, expected):
    wanted = goal(options=(("color", "navy blue"), ("size", "large")))
    item = product(**{"title": "Tea Tree Body Scrub", "attributes": TEA_TREE, **bought})
    assert reward.purchase_reward(wanted, item, [*chosen, "large"])["reward"] == expected


def test_reward_parts_and_no_purchase(reward):
    scores = reward.purchase_reward(goal(), product(title="Tea Tree Body Scrub", attributes=TEA_TREE), [])
    assert scores == {"reward": 1.0, "r_type": 1.0, "r_price": 1.0, "r_att": 1.0}
    assert reward.purchase_reward(goal(), None, [])["reward"] == 0.0


def test_colours_normalise_to_the_first_listed_colour_inside(reward):
    assert reward.normalize_colour("dark navy blue stripes") == "navy blue"
    assert reward.normalize_colour("16 fl oz") == "16 fl oz"
    assert reward.option_matches(["Rose Gold"], ["rose gold glitter"]) == 1


def test_price_ceiling_follows_webshops_rule():
    """Of 20, 30, 40, 50 (above $10.99) the larger of two drawn: 30, 40 or 50, all reachable."""
    drawn = {price_upper(10.99, random.Random(i)) for i in range(200)}
    assert drawn == {30.0, 40.0, 50.0}
    assert price_upper(985.0, random.Random(0)) == NO_CEILING  # only 990 is above


@pytest.mark.parametrize(("instruction", "attributes", "query"), [
    ("Find me easy carry, high quality refillable containers with rose gold",
     ["easy carry", "high quality", "rose gold"], "refillable containers"),
    ("Find me scrubs & body treatments with tea tree, natural ingredients", ["tea tree", "natural ingredients"],
     "scrubs & body treatments"),
    ("Find me eco friendly cotton balls & swabs for sensitive skin", ["eco friendly", "sensitive skin"],
     "cotton balls & swabs"),
])
def test_the_product_type_is_cut_out_of_the_instruction(instruction, attributes, query):
    assert parse_query(instruction, attributes) == query


# -- pages against WebShop's own HTML ---------------------------------------------------------------


@pytest.fixture(scope="module")
def raw(shared_data):
    return shared_data / "webshop" / "raw"


def _shape(line: str) -> str:
    """A page line's kind: a product id, a price, a control or option row, or text."""
    if re.fullmatch(r"\[B[0-9A-Z]{9}\]", line):
        return "id"
    if line.startswith("$"):
        return "price"
    return line if line.startswith("[") or line.startswith("Page ") else "text"


def test_the_item_page_reads_as_webshops(raw):
    fixture = pages.html_to_text((raw / "webshop_mock_parse_item_page_ws.html").read_text())
    item = product(title=SHOE, price=100.0, options={"color": ("black", "purple", "red"),
                                                      "size": ("6.5", "7.5", "8", "8.5", "9")})
    assert pages.item_page(item) == fixture.replace("Price: $100.0\n", "Price: $100.00\n")
    assert fixture.splitlines()[2] == "color [black][purple][red]"


def test_the_results_page_has_webshops_fields_in_order(raw):
    fixture = pages.html_to_text((raw / "webshop_mock_parse_results_ws.html").read_text()).splitlines()
    assert fixture[:4] == ["[Back to Search]", "Page 1 (Total results: 50)", "[Next >]", "[B09GKFNQWT]"]
    assert fixture[5] == "$24.49 to $39.99" and "Men's Basketball Shoes" in fixture[4]
    ours = pages.results_page(1, 50, [product(asin=f"B00000000{i}", title=f"Shoe {i}") for i in range(10)], True)
    assert [_shape(x) for x in ours.splitlines()] == [_shape(x) for x in fixture]


@pytest.mark.parametrize(("name", "which"), [("desc", "description"), ("feat", "features")])
def test_the_sub_pages_have_webshops_controls(raw, name, which):
    fixture = pages.html_to_text((raw / f"webshop_mock_parse_item_page_ws_{name}.html").read_text()).splitlines()
    ours = pages.detail_page(product(description="d", bullets=("one", "two")), which).splitlines()
    assert fixture[:2] == ours[:2] == ["[Back to Search]", "[< Prev]"]
    control = re.compile(r"\[[^\]]*\]")
    assert len(fixture) > 2 and not any(control.fullmatch(line) for line in fixture[2:] + ours[2:])


# -- the environment on the shipped data ----------------------------------------------------------


@pytest.fixture(scope="module")
def env(shared_data):
    from talentrl_cli.envs import make_env
    from talentrl_cli.envs.webshop import WebShopEnv

    for module in ("bm25s", "rapidfuzz"):
        pytest.importorskip(module, reason=f"needs {module}: pip install 'talentrl[envs]'")
    assert WebShopEnv.availability() is None or "shared/data" in WebShopEnv.availability()
    return make_env("webshop", {"data_dir": str(shared_data / "webshop")}, seed=0)


def _task(env, strategy: str, split: str = "train"):
    return next(t for t in env.tasks(split) if t.strategy == strategy)


def test_goals_map_to_the_catalogue_and_split_by_product(env):
    splits = {s: env.tasks(s) for s in ("train", "dev", "test")}
    asins = {s: {t.answers[0] for t in tasks} for s, tasks in splits.items()}
    assert not (asins["train"] & asins["dev"]) and not (asins["train"] & asins["test"]) and not (asins["dev"] & asins["test"])
    every = [t for tasks in splits.values() for t in tasks]
    assert len(env.products) == 1000 and all(t.answers[0] in env.products for t in every)
    kinds = {t.meta["goal"]["kind"] for t in every}
    assert kinds == {"synthetic", "human"} and sum(t.meta["goal"]["kind"] == "synthetic" for t in every) == 415
    assert {t.strategy for t in every} == {"choose_options", "scan_results", "direct_buy"}


def test_same_seed_same_tasks_other_seed_other_splits(env, shared_data):
    from talentrl_cli.envs import make_env

    settings = {"data_dir": str(shared_data / "webshop"), "goals": ["synthetic"]}
    a, b, c = (make_env("webshop", settings, seed=s) for s in (5, 5, 6))
    assert [(t.id, t.question, t.plan) for t in a.tasks("dev")] == [(t.id, t.question, t.plan) for t in b.tasks("dev")]
    assert {t.answers[0] for t in a.tasks("dev")} != {t.answers[0] for t in c.tasks("dev")}
    task = a.tasks("dev")[0]
    assert a.expert_trajectory(task, noise=0.4).model_dump() == b.expert_trajectory(task, noise=0.4).model_dump()


def test_search_pages_through_results_and_back(env):
    task = env.tasks("train")[0]
    env.reset(task)
    first, _, _, info = env.step("search[shoes women]")
    assert info["valid"] and first.startswith("[Back to Search]\nPage 1 (Total results: 50)\n[Next >]\n[B")
    second, _, _, _ = env.step("Action: click[Next >]")
    assert second.startswith("[Back to Search]\nPage 2 (Total results: 50)\n[< Prev]\n[Next >]\n[B")
    assert set(re.findall(r"\[(B\w{9})\]", first)).isdisjoint(re.findall(r"\[(B\w{9})\]", second))
    for _ in range(3):
        last, _, _, _ = env.step("click[next >]")
    assert last.startswith("[Back to Search]\nPage 5 (Total results: 50)\n[< Prev]\n[B")
    assert env.step("click[next >]")[3]["valid"] is False  # no page 6
    for _ in range(4):
        back, _, _, _ = env.step("click[< prev]")
    assert back == first and env.step("click[< prev]")[3]["valid"] is False


def test_item_page_sub_pages_options_and_back_to_search(env):
    task = _task(env, "choose_options")
    env.reset(task)
    env.step(task.plan[0])
    asin = task.answers[0]
    item, _, _, _ = env.step(f"click[{asin.lower()}]")
    assert item.startswith("[Back to Search]\n[< Prev]\n") and item.endswith("[Reviews]\n[Buy Now]")
    assert env.step("click[description]")[0].startswith("[Back to Search]\n[< Prev]\n")
    assert env.step("click[< prev]")[0] == item
    name, value = task.meta["goal"]["options"][0]
    assert env.step(f"click[{value}]")[0] == f"You have clicked {value}." and env.selected == {name: value}
    assert env.step("search[anything]")[3]["valid"] is False  # search lives on the search page only
    assert env.step("click[< prev]")[0].startswith("[Back to Search]\nPage ")
    assert env.step("click[back to search]")[0].endswith("\n[Search]")
    assert env.step("think[what next?]")[0] == "OK."


def test_buying_without_the_options_loses_their_share(env):
    task = _task(env, "choose_options")
    env.reset(task)
    for action in task.plan:
        if not action.startswith("click[buy") and action.lower() not in {
                f"click[{v.lower()}]" for _, v in task.meta["goal"]["options"]}:
            env.step(action)
    _, reward, done, info = env.step("click[buy now]")
    n_attr, n_opt = len(task.meta["goal"]["attributes"]), len(task.meta["goal"]["options"])
    assert done and reward == (n_attr + 1) / (n_attr + n_opt + 1)
    assert info["answer"] == task.answers[0]
    assert env.score(task, info["answer"])["reward"] == reward


def test_score_needs_no_episode(env):
    task = _task(env, "direct_buy")
    assert env.score(task, task.answers[0])["reward"] == 1.0
    assert env.score(task, None)["reward"] == 0.0 and env.score(task, "B000NOTHERE")["reward"] == 0.0


def test_junk_costs_steps_until_the_limit(env):
    task = env.tasks("dev")[0]
    env.reset(task)
    for _ in range(env.settings.max_steps):
        observation, reward, done, info = env.step("Action: ☃ buy everything")
    assert done and reward == 0.0 and info["truncated"] and "Step limit reached" in observation
    assert env.step("search[x]") == (EPISODE_OVER, 0.0, True, {"valid": False})


def test_the_noise_free_expert_buys_the_target(env):
    """Measured: all 660 goals (415 synthetic, 245 human; all splits, seed 0) reach reward 1 at
    noise 0; at noise 0.1 99.1 % do, at noise 0.2 95.8 % (mean reward 0.980)."""
    tasks = [t for s in ("train", "dev", "test") for t in env.tasks(s)]
    trajectories = [env.expert_trajectory(t, noise=0.0) for t in tasks]
    wins = sum(t.success for t in trajectories)
    assert wins / len(tasks) >= 0.95, f"{wins}/{len(tasks)}"
    assert all([s.action for s in t.steps] == t.task.plan for t in trajectories)
    assert all(t.reward == 1.0 for t in trajectories if t.success)


def test_a_noisy_expert_slips_and_recovers(env):
    tasks = env.tasks("train")[:40]
    noisy = [env.expert_trajectory(t, noise=0.3) for t in tasks]
    assert any([s.action for s in t.steps] != t.task.plan for t in noisy)
    assert all(0.0 <= t.reward <= 1.0 for t in noisy) and 0 < sum(t.success for t in noisy) < len(tasks)


def test_forks_do_not_share_episode_state(env):
    task = env.tasks("train")[0]
    left, right = env.fork(), env.fork()
    left.reset(task)
    right.reset(task)
    first = left.step(task.plan[0])[0]
    left.step(task.plan[1])
    assert right.step(task.plan[0])[0] == first and right.view.kind == "results" and left.view.kind == "item"


def test_mine_source_generates_expert_trajectories(env, shared_data, monkeypatch):
    from talentrl_cli.config import compose
    from talentrl_cli.jsonl import ReadStats
    from talentrl_cli.mining.sources import gold_labels, load_source

    monkeypatch.setenv("TALENTRL_DATA", str(shared_data))
    cfg = compose(["env=webshop", "source=webshop", "source.n=4", "source.noise=0.0"])
    trajectories = load_source(cfg.source, "fail", ReadStats(), seed=0)
    assert len(trajectories) == 4 and all(t.source == "webshop" and t.success for t in trajectories)
    assert set(gold_labels(trajectories, cfg.source)) <= {"paginate", "choose_options", "scan_results", "direct_buy"}


def test_trajectories_round_trip_through_jsonl_and_still_score(env, tmp_path):
    from talentrl_cli.jsonl import write_jsonl
    from talentrl_cli.trajectories import load_trajectories

    written = [env.expert_trajectory(t, noise=0.5) for t in env.tasks("dev")[:6]]
    write_jsonl(tmp_path / "webshop.jsonl", written)
    read = list(load_trajectories("webshop", [tmp_path / "webshop.jsonl"]))
    assert [t.model_dump() for t in read] == [json_like(t) for t in written]
    assert [env.score(t.task, t.final_answer)["reward"] for t in read] == [t.reward for t in written]


def json_like(trajectory) -> dict:
    import json

    return json.loads(trajectory.model_dump_json())


def test_envs_list_and_sample(run_cli, shared_data, monkeypatch, env):
    monkeypatch.setenv("TALENTRL_DATA", str(shared_data))
    code, out, err = run_cli("envs", "list")
    assert code == 0 and re.search(r"webshop\s*[│|]\s*ready", out), out
    code, out, err = run_cli("envs", "sample", "webshop", "-n", "1", "env.noise=1.0")
    assert code == 0, err
    assert re.findall(r"^success: (\w+)", out, flags=re.M) == ["True"] and "Action 1: search" in out


# -- without the data ----------------------------------------------------------------------------


def test_without_data_availability_says_what_and_how(tmp_path, monkeypatch):
    from talentrl_cli.envs.webshop import WebShopEnv

    monkeypatch.setenv("TALENTRL_DATA", str(tmp_path))
    message = WebShopEnv.availability()
    assert message.startswith("needs ") and "\n" not in message
    if "raw/" in message:
        assert "TALENTRL_DATA" in message
        with pytest.raises(ConfigError, match="not found under"):
            WebShopEnv({}, seed=0)


def test_bad_settings_name_the_key(tmp_path):
    from talentrl_cli.envs.webshop import WebShopEnv

    with pytest.raises(ConfigError, match="env.goals"):
        WebShopEnv({"goals": ["robots"]})
    with pytest.raises(ConfigError, match="env.gaols"):
        WebShopEnv({"gaols": []})
