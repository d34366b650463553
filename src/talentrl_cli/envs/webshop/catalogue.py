"""The WebShop catalogue (1,000 products) and its goals, read from `shared/data/webshop`.

    talentrl envs sample webshop -n 2 env.goals=[synthetic]

What the shipped data holds, and what is rebuilt (shared/data SOURCES.md §4, webshop/REWARD.md):

- `raw/webshop_items_ins_v2_1000.json`: the 1,000 ASINs of WebShop's small catalogue with
  their attribute phrases; 415 carry a synthetic instruction ("Find me A, B TYPE with C")
  and its `instruction_attributes`. WebShop's product pages (`items_shuffle_1000.json`:
  titles, prices, options, bullets, descriptions) were not obtainable, so each product's page
  is *rebuilt* from its annotation, deterministically from its ASIN: the product type
  (`query`) is the TYPE cut out of its instruction (for the 585 products without one it is
  borrowed from the neighbour in file order, where the catalogue groups products by
  category, whose attributes match it best, with rapidfuzz); a made-up brand, the type and
  the attributes form the title; the attributes are the features and description; the price
  and the option groups (size, colour, flavour, ... by department) are drawn from the ASIN.
- Synthetic goals (one per annotated product): its instruction, its `instruction_attributes`
  as the goal attributes, one value per option group drawn from the env seed as the goal
  options, and a price ceiling by WebShop's rule (REWARD.md, "The goal").
- Human goals (`raw/webshop_human_goals.json`, 12,087 texts without ASINs): their own targets
  (`items_human_ins.json`) are missing, so a text is used only where it maps to exactly one
  annotated product: the last word of the product type is a word of the text and at least two
  of the product's attribute phrases occur in it. Those phrases are the goal's attributes; it
  asks for no options (what the person asked for is not among the rebuilt options) and gets
  a price ceiling by the same rule.
- `webshop_fixed_goals_100.jsonl` (ReAct's fixed_0..99 sessions) target products outside this
  catalogue (none of the 100 ASINs is among the 1,000), so they are not tasks here.
"""

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ITEMS = "raw/webshop_items_ins_v2_1000.json"
HUMAN_GOALS = "raw/webshop_human_goals.json"
REQUIRED = (ITEMS, HUMAN_GOALS)
NO_CEILING = 1_000_000.0
NEIGHBOURS = 30  # file positions searched each way for a product type to borrow

