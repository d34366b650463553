"""The routing/ReAct protocol: golden renderings and parsers that never crash on junk.

Regenerate the golden files after an intended change with `TALENTRL_UPDATE_GOLDEN=1 pytest tests/test_prompts.py`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from talentrl_cli import prompts
from talentrl_cli.schema import Skill, Step, Talent

GOLDEN = Path(__file__).parent / "golden" / "prompts"
DEMOS = [{"task_id": "t0", "question": "Who mentored Orvandel?", "actions": ["fetch[Orvandel]", "respond[<found entity>]"]},
         {"task_id": "t1", "question": "Who mentored Kestrimo?", "actions": ["fetch[Kestrimo]", "respond[<found entity>]"]},
         {"task_id": "t2", "question": "Which is older, Orvandel or Kestrimo?",
          "actions": ["fetch[Orvandel]", "fetch[Kestrimo]", "respond[<task entity>]"]}]
TALENTS = [Talent(name="chain-lookups", description="Find the bridge entity,\nthen look it up.",
                  meta={"demonstrations": DEMOS}),
           Talent(name="compare", description="Look up both entities, then compare.")]
SKILLS = [Skill(id="s1", name="Find the mentor", when_to_use="A question names a person's mentor.",
                steps=["fetch the person", "read the mentor's name."]),
          Skill(id="s2", name="Answer", when_to_use="The answer is known.", steps=["respond[answer]"])]
HISTORY = [Step(thought="Find the mentor first.", action="fetch[Orvandel]", observation="Orvandel was mentored by Kestrimo."),
           Step(action="respond[Kestrimo]", observation="Done.")]
TASK = "Who mentored Orvandel?"
TOOLS = "(1) fetch[name]: the person's record.\n(2) respond[answer]: give the final answer."


@pytest.fixture(scope="module")
def tokenizer():
    from talentrl_cli.models import load_tokenizer

    return load_tokenizer(OmegaConf.load(Path(__file__).parents[1] / "conf" / "model" / "tiny.yaml"))


@pytest.fixture(scope="module")
def bare_tokenizer(tokenizer):
    import copy

    bare = copy.deepcopy(tokenizer)
    bare.chat_template = None
    return bare


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("TALENTRL_UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}; run with TALENTRL_UPDATE_GOLDEN=1"
    assert text == path.read_text()


CASES = {
    "routing": lambda: prompts.routing_messages(TASK, TALENTS),
    "talent": lambda: prompts.execution_messages(TASK, TALENTS[0], SKILLS, HISTORY, talents=TALENTS,
                                                 observe_last=False, tools=TOOLS),
    "flat": lambda: prompts.execution_messages(TASK, None, SKILLS, HISTORY[:1]),
    "none": lambda: prompts.execution_messages(TASK, None, None, tools=TOOLS),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendering_matches_golden_files(case, tokenizer, bare_tokenizer):
    messages = CASES[case]()
    generate = case != "talent"
    check_golden(f"{case}.chatml.txt", prompts.render(tokenizer, messages, add_generation_prompt=generate))
    check_golden(f"{case}.fallback.txt", prompts.render(bare_tokenizer, messages, add_generation_prompt=generate))


def test_observations_are_user_turns_and_sft_targets_end_on_the_final_action():
    messages = CASES["talent"]()
    roles = [m["role"] for m in messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert messages[2]["content"] == "<talent>chain-lookups</talent>"
    assert messages[5]["content"].startswith("Observation: ")
    assert messages[-1]["content"] == "Action: respond[Kestrimo]"


@pytest.mark.parametrize("which", ["tokenizer", "bare_tokenizer"])
def test_training_template_renders_identically_and_masks_only_assistant_tokens(which, request):
    tok = request.getfixturevalue(which)
    messages = CASES["talent"]()
    template = prompts.training_chat_template(tok)
    assert tok.apply_chat_template(messages, tokenize=False, chat_template=template) == prompts.render(tok, messages)
    out = tok.apply_chat_template(messages, tokenize=True, chat_template=template, return_dict=True,
                                  return_assistant_tokens_mask=True)
    ids, mask = out["input_ids"], out["assistant_masks"]
    trained = tok.decode([i for i, m in zip(ids, mask, strict=True) if m])
    assert "chain-lookups" in trained and "respond[Kestrimo]" in trained
    assert "Observation" not in trained and "Orvandel was mentored" not in trained and "Task:" not in trained
    assert tok.eos_token in trained  # the end-of-turn token is trained, so the model learns to stop


@pytest.mark.parametrize("text, expected", [
    ("<talent>compare</talent>", "compare"),
    ("  <TALENT> Chain Lookups </talent> trailing", "chain-lookups"),
    ("<talent>compare</talent><talent>chain-lookups</talent>", "compare"),
])
def test_parse_talent(text, expected):
    assert prompts.parse_talent(text, [t.name for t in TALENTS]).name == expected


@pytest.mark.parametrize("junk", [None, 3, "", "compare", "<talent>", "<talent>nope</talent>",
                                  "<talent>" + "x" * 10_000 + "</talent>", "\x00<talent>\n</talent>", b"<talent>compare</talent>"])
def test_parse_talent_fails_softly_on_junk(junk):
    result = prompts.parse_talent(junk, [t.name for t in TALENTS])
    assert not result.ok and result.error


def test_parse_turn():
    turn = prompts.parse_turn("Thought: look it up\nfirst.\nAction: search[Paris [France]] extra")
    assert turn.ok and turn.thought == "look it up first." and str(turn.action) == "search[Paris [France]]"
    assert prompts.parse_turn("Action: finish[yes]").thought == ""


@pytest.mark.parametrize("junk", [None, 1.5, "", "Thought: hmm", "Action: search[unclosed", "]][[", "Action:"])
def test_parse_turn_fails_softly_on_junk(junk):
    result = prompts.parse_turn(junk)
    assert not result.ok and result.error


def test_a_demonstration_is_another_tasks_and_hides_given_values():
    talent = TALENTS[0]
    assert prompts.demonstration(talent, TASK) == "Who mentored Kestrimo? -> fetch[Kestrimo]; respond[<found entity>]"
    assert prompts.demonstration(talent, " who  mentored orvandel? ") == prompts.demonstration(talent, TASK)
    assert prompts.demonstration(talent, TASK, hide=["kestrimo"]) == ""  # the only other exemplar quotes it
    assert prompts.demonstration(talent, "Who taught Ilsa?") .startswith("Who mentored Orvandel?")
    assert prompts.demonstration(TALENTS[1], TASK) == ""  # a talent mined before demonstrations existed


def test_a_demonstration_is_the_one_whose_question_reads_most_like_the_task():
    assert prompts.demonstration(TALENTS[0], "Which is older, Ilsa or Brem?") == (
        "Which is older, Orvandel or Kestrimo? -> fetch[Orvandel]; fetch[Kestrimo]; respond[<task entity>]")
    assert prompts.question_similarity("Who mentored Ilsa?", "who mentored Brem") == pytest.approx(2 / 3)
    assert prompts.question_similarity("a b", "c d") == 0.0
