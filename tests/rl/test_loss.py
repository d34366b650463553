"""The clipped surrogate's aggregation, checked on exact numbers (no model)."""

from __future__ import annotations

import math

import pytest
import torch

from talentrl_cli.rl.loss import clipped_loss, episode_scale, sequence_logps

# two rollouts: one active token with advantage +1, three with advantage -1 (ratio 1 everywhere)
ACTIVE = torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
ADV = torch.tensor([[1.0, 0.0, 0.0], [-1.0, -1.0, -1.0]])
LOGPS = torch.zeros(2, 3, requires_grad=True)


def test_token_aggregation_lets_the_longer_rollout_dominate():
    loss, stats = clipped_loss(LOGPS, LOGPS.detach(), None, ADV, ACTIVE, n_active=4)
    assert float(loss.detach()) == pytest.approx((-1 + 3) / 4) and stats["tokens"] == 4


def test_episode_aggregation_weighs_each_rollout_once():
    scale = episode_scale(ACTIVE)
    assert torch.allclose(scale, torch.tensor([[1, 0, 0], [1 / 3, 1 / 3, 1 / 3]]))
    loss, _ = clipped_loss(LOGPS, LOGPS.detach(), None, ADV, ACTIVE, n_active=2, scale=scale)
    assert float(loss.detach()) == pytest.approx(0.0, abs=1e-6)
    (grad,) = torch.autograd.grad(loss, LOGPS)
    # d loss / d logp = -A * scale / n: the short rollout's one token gets as much push as the
    # long rollout's three together
    assert torch.allclose(grad, torch.tensor([[-0.5, 0, 0], [1 / 6, 1 / 6, 1 / 6]]))


def test_a_row_without_active_tokens_has_no_weight():
    assert episode_scale(torch.zeros(1, 4)).tolist() == [[0, 0, 0, 0]]


class _FixedLogits(torch.nn.Module):
    """A 'model' whose logits are a fixed tensor (B, T, V), for checking the log-prob maths."""

    def __init__(self, logits: torch.Tensor) -> None:
        super().__init__()
        self.logits = torch.nn.Parameter(logits)

    def forward(self, input_ids, attention_mask, logits_to_keep=None):
        logits = self.logits if logits_to_keep is None else self.logits[logits_to_keep]
        return type("Out", (), {"logits": logits})()


def test_execution_tokens_are_scored_at_the_sampling_temperature_and_labels_at_one():
    torch.manual_seed(0)
    logits, ids = torch.randn(1, 4, 5), torch.tensor([[0, 3, 1, 4]])
    label = torch.tensor([[True, False, False]])  # the first predicted token is a talent label's
    model = _FixedLogits(logits)
    got = sequence_logps(model, ids, torch.ones_like(ids), temperature=0.5, untempered=label)
    plain = torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None])[..., 0]
    tempered = torch.log_softmax(logits[:, :-1] / 0.5, -1).gather(-1, ids[:, 1:, None])[..., 0]
    assert torch.allclose(got[0, 0], plain[0, 0]) and torch.allclose(got[0, 1:], tempered[0, 1:])
    assert not torch.allclose(plain[0, 1:], tempered[0, 1:])
    assert torch.allclose(sequence_logps(_FixedLogits(logits), ids, torch.ones_like(ids)), plain)
    got[0, 0].backward()  # the replaced label position still carries its gradient, d/dz of log_softmax(z)
    expected = torch.nn.functional.one_hot(ids[0, 1], 5) - torch.softmax(logits[0, 0], -1)
    assert torch.allclose(model.logits.grad[0, 0], expected) and model.logits.grad[0, 1:].abs().sum() == 0


def test_only_the_needed_positions_reach_the_lm_head_and_they_score_the_same():
    """`needed` (the trained tokens) on the tiny Qwen2: the same log-probs and gradients at
    those positions as the full sequence's, 0 elsewhere."""
    from talentrl_cli.config import compose
    from talentrl_cli.models import load_policy

    model, _ = load_policy(compose([]).model)
    model.train()
    torch.manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (2, 12))
    needed = torch.zeros(2, 11, dtype=torch.bool)
    needed[0, 3:5], needed[1, 8] = True, True
    label = torch.zeros(2, 11, dtype=torch.bool)
    label[0, 3] = True
    full = sequence_logps(model, ids, torch.ones_like(ids), 0.7, label)
    (grad_full,) = torch.autograd.grad(full[needed].sum(), model.lm_head.weight)
    part = sequence_logps(model, ids, torch.ones_like(ids), 0.7, label, needed)
    (grad_part,) = torch.autograd.grad(part[needed].sum(), model.lm_head.weight)
    assert torch.allclose(part[needed], full[needed], atol=1e-5)
    assert part[~needed].abs().sum() == 0
    assert torch.allclose(grad_part, grad_full, atol=1e-5)


def test_route_beta_puts_the_k3_kl_on_the_label_tokens_only():
    """beta 0, route_beta 2: k3 at the label token (logp log 0.5, reference log 0.8) is
    1.6 - ln 1.6 - 1 and its gradient 2 (1 - 1.6) / n; the execution token, whose reference
    was never scored (0), adds nothing and no NaN however unlikely its token."""
    logps = torch.tensor([[math.log(0.5), -200.0]], requires_grad=True)
    ref = torch.tensor([[math.log(0.8), 0.0]])
    route = torch.tensor([[True, False]])
    active = torch.ones(1, 2)
    loss, stats = clipped_loss(logps, logps.detach(), ref, torch.zeros(1, 2), active, n_active=2,
                               route_beta=2.0, route=route)
    k3 = 1.6 - math.log(1.6) - 1
    assert float(loss.detach()) == pytest.approx(2 * k3 / 2) and stats["kl_sum"] == pytest.approx(k3)
    (grad,) = torch.autograd.grad(loss, logps)
    assert torch.allclose(grad, torch.tensor([[2 * (1 - 1.6) / 2, 0.0]]))
