"""The routing and ReAct protocol: the one place where turns are rendered and parsed.

A talent-aware episode is one conversation (DESIGN §2):

    system     the agent's instructions
    user       routing turn: the task and the talent menu (name: one-line description)
    assistant  <talent>NAME</talent>
    user       execution context: the tools, the talent's demonstration (another task's
               worked actions) and the retrieved skills R(x, t) (the task and the talent's
               description are already in the routing turn)
    assistant  Thought: ... / Action: tool[arg]
    user       Observation: ...
    assistant  ...                                   (until the final action)

The flat SkillBank baseline drops the routing turn (`talent=None`), so its execution context
opens with the task; `skills=none` also drops the skills. Observations are user turns, so assistant-only loss
masks them. Rendering goes through the tokenizer's chat template (`render`), or
`FALLBACK_TEMPLATE` when the tokenizer has none; `training_chat_template` gives the same
rendering with `{% generation %}` markers, which TRL's assistant-only loss needs.

The parsers (`parse_talent`, `parse_turn`) never raise on model output: junk gives a result
with `ok=False` and an `error` saying why.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Every token here is paid for in each SFT example, rollout and eval turn (prefill dominates
# CPU cost), so the instructions are terse and nothing the conversation already holds is
# repeated: the routing turn shows the task and the talents' descriptions, so the execution
# context after it holds only the tools and the skills.
SYSTEM_PROMPT = "Pick a talent (a strategy), then solve the task with tools."
FLAT_SYSTEM_PROMPT = "Solve the task with tools."
ROUTE_INSTRUCTION = "Reply <talent>NAME</talent>."
ACTION_FORMAT = "tool[argument]"  # `Environment.action_format`; a game env takes a plain command


def act_instruction(action_format: str = ACTION_FORMAT) -> str:
    return f"Each turn: Thought: ... Action: {action_format}."


def first_observation(task: Any) -> str:
    """What the environment shows before the first action, beyond the task text (a game's
    opening room, ALFWorld's "You are in the middle of a room..."): `task.meta`'s
    `initial_observation`, empty for QA."""
    return str((getattr(task, "meta", None) or {}).get("initial_observation") or "")

# ChatML, as the tiny model, SmolLM2 and Qwen2.5 render a conversation that opens with a
# system message; the training variant marks the assistant spans (content and <|im_end|>).
CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CHATML_TRAINING_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'assistant' %}<|im_start|>assistant\n"
    "{% generation %}{{ message['content'] }}<|im_end|>{% endgeneration %}{{ '\\n' }}"
    "{% else %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# For tokenizers without a chat template (base models): plain role headers, and the
# tokenizer's eos token closes each assistant turn so the model learns to stop.
FALLBACK_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'assistant' %}### Assistant:\n"
    "{% generation %}{{ message['content'] }}{{ eos_token }}{% endgeneration %}{{ '\\n\\n' }}"
    "{% else %}### {{ message['role'] | capitalize }}:\n{{ message['content'] }}\n\n{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}### Assistant:\n{% endif %}"
)
_TALENT_TAG = re.compile(r"<talent>\s*(.*?)\s*</talent>", re.IGNORECASE | re.DOTALL)
_THOUGHT = re.compile(r"Thought(?:[ \t]*\d+)?[ \t]*:[ \t]*(.*?)(?=^[ \t]*Action(?:[ \t]*\d+)?[ \t]*:|\Z)",
                      re.IGNORECASE | re.DOTALL | re.MULTILINE)


# -- building conversations ------------------------------------------------------------------


def talent_answer(name: str) -> str:
    return f"<talent>{name}</talent>"


def routing_messages(task: str, talents: Sequence[Any]) -> list[dict[str, str]]:
    """[system, user]: the task and the talent menu; the model answers `<talent>NAME</talent>`."""
    menu = "\n".join(f"- {t.name}: {_one_line(t.description)}" for t in talents)
    user = f"Task: {task.strip()}\nTalents:\n{menu}\n{ROUTE_INSTRUCTION}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def execution_context(task: str | None, skills: Sequence[Any] | None, tools: str = "",
                      demonstration: str = "", action_format: str = ACTION_FORMAT,
                      observation: str = "") -> str:
    """The execution turn's user message: the task (None when the routing turn already shows
    it), the environment's tools (`env.describe_tools()`), the talent's demonstration (see
    `demonstration`), the skills (unless none), the turn format and the first observation
    (see `first_observation`; none for QA)."""
    parts = [f"Task: {task.strip()}"] if task is not None else []
    if tools.strip():
        parts.append(f"Tools: {tools.strip()}")
    if demonstration:
        parts.append(f"Example: {demonstration}")
    if skills:
        # bullets, not numbers: a list number would read as a value (and 2 is a gold answer)
        parts.append("Skills:\n" + "\n".join(f"- {render_skill(s)}" for s in skills))
    parts.append(act_instruction(action_format))
    if observation.strip():
        parts.append(format_observation(observation))
    return "\n".join(parts)


def execution_messages(task: str, talent: Any | None, skills: Sequence[Any] | None,
                       history: Sequence[Any] = (), talents: Sequence[Any] | None = None,
                       observe_last: bool = True, tools: str = "", hide: Sequence[str] = (),
                       action_format: str = ACTION_FORMAT, observation: str = "") -> list[dict[str, str]]:
    """The conversation up to the next execution turn.

    `talent` given (talent-aware): the routing turn over the menu `talents` (default: that
    talent alone) and its answer come first, and the execution context does not repeat the
    task or the talent. `history` holds steps with
    `thought`, `action`, `observation`; `observe_last=False` leaves out the last step's
    observation (SFT targets end on the final action); `hide`: values the demonstration
    must not quote (see `demonstration`); `action_format` and `observation`: see
    `execution_context`."""
    routed = talent is not None
    if routed:
        messages = routing_messages(task, talents or [talent])
        messages.append({"role": "assistant", "content": talent_answer(talent.name)})
    else:
        messages = [{"role": "system", "content": FLAT_SYSTEM_PROMPT}]
    demo = demonstration(talent, task, hide) if routed else ""
    context = execution_context(None if routed else task, skills, tools, demo, action_format, observation)
    messages.append({"role": "user", "content": context})
    for i, step in enumerate(history):
        messages.append({"role": "assistant", "content": format_turn(step.thought, step.action)})
        if observe_last or i < len(history) - 1:
            messages.append({"role": "user", "content": format_observation(step.observation)})
    return messages


def demonstration(talent: Any, task: str, hide: Sequence[str] = ()) -> str:
    """`question -> action; ...; finish[<slot>]`: of the talent's worked exemplars (mined by
    `mining.pipeline.demonstration`; older mines have none), the one whose question reads
    most like the task's, leaving out this very task and any that quotes a value in `hide`;
    one line. SFT hides the example's gold answers, so no training context holds its own
    answer even by coincidence (another task's entity that happens to be it).

    Why a concrete exemplar and not only slot steps: a small policy copies a worked pattern
    (what to search, how many hops, what kind of answer) far more readily than it reads
    `search[<task entity>]`, and a random talent's exemplar shows the wrong pattern, so the
    routing choice reaches the actions. Why the nearest: a talent can span several question
    families, and the exemplar of the task's own family shows its exact pattern."""
    candidates = []
    for demo in (getattr(talent, "meta", None) or {}).get("demonstrations", []):
        text = f"{_one_line(demo['question'])} -> " + "; ".join(_one_line(a) for a in demo["actions"])
        if _one_line(demo["question"]).lower() != _one_line(task).lower() and not any(quotes(text, v) for v in hide):
            candidates.append((-question_similarity(demo["question"], task), len(candidates), text))
    return min(candidates)[2] if candidates else ""


def question_similarity(a: str, b: str) -> float:
    """Word-sequence similarity in [0, 1] (difflib's ratio over lowercased words): two
    questions of one family share their wording and differ in the entities, which this
    rewards without an embedder in the prompt path."""
    return difflib.SequenceMatcher(None, _words(a), _words(b), autojunk=False).ratio()


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def quotes(text: str, value: str) -> bool:
    """Whether `text` holds `value` as a whole word or phrase, ignoring case."""
    value = _one_line(value).lower()
    return bool(value) and re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text.lower()) is not None


