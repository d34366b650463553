import numpy as np
import pytest
from omegaconf import OmegaConf

from talentrl_cli.errors import ConfigError
from talentrl_cli.mining.pipeline import merge_threshold
from talentrl_cli.mining.skills import Extraction, merge_near_duplicates
from talentrl_cli.schema import Skill


def _extraction():
    skills = [Skill(id=f"s{i}", name=name, when_to_use="", steps=[name], support=int(sup))
              for i, (name, sup) in enumerate([("a", 2), ("a'", 1), ("b", 1)])]
    usage = np.array([[1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)
    return Extraction(skills, usage)


def test_near_duplicates_merge_into_the_most_supported_with_the_union_of_usage():
    vectors = np.array([[1.0, 0.0], [0.999, 0.045], [0.0, 1.0]])
    merged = merge_near_duplicates(_extraction(), vectors, threshold=0.95)
    assert [s.id for s in merged.skills] == ["s0", "s2"]
    assert merged.skills[0].support == 3 and merged.skills[0].meta["merged"] == ["s1"]
    assert merged.usage.tolist() == [[1, 0], [1, 0], [1, 0], [0, 1]]


def test_threshold_one_merges_nothing():
    vectors = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert len(merge_near_duplicates(_extraction(), vectors, threshold=1.0).skills) == 3


@pytest.mark.parametrize(("extractor", "value", "expected"),
                         [("template", "auto", 1.0), ("llm", "auto", 0.95), ("template", 0.9, 0.9)])
def test_merge_threshold_auto_keeps_template_patterns_apart(extractor, value, expected):
    cfg = OmegaConf.create({"extractor": extractor, "merge_cosine": value})
    assert merge_threshold(cfg) == expected


def test_merge_threshold_names_the_key_when_it_is_not_a_number():
    with pytest.raises(ConfigError, match="mine.merge_cosine"):
        merge_threshold(OmegaConf.create({"extractor": "template", "merge_cosine": "high"}))
