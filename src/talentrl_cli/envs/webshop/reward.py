"""WebShop's purchase reward, as shared/data/webshop/REWARD.md describes it.

    talentrl eval env=webshop inputs.model=none "eval.modes=[zero_shot]"

    reward = r_type * (attribute matches + option matches + price ok) / (A + O + 1)

Fuzzy matches use rapidfuzz's `token_set_ratio` with its default processing (lower case,
non-alphanumerics to spaces: what thefuzz, which WebShop uses, applies by default), above 85.
One departure, because spaCy's `en_core_web_sm` tagger is not shipped: the title score's
"nouns" are the title's content words (lower-case words that are not English stop words,
scikit-learn's list). On this rebuilt catalogue a title is a brand, the product type and
attribute phrases, nearly all nouns and noun modifiers, so little changes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from talentrl_cli.envs.webshop.catalogue import Goal, Product

THRESHOLD = 85.0
# colour words for option normalisation, compounds before the words they contain, because
# the first entry found inside an option value replaces it (REWARD.md, "Option matches")
COLOURS = ("rose gold", "navy blue", "sky blue", "light blue", "dark blue", "royal blue", "baby blue",
           "light grey", "dark grey", "light gray", "dark gray", "hot pink", "light pink", "wine red",
           "dark red", "army green", "olive green", "dark green", "light green", "off white",
           "multicolor", "black", "white", "navy", "grey", "gray", "silver", "gold", "red", "burgundy",
           "wine", "maroon", "pink", "rose", "purple", "violet", "lavender", "blue", "teal", "turquoise",
           "green", "olive", "mint", "yellow", "mustard", "orange", "coral", "peach", "beige", "khaki",
           "tan", "camel", "brown", "coffee", "chocolate", "ivory", "cream", "apricot", "clear",
           "transparent", "bronze", "copper", "champagne", "nude", "charcoal")


def _ratio(a: str, b: str) -> float:
    from rapidfuzz import fuzz, utils

    return fuzz.token_set_ratio(a, b, processor=utils.default_process)


def attribute_matches(goal_attributes: Sequence[str], product: Product) -> int:
    """Goal attributes found on the product: fuzzily among its attribute list, else as a
    substring of its lower-cased title, features or description; each counts once."""
    title, bullets = product.title.lower(), " ".join(product.bullets).lower()
    description = product.description.lower()
    found = 0
    for attr in goal_attributes:
        fuzzy = any(_ratio(attr, mine) > THRESHOLD for mine in product.attributes)
        found += fuzzy or any(attr in text for text in (title, bullets, description))
    return found


def normalize_colour(value: str) -> str:
    """The first colour word inside `value`, else `value` unchanged."""
    return next((colour for colour in COLOURS if colour in value), value)


def option_matches(goal_options: Iterable[str], chosen: Iterable[str]) -> int:
    """Goal options matched (fuzzily, after colour normalisation) by any chosen option."""
    picked = [normalize_colour(c.lower()) for c in chosen]
    return sum(any(_ratio(normalize_colour(g.lower()), c) > THRESHOLD for c in picked) for g in goal_options)


def category_match(goal_category: str, product_category: str) -> bool:
    """At least two breadcrumb pieces shared, as sets."""
    pieces = [{p.strip() for p in c.split("›") if p.strip()} for c in (goal_category, product_category)]
    return len(pieces[0] & pieces[1]) >= 2


def nouns(title: str) -> set[str]:
    """The title's content words: the stand-in for spaCy's nouns (module docstring)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return {w for w in re.findall(r"[a-z0-9]+(?:'[a-z]+)?", title.lower()) if w not in ENGLISH_STOP_WORDS}


def title_score(goal_name: str, product_name: str) -> float:
    """Shared nouns over the goal name's nouns; 0.2 when the goal name has none."""
    wanted = nouns(goal_name)
    return len(wanted & nouns(product_name)) / len(wanted) if wanted else 0.2


def type_factor(query_match: bool, category_ok: bool, title: float) -> float:
    """1, or 0.5 when neither query, category nor title (> 0.2) agrees; then 0.1 below a title
    score of 0.1 and 0 at none, the later rules overriding the earlier ones."""
    factor = 1.0 if query_match or category_ok or title > 0.2 else 0.5
    if title < 0.1:
        factor = 0.1
    if title == 0:
        factor = 0.0
    return factor


def purchase_reward(goal: Goal, product: Product | None, chosen: Iterable[str]) -> dict[str, float]:
    """The reward and its parts for buying `product` with the `chosen` option values."""
    n_attr, goal_options = len(goal.attributes), [value for _, value in goal.options]
    if product is None:
        return {"reward": 0.0, "r_type": 0.0, "r_att": 0.0, "r_price": 0.0}
    attrs = attribute_matches(goal.attributes, product)
    options = option_matches(goal_options, list(chosen))
    price_ok = float(product.price <= goal.price_upper)
    title = title_score(goal.name, product.title)
    r_type = type_factor(product.query == goal.query, category_match(goal.category, product.category), title)
    reward = r_type * (attrs + options + price_ok) / (n_attr + len(goal_options) + 1)
    scores = {"reward": reward, "r_type": r_type, "r_price": price_ok,
              "r_att": attrs / n_attr if n_attr else 1.0}
    if goal_options:
        scores["r_option"] = options / len(goal_options)
    return scores
