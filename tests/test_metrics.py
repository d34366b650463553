"""EM/F1 against the hand-derived and real FireAct test vectors; answer extraction; CIs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from talentrl_cli.metrics import (
    bootstrap_ci,
    exact_match,
    extract_final_answer,
    f1,
    f1_squad,
    normalize_answer,
    outcome_scores,
    score_completion,
)

TOL = 1e-6


def _cases(path):
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_hand_derived_cases(shared_data):
    cases = _cases(shared_data / "qa_eval_cases.jsonl")
    assert len(cases) == 75
    wrong = []
    for case in cases:
        got = {
            "em": exact_match(case["prediction"], case["answers"]),
            "f1": f1(case["prediction"], case["answers"]),
            "f1_squad": f1_squad(case["prediction"], case["answers"]),
        }
        if any(abs(got[k] - case[k]) > TOL for k in got):
            wrong.append((case["note"], got))
    assert wrong == []


def test_real_fireact_cases(shared_data):
    cases = _cases(shared_data / "qa_eval_cases_real_fireact.jsonl")
    assert len(cases) == 465
    wrong = [
        c["id"]
        for c in cases
        if abs(exact_match(c["prediction"], c["answers"]) - c["em"]) > TOL
        or abs(f1(c["prediction"], c["answers"]) - c["f1"]) > TOL
    ]
    assert wrong == []


def test_normalize_answer_rules():
    assert normalize_answer("The  U.S.A.\u00a0is") == "usa is"
    assert normalize_answer("A. Lincoln") == "lincoln"
    assert normalize_answer("O\u2019Brien") == "o\u2019brien"  # Unicode punctuation kept


def test_answers_may_be_a_string_and_none_scores_zero():
    assert exact_match("paris", "Paris") == 1.0
    assert f1("Paris France", "Paris") == pytest.approx(2 / 3)
    assert exact_match(None, ["the"]) == 0.0  # "" would match "the" after normalisation
    assert f1(None, "x") == 0.0 and f1_squad(None, "x") == 0.0
    assert exact_match("x", []) == 0.0 and f1("x", []) == 0.0
    with pytest.raises(TypeError):
        exact_match("x", [1])


def test_hotpot_yes_no_rule_per_alias():
    assert f1("no", ["no way"]) == 0.0
    assert f1_squad("no", ["no way"]) == pytest.approx(2 / 3)
    assert f1("no", ["no way", "no"]) == 1.0  # the special alias is skipped, not fatal


@pytest.mark.parametrize(
    ("completion", "answer"),
    [
        ("Thought: done\nAction: finish[Paris]", "Paris"),
        ("Thought: done\nAction 3: Finish[ Paris ]", "Paris"),
        ("Action: FINISH[a]\nObservation: wrong\nAction: finish[b]", "b"),  # the last one
        ("Action: finish[Star Wars [film]]", "Star Wars [film]"),
        ("Action: finish[]", ""),
        ("Action: search[Paris]", None),
        ("Action: refinish[Paris]", None),  # whole word only
        ("Action: finish[a]\nAction: finish[cut off", "a"),  # unclosed action ignored
        ("", None),
    ],
)
def test_extract_final_answer(completion, answer):
    assert extract_final_answer(completion) == answer


def test_prompt_example_answer_does_not_score():
    # The Search-R1 trap: the prompt's few-shot example holds an answer. Only the
    # completion is scored, so an unanswered completion scores 0.
    prompt = (
        "Example:\nQuestion: capital of China?\nAction: finish[Beijing]\n"
        "Question: capital of China?\n"
    )
    completion = "Thought: I should look it up.\nAction: search[capital of China]"
    assert extract_final_answer(prompt) == "Beijing"  # scoring the prompt would be wrong
    result = score_completion(completion, ["Beijing"])
    assert result == {"em": 0.0, "f1": 0.0, "answered": False, "prediction": None}


def test_score_completion_answered():
    result = score_completion("Thought: so.\nAction: Finish[the Paris]", ["Paris", "City of Light"])
    assert result["em"] == 1.0 and result["f1"] == 1.0 and result["answered"] is True


def test_bootstrap_ci_brackets_the_mean_and_is_seeded():
    values = np.random.default_rng(1).integers(0, 2, size=200).astype(float)
    mean, low, high = bootstrap_ci(values)
    assert low < mean < high and mean == pytest.approx(values.mean())
    # For a Bernoulli mean the 95% interval is about +-1.96 * sd / sqrt(n).
    expected = 2 * 1.96 * values.std() / np.sqrt(values.size)
    assert high - low == pytest.approx(expected, rel=0.2)
    assert bootstrap_ci(values, seed=0) == (mean, low, high)
    narrow = bootstrap_ci(values, confidence=0.5)
    assert high - low > narrow[2] - narrow[1]


@pytest.mark.parametrize("values", [[0.7], [1.0, 1.0, 1.0], [0.0] * 5])
def test_bootstrap_ci_degenerate(values):
    mean = float(np.mean(values))
    assert bootstrap_ci(values) == (mean, mean, mean)


def test_bootstrap_ci_empty_and_bad_input():
    assert all(np.isnan(v) for v in bootstrap_ci([]))
    with pytest.raises(ValueError):
        bootstrap_ci([1.0, float("nan")])
    with pytest.raises(ValueError):
        bootstrap_ci([1.0, 0.0], confidence=1.5)


@pytest.mark.parametrize(("scores", "reward", "expected"), [
    ({"em": 1.0, "f1": 1.0}, 1.0, {"em": 1.0, "f1": 1.0, "success": 1.0}),     # WorldQA, right
    ({"em": 0.0, "f1": 0.4}, 0.4, {"em": 0.0, "f1": 0.4, "success": 0.0}),     # QA, env.reward=f1
    ({}, 1.0, {"em": 1.0, "f1": 1.0, "success": 1.0}),                         # TextWorld, won
    ({"points": 2.0}, 0.75, {"em": 0.75, "f1": 0.75, "success": 0.0}),         # WebShop, partial
])
def test_outcome_scores_of_envs_with_and_without_an_answer(scores, reward, expected):
    assert outcome_scores(scores, reward) == expected
