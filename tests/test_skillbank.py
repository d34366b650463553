"""Talent-prior retrieval: exactness against brute force, the prior's lift, safety checks."""

from __future__ import annotations

import numpy as np
import pytest

from talentrl_cli.errors import ArtifactError, ConfigError
from talentrl_cli.schema import Skill, Talent
from talentrl_cli.skillbank import SkillBank

IDENTITY = {"name": "fake", "dim": 32, "normalize": True, "files_hash": "abc"}


def _bank(n=3000, k_talents=6, dim=32, seed=0, sparse=True, **index_params):
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    skills = [Skill(id=f"s{i}", name=f"skill {i}", when_to_use="x", steps=["y"]) for i in range(n)]
    talents = []
    for t in range(k_talents):
        chosen = rng.choice(n, size=min(150, n) if sparse else n, replace=False)
        weights = {f"s{i}": round(float(w), 4) for i, w in zip(chosen, rng.uniform(0.05, 1, len(chosen)), strict=True)}
        talents.append(Talent(name=f"t{t}", description="d", skills=weights))
    params = {"M": 16, "ef_construction": 100, "ef": 64, "exact_below": 0, **index_params}
    return SkillBank.build(skills, talents, vectors, IDENTITY, params), rng


@pytest.mark.parametrize("sparse", [True, False])
def test_topk_matches_brute_force_in_99_percent(sparse):
    bank, rng = _bank(sparse=sparse)
    queries = bank.index.embeddings[rng.integers(0, 3000, 300)] + rng.normal(scale=0.1, size=(300, 32))
    talents = [f"t{i}" for i in rng.integers(0, 6, 300)]
    hits = bank.retrieve(queries.astype(np.float32), talents, k=5, lam=0.3)
    same = [[h.skill_id for h in row] == bank.exact_topk(q, t, 5, 0.3)
            for row, q, t in zip(hits, queries, talents, strict=True)]
    assert np.mean(same) >= 0.99


@pytest.mark.parametrize("lam", [0.3, 2.0, -0.3])
def test_every_weighted_skill_is_reachable_without_a_full_scan(monkeypatch, lam):
    """Dense talents (every skill weighted) and a 16-row block: skills past the block are
    gathered when the bar is low, and lam > 0 never falls back to scoring every skill. The
    index stage's default HNSW settings (conf/index/default.yaml)."""
    import talentrl_cli.skillbank as skillbank

    monkeypatch.setattr(skillbank, "TALENT_BLOCK_ROWS", 16)
    bank, rng = _bank(sparse=False, M=32, ef_construction=200, ef=128)
    queries = bank.index.embeddings[rng.integers(0, 3000, 200)] + rng.normal(scale=0.1, size=(200, 32))
    talents = [f"t{i}" for i in rng.integers(0, 6, 200)]
    hits = bank.retrieve(queries.astype(np.float32), talents, k=5, lam=lam)
    same = [[h.skill_id for h in row] == bank.exact_topk(q, t, 5, lam)
            for row, q, t in zip(hits, queries, talents, strict=True)]
    assert np.mean(same) >= 0.99
    assert bank.brute_force_queries == 0 or lam < 0


def test_prior_lifts_a_skill_hnsw_would_not_return():
    bank, rng = _bank()
    query = rng.normal(size=32).astype(np.float32)
    plain = [h.skill_id for h in bank.retrieve(query, None, k=5, lam=0.0)[0]]
    talent_top = max(bank.talents[0].skills.items(), key=lambda kv: kv[1])[0]
    lifted = [h.skill_id for h in bank.retrieve(query, "t0", k=5, lam=5.0)[0]]
    assert talent_top not in plain and talent_top in lifted
    hit = bank.retrieve(query, "t0", k=5, lam=5.0)[0][0]
    assert hit.score == pytest.approx(hit.cos + hit.prior)


def test_batched_equals_one_at_a_time():
    bank, rng = _bank()
    queries = rng.normal(size=(20, 32)).astype(np.float32)
    batched = bank.retrieve(queries, "t1", k=5)
    single = [bank.retrieve(q, "t1", k=5)[0] for q in queries]
    assert batched == single


def test_a_skill_from_both_hnsw_and_the_talent_list_counts_once():
    bank, _ = _bank()
    top = max(bank.talents[0].skills.items(), key=lambda kv: kv[1])[0]
    query = bank.index.embeddings[bank.index.ids.index(top)]
    ids = [h.skill_id for h in bank.retrieve(query, "t0", k=5, lam=0.3)[0]]
    assert ids[0] == top and len(set(ids)) == 5
    assert ids == bank.exact_topk(query, "t0", 5, 0.3)


def test_one_talent_per_query_or_one_for_all():
    bank, rng = _bank(n=200)
    queries = rng.normal(size=(3, 32)).astype(np.float32)
    assert bank.retrieve(queries, "t2") == bank.retrieve(queries, ["t2"] * 3)
    with pytest.raises(ValueError, match="2 talents for 3 queries"):
        bank.retrieve(queries, ["t0", "t1"])


def test_unknown_talent_is_a_config_error():
    bank, _ = _bank(n=100)
    with pytest.raises(ConfigError, match="unknown talent"):
        bank.retrieve(np.ones(32, dtype=np.float32), "nope")


def test_save_load_roundtrip_and_embedder_check(tmp_path):
    bank, rng = _bank(n=500)
    bank.save(tmp_path)
    loaded = SkillBank.load(tmp_path, IDENTITY)
    query = rng.normal(size=32).astype(np.float32)
    assert loaded.retrieve(query, "t2") == bank.retrieve(query, "t2")
    with pytest.raises(ArtifactError, match="files_hash"):
        SkillBank.load(tmp_path, {**IDENTITY, "files_hash": "other"})
    with pytest.raises(ArtifactError, match="dim"):
        SkillBank.load(tmp_path, {**IDENTITY, "dim": 384})


def test_corrupt_index_is_caught_before_hnswlib_reads_it(tmp_path):
    bank, _ = _bank(n=500)
    bank.save(tmp_path)
    index_file = tmp_path / "index" / "index.bin"
    data = bytearray(index_file.read_bytes())
    data[len(data) // 2] ^= 0xFF
    index_file.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="index.bin"):
        SkillBank.load(tmp_path, IDENTITY)
