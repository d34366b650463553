"""`talentrl mine`: distil skills from successful trajectories and discover the talents above them.

    talentrl mine                                              # WorldQA expert trajectories
    talentrl mine source=react source.path=../shared/data/trajectories/fireact_hotpotqa_dev_gpt35ft_react_465.jsonl \\
        source.gold=../shared/data/qa/hotpotqa_dev_all_7405.jsonl mine.n_talents=2
    talentrl mine source=alfworld_react source.path=../shared/data/alfworld/react_fewshot_trajectories.jsonl

Writes `skills.jsonl`, `talents.jsonl` (weighted skills `w[t, s]`, exemplar tasks, support),
`labels.jsonl` (one line per successful trajectory: its talent and membership),
`trajectories.jsonl` (those successful trajectories, for `sft`) and
`report.md`. Only successful trajectories yield skills; failures are counted in the report.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from talentrl_cli.stages import Stage, register_stage


def run(cfg: Any, inputs: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    from talentrl_cli.errors import DataError
    from talentrl_cli.jsonl import ReadStats
    from talentrl_cli.mining import pipeline
    from talentrl_cli.mining.sources import gold_labels, load_source
    from talentrl_cli.progress import current

    started, stats = time.perf_counter(), ReadStats()
    with current().step(f"reading source={cfg.source.kind}"):
        trajectories = load_source(cfg.source, str(cfg.mine.on_error), stats, int(cfg.seed))
    if stats.total_skipped:
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(stats.skipped.items()))
        current().note(f"mine: skipped {stats.total_skipped} bad input line(s) under mine.on_error=skip "
                       f"({reasons}; the first ones are in report.md)")
    successes = sorted((t for t in trajectories if t.success), key=lambda t: t.id)
    if not successes:
        raise DataError(f"no successful trajectory among {len(trajectories)} from source={cfg.source.kind}",
                        "mine needs successful trajectories (success: true) to distil skills from")
    with current().step(f"mining skills and talents from {len(successes)} successful trajectories"):
        result = pipeline.mine(successes, cfg, out_dir)
    metrics = pipeline.metrics(result, gold_labels(successes, cfg.source))
    metrics.update(n_trajectories=len(trajectories), n_failed=len(trajectories) - len(successes),
                   skipped_lines=stats.total_skipped, seconds=round(time.perf_counter() - started, 2))
    pipeline.write_report(out_dir / "report.md", result, metrics, stats)
    return metrics


STAGE = register_stage(Stage(
    name="mine",
    run=run,
    summary="Distil skills from trajectories and discover the talents above them.",
    example="talentrl mine source=react source.path=trajs.jsonl mine.n_talents=auto",
    sections=("seed", "source", "mine", "embedder"),
    headline=("n_skills", "n_talents"),
))