# (department, product-type words, option groups); the first rule whose words match wins,
# "a|b" in a group picks one of the two names per product
DEPARTMENTS = (
    ("Home & Kitchen", r"table|chair|bed|mattress|sofa|ottoman|lamp|sconce|chandelier|pendant|mirror|pillow|"
     r"curtain|rack|cabinet|desk|vanit|shel|stand|armoire|rug|bench|stool|furniture|decor|window|living",
     ("color", "size:furniture")),
    ("Clothing, Shoes & Jewelry", r"shoe|boot|sandal|pump|loafer|slipper|sneaker|oxford|clog|mule",
     ("size:shoe", "color")),
    ("Electronics", r"cable|camera|speaker|tv|audio|video|phone|iphone|receiver|amplifier|soundbar|charg|power|"
     r"adapter|remote|lens|flash|mount|projector|tablet|laptop|computer|surveillance|booster|player|protector|"
     r"wearable|tripod|micro|router|drive|memory|batter|photo|binocular|scope|monitor|keyboard|headphone",
     ("color", "style")),
    ("Grocery & Gourmet Food", r"food|snack|chocolate|candy|meat|seafood|fruit|coffee|tea|sauce|breakfast|cereal|"
     r"cookie|cracker|nut|bean|spice|herb|beverage|drink|juice|dairy|cheese|bakery|substitute|jerky|popcorn|chip",
     ("flavor", "size:pack")),
    ("Beauty & Personal Care", r"hair|makeup|skin|body|deodorant|fragrance|nail|tooth|dental|scrub|lip|bath|shave|"
     r"container|cotton|eye|wig|tongue|tattoo|piercing|perfume|cologne|lotion|mask|shampoo|oral|palette|brush",
     ("scent|color", "size:ounce")),
    ("Clothing, Shoes & Jewelry", r"shirt|short|pant|dress|sweater|hood|sweatshirt|sock|underwear|top|tee|henley|"
     r"swim|jumpsuit|activewear|jacket|coat|lingerie|legging|jean|suit|skirt|vest|sleep|bra|polo|tank",
     ("size:clothing", "color")),
    ("Home & Kitchen", r".", ("color", "size:furniture")),
)
VALUES = {
    "color": ("black", "white", "navy", "grey", "red", "blue", "green", "pink", "beige", "brown",
              "rose gold", "silver", "purple", "khaki", "ivory"),
    "scent": ("lavender", "unscented", "citrus", "vanilla", "coconut", "tea tree", "rose", "eucalyptus", "mint"),
    "flavor": ("original", "chocolate", "vanilla", "strawberry", "sea salt", "honey", "cinnamon", "spicy",
               "mixed berry", "peanut butter"),
    "style": ("standard", "pro", "plus", "with case", "bundle", "2 pack"),
    "size:clothing": ("x-small", "small", "medium", "large", "x-large", "xx-large", "3x-large"),
    "size:shoe": ("6", "6.5", "7", "7.5", "8", "8.5", "9", "9.5", "10", "11", "12"),
    "size:pack": ("pack of 1", "pack of 2", "pack of 3", "pack of 6", "pack of 12"),
    "size:ounce": ("1 fl oz", "2 fl oz", "3.4 fl oz", "6.76 fl oz", "8 fl oz", "16 fl oz"),
    "size:furniture": ("small", "medium", "large", "24 inch", "32 inch", "48 inch"),
}
_BRAND_HEADS = ("Al", "Bel", "Cor", "Dan", "El", "Fin", "Gal", "Hol", "Iv", "Jun", "Kel", "Lum", "Mar",
                "Nor", "Or", "Pel", "Quin", "Ros", "Sol", "Tam", "Ul", "Ver", "Wil", "Xan", "Yor", "Zen")
_BRAND_TAILS = ("ora", "ix", "ano", "ette", "ist", "ova", "ux", "elle", "ar", "io", "eon", "ami")
_WORD = re.compile(r"[a-z0-9']+")


@dataclass(frozen=True, eq=False)
class Product:
    """One catalogue entry as its pages show it (rebuilt from the annotation; module docstring)."""

    asin: str
    title: str
    query: str
    category: str
    price: float
    options: dict[str, tuple[str, ...]]
    attributes: tuple[str, ...]
    bullets: tuple[str, ...]
    description: str
    instruction: str = ""
    instruction_attributes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Goal:
    """What the buyer asks for: the fields WebShop's reward compares (REWARD.md, "The goal")."""

    id: str
    kind: str  # synthetic | human
    asin: str
    instruction: str
    query: str
    name: str
    category: str
    attributes: tuple[str, ...]
    options: tuple[tuple[str, str], ...]  # (option name, value) pairs the buyer asked for
    price_upper: float


# -- where the data is -------------------------------------------------------------------------


def default_data_dir() -> Path:
    """`$TALENTRL_DATA/webshop`, else `../shared/data/webshop` beside the repository checkout."""
    from talentrl_cli.resources import shared_data_dir

    return shared_data_dir() / "webshop"


def missing_files(data_dir: Path) -> list[str]:
    return [name for name in REQUIRED if not (data_dir / name).is_file()]


# -- products ----------------------------------------------------------------------------------


@lru_cache(maxsize=4)
def load_catalogue(data_dir: str) -> tuple[Product, ...]:
    """The 1,000 products in file order, rebuilt from the annotations (cached per process)."""
    rows = json.loads((Path(data_dir) / ITEMS).read_text())
    entries = list(rows.items())
    queries = _own_queries(entries)
    queries.update(_borrowed_queries(entries, queries))
    return tuple(build_product(asin, row, queries[asin]) for asin, row in entries)


