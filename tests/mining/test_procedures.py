from talentrl_cli.mining.procedures import closed_frequent, contains, count_patterns, occurrences


def test_closed_frequent_patterns():
    sequences = [["a", "b", "c"], ["a", "b", "c"], ["a", "b", "d"], ["x", "a", "b"]]
    support = count_patterns(sequences, max_len=3)
    assert support[("a", "b")] == 4 and support[("a", "b", "c")] == 2
    closed = closed_frequent(support, min_support=2)
    # ("a",) and ("b",) are dominated by ("a", "b") with the same support 4
    assert closed == {("a", "b"): 4, ("a", "b", "c"): 2}


def test_contains_and_occurrences():
    sequences = [["a", "b", "c"], ["c", "a"], ["a", "c", "b"]]
    assert contains(sequences[0], ("b", "c")) and not contains(sequences[2], ("b", "c"))
    assert occurrences(sequences, [("a",), ("b", "c")]) == [[0, 1, 2], [0]]