def format_turn(thought: str, action: str) -> str:
    thought = (thought or "").strip()
    return f"Thought: {thought}\nAction: {action.strip()}" if thought else f"Action: {action.strip()}"


def format_observation(observation: str) -> str:
    return f"Observation: {(observation or '').strip()}"


def render_skill(skill: Any) -> str:
    """`step; step (when to use)`, one line. The name is left out: it labels the procedure
    for people (reports, `index query`) and the steps already say it, at ~9 tokens a skill."""
    steps = "; ".join(s.strip().rstrip(".") for s in skill.steps)
    when = _one_line(skill.when_to_use).rstrip(".")
    return steps + (f" ({when})" if when else "")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


# -- rendering -------------------------------------------------------------------------------


def chat_template(tokenizer: Any) -> str:
    """The tokenizer's chat template, or FALLBACK_TEMPLATE when it has none."""
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, Mapping):
        template = template.get("default")
    return template or FALLBACK_TEMPLATE


def render(tokenizer: Any, messages: Sequence[Mapping[str, str]], add_generation_prompt: bool = False) -> str:
    """The conversation as text, through the tokenizer's chat template (or the fallback)."""
    return tokenizer.apply_chat_template(list(messages), tokenize=False, chat_template=chat_template(tokenizer),
                                         add_generation_prompt=add_generation_prompt)


