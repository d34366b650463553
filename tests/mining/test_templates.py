"""Action templates are domain-agnostic: slots come from where spans come from."""

from talentrl_cli.mining.templates import (
    abstract_action,
    collapse_runs,
    describe_template,
    short_template,
    split_action,
    vocabulary,
)


def test_split_action_handles_any_tool_and_free_form():
    assert split_action("Query_DB[Acme Corp revenue]") == ("query_db", "Acme Corp revenue", True)
    assert split_action("take mug 1 from cabinet 2") == ("take", "mug 1 from cabinet 2", False)
    assert split_action("") == ("", "", False)


def test_slots_by_origin():
    question = vocabulary("Who directed the film Kessler Road?")
    seen = vocabulary("Kessler Road was directed by Amira Sol.")
    assert abstract_action("search[Kessler Road]", question, set()) == "search[<Q>]"
    assert abstract_action("search[Amira Sol]", question, seen) == "search[<OBS>]"
    assert abstract_action("finish[1987]", question, seen) == "finish[<NUM>]"
    assert abstract_action("finish[Yes]", question, seen) == "finish[<YESNO>]"
    assert abstract_action('lookup["directed by"]', question, seen) == "lookup[<QUOTE>]"
    assert abstract_action("calc[Zorblax]", question, seen) == "calc[<ENT>]"


def test_free_form_commands_keep_their_grammar():
    question = vocabulary("put some spraybottle on toilet.")
    seen = vocabulary("you see a cabinet 1 and a toilet 1")
    template = abstract_action("take spraybottle 2 from cabinet 2", question, seen)
    assert template == "take <Q> <NUM> from <OBS> <NUM>"


def test_runs_collapse_and_describe():
    assert collapse_runs(["a", "a", "a", "b", "a"]) == ["a+", "b", "a"]
    assert describe_template("go to <OBS> <NUM>+") == "go to <found entity> <number> (repeat)"
    assert short_template("search[<Q>]+") == "search-task-each" and short_template("finish[<YESNO>]") == "finish-boolean"


def test_a_demonstration_keeps_the_actions_and_slots_the_answer():
    from talentrl_cli.mining.pipeline import demonstration
    from talentrl_cli.schema import Step, Task, Trajectory

    task = Task(id="t", question="How old was the founder of Vothas Pharma?", answers=["44"])
    steps = [Step(action="search[Vothas Pharma]", observation="Founded by Riatos Tynym in 1950."),
             Step(action="search[Riatos Tynym]", observation="Riatos Tynym (born 1906)."),
             Step(action="finish[44]", observation="")]
    demo = demonstration(Trajectory(id="x", task=task, steps=steps, success=True))
    assert demo == {"task_id": "t", "question": task.question,
                    "actions": ["search[Vothas Pharma]", "search[Riatos Tynym]", "finish[<number>]"]}
    yes = Trajectory(id="y", task=task, steps=[Step(action="finish[yes]", observation="")], success=True)
    assert demonstration(yes)["actions"] == ["finish[<boolean>]"]


def test_demonstration_candidates_spread_over_the_talent():
    import numpy as np

    from talentrl_cli.mining.pipeline import _diverse

    # rows 0-2 form one family near the centroid, row 3 is another family
    vectors = np.array([[1.0, 0.0], [0.99, 0.141], [0.99, -0.141], [0.0, 1.0], [0.6, 0.8]])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = np.array([0, 1, 2, 3])
    assert _diverse(rows, vectors, 2) == [1, 3]  # the centroid's nearest, then the farthest from it
    assert _diverse(rows, vectors, 3) == [1, 3, 2]  # row 2 is less like {1, 3} than row 0 is
    assert len(_diverse(rows, vectors, 9)) == 4 and _diverse(np.array([], dtype=int), vectors, 3) == []
