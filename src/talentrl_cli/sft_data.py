"""The SFT dataset: one conversational example per labelled successful trajectory.

    sft.mode=talent   routing turn (answer: the mined label) + execution turns with R(x, label)
    sft.mode=flat     execution turns with flat retrieval R(x) (lam = 0, no talent), no routing turn
    sft.mode=none     execution turns with no skills at all

Inputs are artifacts only: the mine artifact's `labels.jsonl` and `trajectories.jsonl`, and
the index artifact's SkillBank (queried with the task text, k and lam from `index.*`).
Each example is `{"id", "talent", "skills", "messages"}`; `messages` goes to TRL, whose
assistant-only loss trains the talent answer and the Thought/Action turns and masks the
system prompt, the context and every observation (they are user turns). The examples are
saved as `sft_data.jsonl` in the artifact, for audit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from talentrl_cli import prompts
from talentrl_cli.errors import ArtifactError, ConfigError

MODES = ("talent", "flat", "none")
DATA_FILE = "sft_data.jsonl"


def load_labelled(mine: Any) -> list[tuple[Any, str]]:
    """(trajectory, talent label) for every labelled successful trajectory, by id order."""
    from talentrl_cli.jsonl import iter_jsonl
    from talentrl_cli.schema import Trajectory

    if "trajectories.jsonl" not in mine.manifest.get("files", {}):
        raise ArtifactError(f"{mine.ref} has no trajectories.jsonl (made by an older talentrl)",
                            "rerun it with `talentrl mine --force`")
    by_id = {t.id: t for t in iter_jsonl(mine.file("trajectories.jsonl"), Trajectory)}
    out = []
    for label in iter_jsonl(mine.file("labels.jsonl")):
        trajectory = by_id.get(label["trajectory_id"])
        if trajectory is None:
            raise ArtifactError(f"{mine.ref}: label for unknown trajectory {label['trajectory_id']!r}")
        if trajectory.success and trajectory.steps:
            out.append((trajectory, str(label["talent"])))
    return sorted(out, key=lambda pair: pair[0].id)


def without_strategies(labelled: Sequence[tuple[Any, str]], unseen: Sequence[str]) -> list[tuple[Any, str]]:
    """`labelled` less the trajectories whose task's gold strategy is in `unseen`.

    The transfer setting skill libraries exist for (`sft.unseen_strategies`): those task
    families stay in the mine and the index, so only their retrieved skills show the policy
    their procedure."""
    unseen_set = set(unseen)
    return [(t, label) for t, label in labelled if t.task.strategy not in unseen_set]


def build_examples(labelled: Sequence[tuple[Any, str]], bank: Any, query_vectors: Any, mode: str,
                   k: int, lam: float, tools: str = "",
                   action_format: str = prompts.ACTION_FORMAT, thoughts: bool = True) -> list[dict[str, Any]]:
    """The conversational examples for `mode`; `query_vectors[i]` embeds labelled[i]'s task;
    `tools` and `action_format` describe the environment's actions, as eval's prompts do.

    `thoughts=False` (`sft.thoughts`) trains each turn's action alone: the policy then acts
    without reasoning text, so SFT trains on fewer tokens and every rollout and eval turn
    decodes fewer (the parsers take an action-only turn; see docs/MEASUREMENTS.md for its measured EM)."""

    if mode not in MODES:
        raise ConfigError(f"sft.mode={mode!r} is not one of {', '.join(MODES)}")
    talents = {t.name: t for t in bank.talents}
    missing = sorted({label for _, label in labelled} - set(talents))
    if mode == "talent" and missing:
        raise ConfigError(f"labels name talents the index does not have: {', '.join(missing)}",
                          "inputs.index must be built from inputs.mine")
    hits = _retrieve(labelled, bank, query_vectors, mode, k, lam)
    examples = []
    for (trajectory, label), row in zip(labelled, hits, strict=True):
        talent = talents[label] if mode == "talent" else None
        skills = [bank.skill_by_id[h.skill_id] for h in row]
        messages = prompts.execution_messages(
            trajectory.task.question, talent, skills,
            trajectory.steps if thoughts else [s.model_copy(update={"thought": ""}) for s in trajectory.steps],
            talents=bank.talents if mode == "talent" else None, observe_last=False, tools=tools,
            hide=trajectory.task.answers, action_format=action_format,
            observation=prompts.first_observation(trajectory.task))
        examples.append({"id": trajectory.id, "talent": talent.name if talent else None,
                         "skills": [s.id for s in skills], "messages": messages})
    return examples


def _retrieve(labelled: Sequence[tuple[Any, str]], bank: Any, query_vectors: Any, mode: str,
              k: int, lam: float) -> list[list[Any]]:
    if mode == "none" or not labelled or not bank.skills:
        return [[] for _ in labelled]
    if mode == "flat":
        return bank.retrieve(query_vectors, None, k=k, lam=0.0)
    return bank.retrieve(query_vectors, [label for _, label in labelled], k=k, lam=lam)


def check_same_mine(mine: Any, index: Any) -> None:
    """The index must have been built from this very mine artifact (talent names, skill ids)."""
    built_from = index.manifest.get("inputs", {}).get("mine", {})
    if built_from.get("digest") and built_from["digest"] != mine.digest:
        raise ConfigError(f"inputs.index={index.ref} was built from {built_from.get('ref')}, "
                          f"not inputs.mine={mine.ref}",
                          f"pass inputs.mine={built_from.get('ref')} or rebuild the index from {mine.ref}")


def token_budget(tokenizer: Any, examples: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per example, the tokens each part of the protocol costs: the routing turn (system +
    task + menu, for talent examples), the execution context (the first execution user
    turn), the whole example, and how many of its tokens the loss trains on."""
    from talentrl_cli import prompts

    template = prompts.training_chat_template(tokenizer)
    rows = []
    for example in examples:
        messages = example["messages"]
        routed = bool(example.get("talent"))
        context_at = 3 if routed else 1  # [system, routing, <talent>, context, ...] or [system, context, ...]
        out = tokenizer.apply_chat_template(messages, tokenize=True, chat_template=template, return_dict=True,
                                            return_assistant_tokens_mask=True)
        rows.append({
            "routing": _tokens(tokenizer, messages[:2]) if routed else 0,
            "context": _tokens(tokenizer, messages[:context_at + 1]) - _tokens(tokenizer, messages[:context_at]),
            "example": len(out["input_ids"]), "trained": int(sum(out["assistant_masks"])),
        })
    return rows


def _tokens(tokenizer: Any, messages: Sequence[dict[str, str]]) -> int:
    from talentrl_cli import prompts

    return len(tokenizer.encode(prompts.render(tokenizer, messages), add_special_tokens=False)) if messages else 0