_PROBE = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"},
          {"role": "assistant", "content": "A"}, {"role": "user", "content": "O"},
          {"role": "assistant", "content": "B"}]


def training_chat_template(tokenizer: Any) -> str:
    """A template that renders exactly like `chat_template(tokenizer)` and marks assistant
    spans with `{% generation %}`: the tokenizer's own if it has markers, ChatML's when the
    tokenizer renders ChatML, else TRL's training variant of a known template."""
    from talentrl_cli.errors import ConfigError

    template = chat_template(tokenizer)
    if re.search(r"\{%-?\s*generation\s*-?%\}", template):
        return template
    rendered = render(tokenizer, _PROBE)
    for plain, training in ((CHATML_TEMPLATE, CHATML_TRAINING_TEMPLATE),):
        if rendered == tokenizer.apply_chat_template(_PROBE, tokenize=False, chat_template=plain):
            return training
    try:
        from trl.chat_template_utils import get_training_chat_template

        patched = get_training_chat_template(tokenizer)
    except Exception:  # noqa: BLE001 - TRL raises for templates it does not know
        patched = None
    if patched:
        return patched
    raise ConfigError("the tokenizer's chat template has no {% generation %} markers and is not one "
                      "talentrl or TRL knows how to mark", "set tokenizer.chat_template to a template "
                      "with {% generation %}...{% endgeneration %} around assistant turns")


# -- parsing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TalentParse:
    name: str | None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.name is not None


@dataclass(frozen=True)
class TurnParse:
    thought: str
    action: Any  # envs.search.Action or None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.action is not None


def parse_talent(text: Any, names: Sequence[str]) -> TalentParse:
    """The talent named in the first `<talent>...</talent>`, matched exactly, then ignoring
    case and spacing; a failure (never an exception) for anything else."""
    if not isinstance(text, str):
        return TalentParse(None, f"not text: {type(text).__name__}")
    found = _TALENT_TAG.search(text)
    if found is None:
        return TalentParse(None, "no <talent>NAME</talent> tag")
    raw = found.group(1)
    if raw in names:
        return TalentParse(raw)
    key = _talent_key(raw)
    matches = [n for n in names if _talent_key(n) == key]
    if len(matches) == 1:
        return TalentParse(matches[0])
    return TalentParse(None, f"unknown talent {raw[:80]!r}")


def _talent_key(name: str) -> str:
    return re.sub(r"[\s_-]+", " ", str(name)).strip().lower()


def parse_turn(text: Any) -> TurnParse:
    """A model's execution turn: its thought (may be empty) and its first action, parsed by
    the shared ReAct grammar (`envs.search.parse_action`)."""
    from talentrl_cli.envs.search import parse_action

    if not isinstance(text, str):
        return TurnParse("", None, f"not text: {type(text).__name__}")
    found = _THOUGHT.search(text)
    thought = _one_line(found.group(1)) if found else ""
    action = parse_action(text)
    return TurnParse(thought, action, "" if action is not None else "no Action: tool[argument]")
