"""QA answer scoring (official HotpotQA/SQuAD/FlashRAG rules) and bootstrap confidence intervals.

Public API (DESIGN §7): `exact_match(prediction, answers)` and `f1(prediction, answers)`,
each the max over the gold answers, which may be one string or a list of aliases.

Normalisation follows SQuAD v1.1 / HotpotQA / FlashRAG exactly (shared/data SOURCES.md §2):
lower-case, delete ASCII `string.punctuation` (no space inserted), replace whole-word
a/an/the with a space, collapse whitespace. No accent folding, no NFKC, no number words.
`f1` adds HotpotQA's rule: a yes/no/noanswer prediction or gold that differs from the
other side scores 0 for that gold; like FlashRAG, it is applied per alias.
`f1_squad` is plain SQuAD F1 without that rule.

Answers are extracted only from the model's own completion (`extract_final_answer`), never
from the prompt. Search-R1 scores a string that includes the prompt, whose few-shot example
holds `<answer> Beijing </answer>`, and has to special-case "fewer than 2 matches"; passing
only the completion avoids that class of bug by construction.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Sequence

import numpy as np
from scipy import stats as _scipy_stats

_PUNCTUATION = frozenset(string.punctuation)  # ASCII only, as in the official scripts
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_HOTPOT_SPECIAL = frozenset({"yes", "no", "noanswer"})
# `finish[` as a whole word, any case: Finish[...] (ReAct/Reflexion) and finish[...] (FireAct).
_FINISH = re.compile(r"\bfinish\[", re.IGNORECASE)


def normalize_answer(text: str) -> str:
    """SQuAD/HotpotQA normalisation: lower, drop ASCII punctuation, drop articles, squash spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _as_answers(answers: str | Sequence[str]) -> list[str]:
    if isinstance(answers, str):
        return [answers]
    answers = list(answers)
    if not all(isinstance(a, str) for a in answers):
        raise TypeError(f"answers must be strings, got {answers!r}")
    return answers


def exact_match(prediction: str | None, answers: str | Sequence[str]) -> float:
    """1.0 if the normalised prediction equals any normalised gold answer, else 0.0."""
    if prediction is None:
        return 0.0
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in _as_answers(answers)))


def _token_f1(pred: str, gold: str) -> float:
    """F1 over whitespace tokens of two normalised strings (multiset overlap)."""
    pred_tokens, gold_tokens = pred.split(), gold.split()
    overlap = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if overlap == 0:
        return 0.0  # also the empty-vs-empty case, as in the official scripts
    precision = overlap / len(pred_tokens)
    recall = overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _hotpot_f1(pred: str, gold: str) -> float:
    special = pred in _HOTPOT_SPECIAL or gold in _HOTPOT_SPECIAL
    if special and pred != gold:
        return 0.0
    return _token_f1(pred, gold)


def f1(prediction: str | None, answers: str | Sequence[str]) -> float:
    """HotpotQA F1 (with the yes/no/noanswer rule per alias), max over the gold answers."""
    if prediction is None:
        return 0.0
    pred = normalize_answer(prediction)
    return max((_hotpot_f1(pred, normalize_answer(g)) for g in _as_answers(answers)), default=0.0)


def f1_squad(prediction: str | None, answers: str | Sequence[str]) -> float:
    """Plain SQuAD v1.1 F1, max over the gold answers."""
    if prediction is None:
        return 0.0
    pred = normalize_answer(prediction)
    return max((_token_f1(pred, normalize_answer(g)) for g in _as_answers(answers)), default=0.0)


def extract_final_answer(completion: str) -> str | None:
    """The answer of the last complete `finish[...]` action in `completion`, or None.

    Pass only the model's own completion, never the prompt: a prompt with an example
    `finish[Beijing]` must not score. Brackets inside the answer are balanced
    (`finish[Star Wars [film]]`); an unclosed `finish[` (cut-off generation) is ignored.
    """
    answer = None
    for match in _FINISH.finditer(completion):
        closed = _bracket_content(completion, match.end())
        if closed is not None:
            answer = closed.strip()
    return answer


def _bracket_content(text: str, start: int) -> str | None:
    """Text from `start` up to the `]` that closes the `[` just before it; None if unclosed."""
    depth = 1
    for i in range(start, len(text)):
        if text[i] == "[":
            depth += 1
        elif text[i] == "]":
            depth -= 1
            if depth == 0:
                return text[start:i]
    return None


def score_completion(completion: str, answers: str | Sequence[str]) -> dict:
    """EM and F1 of the final answer in a completion; no answer scores 0 (`answered=False`)."""
    prediction = extract_final_answer(completion)
    return {
        "em": exact_match(prediction, answers),
        "f1": f1(prediction, answers),
        "answered": prediction is not None,
        "prediction": prediction,
    }


def outcome_scores(scores: dict[str, float], reward: float) -> dict[str, float]:
    """EM, F1 and success of one episode, as eval's table and rl's log both count them. An env
    with no answer to match (TextWorld, ALFWorld, WebShop) reports no `em`: its EM and F1 are
    its reward, and success is reward 1 (WebShop's partial rewards are not successes)."""
    em = float(scores.get("em", reward))
    return {"em": em, "f1": float(scores.get("f1", em)), "success": float(reward >= 1.0)}


def bootstrap_ci(
    values: Sequence[float],
    confidence: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(mean, low, high): a percentile bootstrap CI of the mean via `scipy.stats.bootstrap`.

    With fewer than 2 values or all values equal there is nothing to resample, so the
    interval collapses to the mean (scipy would warn or return NaN). No values: all NaN.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    data = np.asarray(values, dtype=float).ravel()
    if data.size == 0:
        return (math.nan, math.nan, math.nan)
    if not np.all(np.isfinite(data)):
        raise ValueError("bootstrap_ci: values contain NaN or infinity")
    mean = float(data.mean())
    if data.size < 2 or np.ptp(data) == 0:
        return (mean, mean, mean)
    result = _scipy_stats.bootstrap(
        (data,),
        np.mean,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    ci = result.confidence_interval
    return (mean, float(ci.low), float(ci.high))
