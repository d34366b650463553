"""The token-level clipped surrogate with a k3 KL to the reference (DESIGN §2, step 6).

    weights = token_advantages(mask, a_route, a_exec)          # (B, T): A_route on ROUTE, A_exec on EXEC, 0 else
    logps = sequence_logps(model, ids, attention, T, route, active > 0)  # (B, T-1), TRL's selective_log_softmax
    loss, stats = clipped_loss(logps, old, ref, weights, active, n_active, ...)

The loss is TRL GRPOTrainer's (`dapo` normalisation): `-min(ratio A, clip(ratio, 1 - eps_low,
1 + eps_high) A) + beta * k3`, k3 = `exp(ref - logp) - (ref - logp) - 1`, summed over the
active tokens and divided by the active tokens of the whole optimizer step, across gradient
accumulation and processes (`n_active`), so every token weighs the same however the step is
split. Observation and prompt tokens are inactive: no loss, no KL, no gradient.
`rl.loss_agg=episode` weighs each rollout once instead (`episode_scale`).

Talent tokens use the label's own token log-probs in the sequence, not log pi_route
renormalised over the menu. The two differ by grad log Z (Z: the menu labels' summed
probability), whose coefficient is the mean advantage of the task's routing samples: exactly
0 for `exhaustive` (sum_t pi(t)(r(t) - b) = 0), 0 in expectation for `swap` (E r(t) - E r(t')
= b - b) and `terminal` (group-centred). So for these the expected gradient is the same, and
the label tokens need no extra K teacher-forced passes with gradient. Not for `ablate`: its
expected advantage is b - r(flat), which is not 0, so under ablate the label tokens also push
log Z (the chance of writing any menu label) by that amount. The menu distribution's own
gradient is unchanged, but the extra push is large when the router is confident (every
sampled label's contrast has the same sign): `bench/routing_credit.py` measures ablate with
the lowest gradient error of the sampled estimators and yet the slowest learning (pi(best)
short of 0.9 after 60 steps in 8 of 9 runs).
"""

from __future__ import annotations

from typing import Any

from talentrl_cli.rollout import EXEC, ROUTE


def token_advantages(masks: list[list[int]], a_route: Any, a_exec: Any) -> list[list[float]]:
    """Per-token weights of each trained rollout: its A_route on talent-label tokens, its
    A_exec on the execution tokens it generated, 0 on prompt and observation tokens."""
    out = []
    for mask, route, exe in zip(masks, a_route, a_exec, strict=True):
        values = {ROUTE: float(route), EXEC: float(exe)}
        out.append([values.get(m, 0.0) for m in mask])
    return out


def sequence_logps(model: Any, ids: Any, attention: Any, temperature: float = 1.0,
                   untempered: Any | None = None, needed: Any | None = None) -> Any:
    """log p(ids[:, t] | ids[:, :t]) for t >= 1, shape (B, T - 1), from logits / `temperature`.

    Each token's log-prob is the one of the distribution it was drawn from: the engine samples
    execution tokens at `rl.temperature` (TRL's GRPOTrainer divides the logits the same way),
    while a talent label is drawn from the exact pi_route, i.e. its tokens at temperature 1, so
    the positions in `untempered` (B, T - 1, bool: the label tokens) keep the plain logits.

    `needed` (B, T - 1, bool) limits the LM head and the log-softmax to the positions trained
    (transformers' boolean `logits_to_keep`, as `sft_train` does); the others are 0. A WorldQA
    episode trains ~30 of its ~600 positions, and projecting all of them onto the 49k
    vocabulary took 44 % of a SmolLM2 LoRA forward and backward (`bench/rl_logps.py`: 6.56 -> 3.67 s a row)."""
    import torch.nn.functional as F

    targets = ids[:, 1:]
    if needed is None or not bool(needed.any()):
        logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1]
        return _tempered_logps(logits.float(), targets, temperature, untempered)
    keep = F.pad(needed, (0, 1), value=False)  # over the input positions: t predicts t + 1
    logits = model(input_ids=ids, attention_mask=attention, logits_to_keep=keep).logits  # (kept, vocab)
    part = _tempered_logps(logits.float(), targets[needed], temperature,
                           None if untempered is None else untempered[needed])
    return part.new_zeros(targets.shape).masked_scatter(needed, part)


