"""The clipped surrogate's aggregation, checked on exact numbers (no model)."""

from __future__ import annotations

import pytest
import torch

from talentrl_cli.rl.loss import clipped_loss, episode_scale

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
