"""`talentrl index`: embed a mine artifact's skills into an HNSW index with the talent prior.

    talentrl index                                   # inputs.mine=mine:latest
    talentrl index inputs.mine=mine:v3 index.M=16 index.ef=64 embedder.batch_size=32
    talentrl index query "Which film did the founder of Acme direct?" --talent bridge -k 5

Stores the hnswlib index, the skill ids, the float32 embeddings (`.npy`), the embedder's
identity (name, dim, normalisation, hash of its files), the talent weight matrix `w[t, s]`,
and copies of `skills.jsonl` and `talents.jsonl`, so retrieval needs only this artifact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from talentrl_cli.stages import Stage, register_stage


def render_skill(skill: Any, template: str) -> str:
    from talentrl_cli.errors import ConfigError

    try:
        return template.format(name=skill.name, when_to_use=skill.when_to_use, steps="; ".join(skill.steps))
    except (KeyError, IndexError, ValueError) as err:
        raise ConfigError(f"index.skill_template={template!r} does not format: {err}",
                          "use the fields {name}, {when_to_use} and {steps}") from None


def run(cfg: Any, inputs: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    from talentrl_cli.embedding import Embedder
    from talentrl_cli.jsonl import iter_jsonl
    from talentrl_cli.progress import current
    from talentrl_cli.schema import Skill, Talent
    from talentrl_cli.skillbank import SkillBank

    mine = inputs["mine"]
    skills = list(iter_jsonl(mine.file("skills.jsonl"), Skill))
    talents = list(iter_jsonl(mine.file("talents.jsonl"), Talent))
    with current().step(f"embedding {len(skills)} skills ({cfg.embedder.name_or_path})"):
        embedder = Embedder.from_config(cfg.embedder)
        vectors = embedder.encode([render_skill(s, str(cfg.index.skill_template)) for s in skills])
    params = {k: int(cfg.index[k]) for k in ("M", "ef_construction", "ef", "exact_below")}
    with current().step(f"building the index and the prior of {len(talents)} talents"):
        bank = SkillBank.build(skills, talents, vectors, embedder.identity(), params, int(cfg.index.oversample))
        bank.save(out_dir)
    with current().step("checking top-k agreement with exact scoring"):
        agreement = exact_agreement(bank, int(cfg.index.agreement_queries), int(cfg.index.k),
                                    float(cfg.index.lam), int(cfg.seed))
    return {"n_skills": len(skills), "n_talents": len(talents), "dim": int(vectors.shape[1]),
            "hnsw": bank.index.uses_hnsw, "exact_agreement": agreement}


def exact_agreement(bank: Any, n: int, k: int, lam: float, seed: int) -> float:
    """Share of random (query, talent) pairs whose top-k equals brute-force scoring."""
    import numpy as np

    if n <= 0 or not bank.skills:
        return 1.0
    rng = np.random.default_rng(seed)
    anchors = bank.index.embeddings[rng.integers(0, len(bank.skills), n)]
    queries = anchors + rng.normal(scale=0.05, size=anchors.shape).astype(np.float32)
    names = [t.name for t in bank.talents] or [None]
    talents = [names[i] for i in rng.integers(0, len(names), n)]
    hits = bank.retrieve(queries, talents, k=k, lam=lam)
    same = [[h.skill_id for h in row] == bank.exact_topk(q, t, k, lam)
            for row, q, t in zip(hits, queries, talents, strict=True)]
    return round(float(np.mean(same)), 4)


STAGE = register_stage(Stage(
    name="index",
    run=run,
    summary="Embed a mine artifact's skills into an HNSW index with the soft talent prior.",
    example="talentrl index inputs.mine=mine:latest index.M=32 index.ef=128",
    inputs={"mine": ("mine",)},
    sections=("seed", "index", "embedder"),
    headline=("n_skills", "exact_agreement"),
))