def _tempered_logps(logits: Any, targets: Any, temperature: float, untempered: Any | None) -> Any:
    from trl.trainer.utils import selective_log_softmax

    if float(temperature) == 1.0:
        return selective_log_softmax(logits, targets)
    logps = selective_log_softmax(logits / float(temperature), targets)
    if untempered is None or not bool(untempered.any()):
        return logps
    where = untempered.nonzero(as_tuple=True)
    return logps.index_put(where, selective_log_softmax(logits[where], targets[where]))


def episode_scale(active: Any) -> Any:
    """`rl.loss_agg=episode`: each row's active tokens weigh 1 / its active-token count, so
    every trained rollout carries the same total weight however long it ran (verl's
    seq-mean-token-mean); the normaliser is then the step's number of rollouts.

    Why it exists: under `token` (TRL's dapo), a long failed episode (a search loop to the step
    limit) spreads its negative advantage over many tokens and outweighs a short one. It was
    tested as the cause of RL teaching WorldQA's policy to finish after one search, and is not
    that cause: at `episode` (10 steps of 4 tasks, 150 dev questions) episodes got shorter
    still (mean turns 3.42 -> 2.35 against 3.41 at `token`) and RL - SFT EM was 0.0 [-9.3,
    +8.7] (docs/MEASUREMENTS.md). Kept as verl's alternative; the default stays `token`."""
    counts = active.sum(dim=1, keepdim=True).clamp(min=1)
    return active / counts


def clipped_loss(logps: Any, old_logps: Any, ref_logps: Any | None, advantages: Any, active: Any, n_active: float,
                 eps_low: float = 0.2, eps_high: float = 0.2, beta: float = 0.0,
                 scale: Any | None = None, route_beta: float = 0.0, route: Any | None = None) -> tuple[Any, dict[str, Any]]:
    """(loss, stats) for one micro-batch; all tensors (B, T) aligned to the predicted tokens.
    `scale` (default: `active`) weighs each token's loss; the sum is divided by `n_active`.
    The k3 KL weighs `beta` on every active token plus `route_beta` on the talent-label tokens
    (`route`, bool (B, T)); without `beta`, `ref_logps` is read on the label tokens only (the
    trainer scores the reference there alone). `kl_sum` in the stats is the unweighted k3 over
    the tokens it is taken on."""
    import torch

    active = active.to(logps.dtype)
    ratio = torch.exp(logps - old_logps)
    clipped = torch.clamp(ratio, 1 - eps_low, 1 + eps_high)
    per_token = -torch.min(ratio * advantages, clipped * advantages)
    kl = torch.zeros_like(logps)
    if ref_logps is not None and (beta or route_beta):
        on_label = route.to(logps.dtype) if route is not None else torch.zeros_like(logps)
        # masked before exp: a position without a reference score must not reach exp() (an inf
        # there would turn the gradient NaN even under a zero weight)
        gap = torch.where((active if beta else on_label) > 0, ref_logps - logps, torch.zeros_like(logps))
        kl = torch.exp(gap) - gap - 1
        per_token = per_token + (beta + route_beta * on_label) * kl
    weight = active if scale is None else scale.to(logps.dtype)
    loss = (per_token * weight).sum() / max(float(n_active), 1.0)
    with torch.no_grad():
        is_clipped = ((ratio < 1 - eps_low) & (advantages < 0)) | ((ratio > 1 + eps_high) & (advantages > 0))
        stats = {"kl_sum": float((kl * active).sum()), "clipped_sum": float((is_clipped.to(active.dtype) * active).sum()),
                 "tokens": float(active.sum())}
    return loss, stats
