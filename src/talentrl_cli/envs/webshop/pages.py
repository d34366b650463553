"""The text of WebShop's pages, as ReAct's WebShop prompt shows them, and a reader that turns
WebShop's own HTML pages into the same text.

    talentrl envs sample webshop -n 1

Clickable elements are in brackets (`[Back to Search]`, `[Next >]`, `[B078GWRC1J]`,
`[Buy Now]`); an option group is one line, its name then its values (`size [small][large]`);
anything else is a line of plain text: the format of
shared/data/webshop/raw/reflexion_webshop_react_oneshot_prompt.txt. `html_to_text` reads the
real WebShop page fixtures (raw/webshop_mock_*.html) into that format, which lets the tests
check that a rendered page carries the fields of WebShop's, in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence
from html.parser import HTMLParser

from talentrl_cli.envs.webshop.catalogue import Product

BACK, PREV, NEXT, BUY = "Back to Search", "< Prev", "Next >", "Buy Now"
DETAILS = ("Description", "Features", "Reviews")
THANKS = "Thank you for shopping with us!"


def price_text(price: float) -> str:
    return f"${price:.2f}"


def search_page(instruction: str) -> str:
    return f"WebShop\nInstruction:\n{instruction}\n[Search]"


def results_page(page: int, total: int, products: Sequence[Product], has_next: bool) -> str:
    """One page of results: the controls, then id, title and price of each product."""
    lines = [f"[{BACK}]", f"Page {page} (Total results: {total})"]
    lines += [f"[{PREV}]"] * (page > 1) + [f"[{NEXT}]"] * has_next
    for product in products:
        lines += [f"[{product.asin}]", product.title, price_text(product.price)]
    if not products:
        lines.append("No products match these words.")
    return "\n".join(lines)


def item_page(product: Product) -> str:
    """The item page: its option groups, title, price and the sub-page and purchase buttons."""
    lines = [f"[{BACK}]", f"[{PREV}]"]
    lines += [f"{name} " + "".join(f"[{v}]" for v in values) for name, values in product.options.items()]
    lines += [product.title, f"Price: {price_text(product.price)}", "Rating: N.A."]
    lines += [f"[{d}]" for d in DETAILS] + [f"[{BUY}]"]
    return "\n".join(lines)


def detail_page(product: Product, which: str) -> str:
    """The description, features or reviews sub-page (the catalogue has no reviews)."""
    body = {"description": [product.description], "features": list(product.bullets),
            "reviews": ["No reviews yet."]}[which]
    return "\n".join([f"[{BACK}]", f"[{PREV}]", *body])


def html_to_text(html: str) -> str:
    """A WebShop HTML page as page text: buttons, links and option labels in brackets, the
    instruction block, scripts and comments left out."""
    reader = _PageReader()
    reader.feed(html)
    reader.close()
    return "\n".join(reader.lines)


class _PageReader(HTMLParser):
    """Visible text, one line per element, clickables bracketed (`html_to_text`)."""

    CLICKABLE = frozenset({"button", "a", "label"})
    SKIPPED = frozenset({"script", "style", "head"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self.clicking: str | None = None
        self.skipped = 0
        self.instruction_divs = 0  # open <div>s inside the instruction block

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.instruction_divs or dict(attrs).get("id") == "instruction-text":
            self.instruction_divs += tag == "div"
            return
        self.skipped += tag in self.SKIPPED
        if tag in self.CLICKABLE:
            self.clicking = tag

    def handle_endtag(self, tag: str) -> None:
        if self.instruction_divs:
            self.instruction_divs -= tag == "div"
            return
        self.skipped -= tag in self.SKIPPED
        if tag == self.clicking:
            self.clicking = None

    def handle_data(self, data: str) -> None:
        text = " ".join(data.split())
        if not text or self.skipped or self.instruction_divs:
            return
        if self.clicking == "label" and self.lines:  # an option value joins its group's line
            self.lines[-1] += ("" if self.lines[-1].endswith("]") else " ") + f"[{text}]"
        else:
            self.lines.append(f"[{text}]" if self.clicking else text)
