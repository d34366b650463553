"""`talentrl envs list` and `talentrl envs sample`, run in-process through the real CLI."""

from __future__ import annotations

import json
import re

# The lexical retriever needs no model; the sample then builds in a few seconds.
LEXICAL = "env.retriever=lexical"


def test_envs_list_names_the_builtin_envs(run_cli):
    code, out, err = run_cli("envs", "list")
    assert code == 0, err
    names = re.findall(r"^[│|]\s*(\w+)\s*[│|]", out, flags=re.MULTILINE)
    assert {"worldqa", "qa"} <= set(names), out


def test_envs_sample_worldqa_prints_tasks_with_react_steps(run_cli):
    code, out, err = run_cli("envs", "sample", "worldqa", "-n", "2", LEXICAL)
    assert code == 0, err
    assert "worldqa-0-train-00000" in out and "worldqa-0-train-00001" in out
    assert "worldqa-0-train-00002" not in out
    assert len(re.findall(r"^success: ", out, flags=re.MULTILINE)) == 2
    for line in ("Thought 1:", "Action 1:", "Observation 1:"):
        assert re.search(rf"^{line}", out, flags=re.MULTILINE), line
    assert re.search(r"^Action \d+: finish\[", out, flags=re.MULTILINE)


def test_envs_sample_shows_a_noise_free_expert(run_cli):
    """A sample is a demonstration: even with env.noise=1 (an error in every training
    trajectory) the expert shown runs at noise 0 and solves these tasks."""
    code, out, err = run_cli("envs", "sample", "worldqa", "-n", "2", LEXICAL, "env.noise=1.0")
    assert code == 0, err
    assert re.findall(r"^success: (\w+)", out, flags=re.MULTILINE) == ["True", "True"]


def test_envs_sample_without_an_expert_shows_tasks_only(run_cli, tmp_path):
    questions, corpus = tmp_path / "q.jsonl", tmp_path / "c.jsonl"
    questions.write_text(
        json.dumps({"id": "q1", "question": "Where was Marie Curie born?", "answers": ["Warsaw"]})
        + "\n"
    )
    corpus.write_text(
        json.dumps({"id": "p1", "title": "Marie Curie", "contents": "She was born in Warsaw."})
        + "\n"
    )
    code, out, err = run_cli(
        "envs", "sample", "qa", "-n", "1", f"env.path={questions}", f"env.corpus={corpus}"
    )
    assert code == 0, err
    assert "Where was Marie Curie born?" in out and "Warsaw" in out
    assert "Action" not in out and "success:" not in out


def test_envs_sample_unknown_env_suggests_the_closest(run_cli):
    code, out, err = run_cli("envs", "sample", "worldqz", "-n", "1")
    assert code == 1
    assert "worldqz" in err and "did you mean" in err and "worldqa" in err


def test_a_lowercase_action_argument_is_printed_not_read_as_markup():
    from types import SimpleNamespace

    from talentrl_cli import report

    step = SimpleNamespace(thought="pick [red]", action="click[buy now]", observation="[back to search] page")
    with report.console.capture() as captured:
        report._print_trajectory(SimpleNamespace(steps=[step], success=True, final_answer="[x]"))
    text = captured.get()
    for literal in ("pick [red]", "click[buy now]", "[back to search] page", "answer: [x]"):
        assert literal in text, text