def parse_query(instruction: str, attributes: list[str]) -> str:
    """The product type in a synthetic instruction `Find me A1, A2 TYPE with|for A3, A4`: the
    text left once the attribute phrases before it and after it are cut away."""
    rest, lead = instruction.removeprefix("Find me ").strip(), []
    for attr in attributes:
        last = rest.startswith(attr + " ")
        if rest.startswith(attr + ", ") or last:
            rest = rest[len(attr) + (1 if last else 2):]
            lead.append(attr)
        if last:
            break
    tail = [a for a in attributes if a not in lead]
    if tail:
        cuts = [rest.find(f"{sep}{tail[0]}") for sep in (" with ", " for ")]
        cuts = [c for c in cuts if c >= 0]
        if cuts:
            rest = rest[: min(cuts)]
    return rest.strip()


def _own_queries(entries: list[tuple[str, dict]]) -> dict[str, str]:
    return {asin: parse_query(row["instruction"], row.get("instruction_attributes", []))
            for asin, row in entries if row.get("instruction")}


def _borrowed_queries(entries: list[tuple[str, dict]], own: dict[str, str]) -> dict[str, str]:
    """A product type for each product without an instruction: that of the annotated
    neighbour (within `NEIGHBOURS` file positions) whose attributes match its own best
    (rapidfuzz token-set ratio), the nearest one on ties or when it has no attributes."""
    from rapidfuzz import fuzz, utils

    annotated = [(i, asin, " ".join(row["attributes"])) for i, (asin, row) in enumerate(entries) if asin in own]
    borrowed = {}
    for i, (asin, row) in enumerate(entries):
        if asin in own:
            continue
        near = [a for a in annotated if abs(a[0] - i) <= NEIGHBOURS] or annotated
        text = " ".join(row["attributes"])

        def closeness(cand: tuple[int, str, str], text: str = text, i: int = i) -> tuple[float, int]:
            score = fuzz.token_set_ratio(text, cand[2], processor=utils.default_process) if text else 0.0
            return score, -abs(cand[0] - i)

        borrowed[asin] = own[max(near, key=closeness)[1]]
    return borrowed


def build_product(asin: str, row: dict, query: str) -> Product:
    """A product's page from its annotation; every drawn detail is seeded by the ASIN alone,
    so the catalogue is the same for every env seed."""
    rng = random.Random(f"webshop-product-{asin}")
    attributes = tuple(row.get("attributes", []))
    brand = rng.choice(_BRAND_HEADS) + rng.choice(_BRAND_TAILS)
    kind = titled(query)
    title = f"{brand} {kind}" + (f" - {', '.join(titled(a) for a in attributes[:5])}" if attributes else "")
    department, groups = department_of(query)
    features = tuple(f"{a.capitalize()}." for a in attributes) + (f"Product type: {query}.",)
    details = ", ".join(attributes) or "made to a simple, reliable design"
    return Product(asin=asin, title=title, query=query, category=f"{department} › {query}",
                   price=math.floor(math.exp(rng.uniform(math.log(4), math.log(150)))) + 0.99,
                   options=_draw_options(groups, rng), attributes=attributes, bullets=features,
                   description=f"{brand} {query}: {details}.", instruction=row.get("instruction", ""),
                   instruction_attributes=tuple(row.get("instruction_attributes", [])))


def department_of(query: str) -> tuple[str, tuple[str, ...]]:
    for department, words, groups in DEPARTMENTS:
        if re.search(rf"\b(?:{words})", query):
            return department, groups
    raise AssertionError("the last rule matches every query")


def _draw_options(groups: tuple[str, ...], rng: random.Random) -> dict[str, tuple[str, ...]]:
    """None, the first, or both option groups (1 : 2 : 2), 2-5 values each, in vocabulary order."""
    options = {}
    for group in groups[: rng.choice((0, 1, 1, 2, 2))]:
        group = rng.choice(group.split("|"))
        vocabulary = VALUES[group]
        picked = set(rng.sample(range(len(vocabulary)), rng.randint(2, min(5, len(vocabulary)))))
        options[group.split(":")[0]] = tuple(v for i, v in enumerate(vocabulary) if i in picked)
    return options


