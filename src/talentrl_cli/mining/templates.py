"""Action templates: the domain-agnostic abstraction that turns actions into procedure steps.

An action is either `tool[argument]` (ReAct QA logs, any tool name) or a free-form command
(`take mug 1 from cabinet 2`, as in ALFWorld). Its argument is abstracted into typed slots by
*where each span comes from*, which needs no knowledge of the domain or its tools:

| slot | span |
|---|---|
| `<Q>` | words of the task text (an entity or keyword named in the question) |
| `<OBS>` | words seen in an earlier observation (something the agent discovered) |
| `<NUM>` | a number |
| `<YESNO>` | a bare yes/no argument |
| `<QUOTE>` | a quoted span |
| `<ENT>` | another capitalised span (an entity from the agent's own knowledge) |
| `<W>` | another keyword in a bracketed argument |

A bracketed argument (a query, an answer) keeps only its dominant slot, by the priority
`<OBS>` > `<Q>` > `<ENT>` > `<QUOTE>` > `<NUM>` > `<W>`: what matters for the strategy is
whether the agent queries something it discovered or something it was given, not the exact
wording, so `search[Laleli Mosque neighborhood]` becomes `search[<Q>]`. Free-form commands
keep every slot and their grammar words (`take <Q> <NUM> from <OBS> <NUM>`). Runs of the same template collapse to `template+`, so a search
over cabinets 1..4 is one step, however many cabinets the room has.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

from talentrl_cli.schema import Trajectory

_BRACKET = re.compile(r"^\s*([A-Za-z_][\w\- ]{0,40}?)\s*\[(.*)\]\s*$", re.S)
_TOKEN = re.compile(r"\"[^\"]*\"|'[^']*'|\d+(?:[.,]\d+)*|\w+|[^\w\s]", re.UNICODE)
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)*$")
_WORD = re.compile(r"\w+", re.UNICODE)
STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or is are was were be been it its this that "
    "what which who whom whose when where how why do does did as into than then there their".split()
)
_PRIORITY = ("<OBS>", "<Q>", "<ENT>", "<QUOTE>", "<NUM>", "<W>")
# Slot words carry no value from any trajectory, so a skill or talent rendered from them
# cannot leak a task's entities or answers into another task's prompt. `<YESNO>` is
# "boolean", not "yes/no": the words yes and no are gold answers.
SLOT_WORDS = {
    "<Q>": "task", "<OBS>": "found", "<NUM>": "number", "<YESNO>": "boolean",
    "<QUOTE>": "quote", "<ENT>": "entity", "<W>": "keyword",
}
SLOT_PHRASES = {
    "<Q>": "<task entity>", "<OBS>": "<found entity>", "<NUM>": "<number>", "<YESNO>": "<boolean>",
    "<QUOTE>": "<quoted text>", "<ENT>": "<other entity>", "<W>": "<keyword>",
}


def vocabulary(text: str) -> set[str]:
    """Lower-cased content words of a text."""
    return {w for w in (m.lower() for m in _WORD.findall(text)) if w not in STOPWORDS}


def split_action(action: str) -> tuple[str, str, bool]:
    """(tool, argument, bracketed) for `tool[arg]` or a free-form command."""
    match = _BRACKET.match(action)
    if match:
        return match.group(1).strip().lower(), match.group(2).strip(), True
    words = action.strip().split(maxsplit=1)
    if not words:
        return "", "", False
    return words[0].lower(), words[1] if len(words) > 1 else "", False


def abstract_action(action: str, question_vocab: set[str], seen_vocab: set[str]) -> str:
    """The template of one action given what the task and earlier observations contained."""
    tool, arg, bracketed = split_action(action)
    if bracketed:
        slots = _slots(arg, question_vocab, seen_vocab, bracketed=True)
        dominant = next((s for s in _PRIORITY if s in slots), slots[0] if slots else "")
        return f"{tool}[{dominant}]"
    return " ".join([tool, *_slots(arg, question_vocab, seen_vocab, bracketed=False)]).strip()


def _slots(arg: str, question_vocab: set[str], seen_vocab: set[str], bracketed: bool) -> list[str]:
    if bracketed and arg.strip().lower().strip(".!") in ("yes", "no"):
        return ["<YESNO>"]
    out: list[str] = []
    for token in _TOKEN.findall(arg):
        slot = _slot(token, question_vocab, seen_vocab, bracketed)
        if slot is None or (out and out[-1] == slot and slot.startswith("<")):
            continue
        out.append(slot)
    return out


def _slot(token: str, question_vocab: set[str], seen_vocab: set[str], bracketed: bool) -> str | None:
    lower = token.lower()
    if token[0] in "\"'" and len(token) > 1:
        return "<QUOTE>"
    if _NUMBER.match(token):
        return "<NUM>"
    if not token[0].isalnum() or lower in STOPWORDS:
        # punctuation and function words carry the grammar of free-form commands only
        return None if bracketed else lower
    if lower in question_vocab:
        return "<Q>"
    if lower in seen_vocab:
        return "<OBS>"
    if token[0].isupper():
        return "<ENT>"
    return "<W>" if bracketed else lower


def trajectory_templates(trajectory: Trajectory) -> list[str]:
    """The template sequence of a trajectory, with runs of one template collapsed to `t+`."""
    question_vocab = vocabulary(trajectory.task.question)
    seen = vocabulary(str(trajectory.task.meta.get("initial_observation", "")))
    templates: list[str] = []
    for step in trajectory.steps:
        templates.append(abstract_action(step.action, question_vocab, seen))
        seen |= vocabulary(step.observation)
    return collapse_runs(templates)


def collapse_runs(templates: Iterable[str]) -> list[str]:
    out: list[str] = []
    for template in templates:
        base = template
        if out and out[-1].rstrip("+") == base:
            out[-1] = base + "+"
        else:
            out.append(base)
    return out


@cache
def describe_template(template: str) -> str:
    """A readable step: slots become phrases, `t+` becomes '(repeat)'."""
    repeated = template.endswith("+")
    text = template.rstrip("+")
    for slot, phrase in SLOT_PHRASES.items():
        text = text.replace(slot, phrase)
    return f"{text} (repeat)" if repeated else text


@cache
def short_template(template: str) -> str:
    """A slug for a template, the words of skill and talent names: `search-task`,
    `search-task-each` (a repeated run), `finish-number`; a free-form command keeps its verb."""
    tool, arg, bracketed = split_action(template.rstrip("+"))
    slots = [SLOT_WORDS[part] for part in re.findall(r"<[A-Z]+>", arg)] if bracketed else []
    words = [tool, *slots[:1], *(["each"] if template.endswith("+") else [])]
    return "-".join(w for w in words if w)


def pattern_name(pattern: Iterable[str]) -> str:
    """A procedure's name: its templates' slugs, e.g. `search-task-search-found-finish-number`."""
    return "-".join(short_template(t) for t in pattern)