def titled(text: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in text.split())


# -- goals -------------------------------------------------------------------------------------


def price_upper(price: float, rng: random.Random) -> float:
    """WebShop's ceiling: of the first four multiples of 10 above the price, the larger of two
    drawn at random; `NO_CEILING` when fewer than two exist (REWARD.md)."""
    above = [float(p) for p in range(10, 1000, 10) if p > price][:4]
    return max(rng.sample(above, 2)) if len(above) >= 2 else NO_CEILING


def price_phrase(upper: float) -> str:
    return f", and price lower than {upper:.2f} dollars" if upper < NO_CEILING else ""


def synthetic_goal(product: Product, seed: int) -> Goal:
    """The product's own instruction, one value per option group and a price ceiling."""
    rng = random.Random(f"webshop-goal-{seed}-{product.asin}")
    options = tuple((name, rng.choice(values)) for name, values in product.options.items())
    upper = price_upper(product.price, rng)
    asked = f", in {' and '.join(f'{name} {value}' for name, value in options)}" if options else ""
    return Goal(id=f"synthetic-{product.asin}", kind="synthetic", asin=product.asin,
                instruction=product.instruction + asked + price_phrase(upper), query=product.query,
                name=product.title, category=product.category, attributes=product.instruction_attributes,
                options=options, price_upper=upper)


def human_goals(texts: list[str], products: tuple[Product, ...], seed: int) -> list[Goal]:
    """The human texts that map to exactly one annotated product (module docstring)."""
    by_head: dict[str, list[Product]] = {}
    for product in products:
        if product.instruction:
            head = _WORD.findall(product.query.split(",")[0])
            by_head.setdefault(head[-1] if head else "", []).append(product)
    goals = []
    for i, text in enumerate(texts):
        lowered = text.lower()
        words = set(_WORD.findall(lowered))
        hits = [(p, found) for head in words & by_head.keys() for p in by_head[head]
                if len(found := [a for a in p.attributes if a in lowered]) >= 2]
        if len(hits) == 1:
            product, found = hits[0]
            upper = price_upper(product.price, random.Random(f"webshop-human-{seed}-{i}"))
            goals.append(Goal(id=f"human-{i:05d}", kind="human", asin=product.asin,
                              instruction=text.strip() + price_phrase(upper), query=product.query,
                              name=product.title, category=product.category, attributes=tuple(found),
                              options=(), price_upper=upper))
    return goals


@lru_cache(maxsize=8)
def load_goals(data_dir: str, seed: int, kinds: tuple[str, ...]) -> tuple[Goal, ...]:
    """Every goal of the requested kinds, synthetic first, in catalogue / file order."""
    products = load_catalogue(data_dir)
    goals: list[Goal] = []
    if "synthetic" in kinds:
        goals += [synthetic_goal(p, seed) for p in products if p.instruction]
    if "human" in kinds:
        goals += human_goals(json.loads((Path(data_dir) / HUMAN_GOALS).read_text()), products, seed)
    return tuple(goals)


def split_goals(goals: tuple[Goal, ...], seed: int, fractions: dict[str, float]) -> dict[str, list[Goal]]:
    """train/dev/test by target product (a product's goals stay in one split), the products
    shuffled by the seed; each split's goals in a seeded order that mixes the kinds."""
    asins = sorted({g.asin for g in goals})
    random.Random(f"webshop-split-{seed}").shuffle(asins)
    total, edges, cum = sum(fractions.values()), {}, 0.0
    for name in ("train", "dev", "test"):
        start = round(cum / total * len(asins))
        cum += fractions[name]
        edges.update({a: name for a in asins[start: round(cum / total * len(asins))]})
    out: dict[str, list[Goal]] = {name: [g for g in goals if edges.get(g.asin) == name]
                                  for name in ("train", "dev", "test")}
    for name, part in out.items():
        random.Random(f"webshop-order-{seed}-{name}").shuffle(part)
    return out
