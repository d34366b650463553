"""Advantage estimators: pure functions of rewards, group ids and masks (DESIGN §2).

Two small registries keyed by config strings, in the manner of verl's `register_adv_est`:

    EXECUTION["grpo"](credit)      -> A_exec, one value per trained rollout
    ROUTING[rl.routing_credit](credit, a_exec) -> A_route, one value per trained rollout

`Credit` holds, per trained rollout i of a step (N of them): its reward `r_i`, its task's
group id, the rewards of its M matched interventions `r'_{i,m}` (with a mask, so a rollout may
have fewer), and pi_route(t_i | x) (exhaustive routing only). Nothing here sees a model, so
every estimator is unit-tested on hand-computed groups and by exact enumeration
(`tests/rl/test_advantages.py`).

One reward scale: the env's reward in [0, 1] (WorldQA: exact match), never reshaped. A_exec
is a z-score within the task's group; A_route is the raw contrast divided by the standard
deviation of the step's rewards (`rl.route_scale=reward`), so both are in units of the
rewards' spread and a routing step is about as large as an execution step.

- `grpo`: `A_exec_i = (r_i - mean_g r) / (std_g r + eps)`, the sample standard deviation
  (n - 1), as TRL's GRPOTrainer computes it. A group of equal rewards gives 0.
- `matched`: `A_route_i = r_i - mean_m r'_{i,m}` (the matched-intervention contrast), over
  the step's reward std + eps (`rl.route_scale=reward`; `contrast`: the contrasts' own std,
  which inflates a step with few nonzero contrasts: `route_scale`). Unbiased when the
  intervention talent is drawn independently of t_i (`swap`) or is the flat context
  (`ablate`); `swap_other` is biased (see `rl.interventions`).
- `matched_distinct` (`rl.intervention=swap_distinct`): `(1 - pi(t_i|x)) (r_i - mean_m r'_{i,m})`,
  the interventions drawn from pi_route without t_i: `swap`'s credit with its draws of t_i
  (contrast 0) integrated out, so the same expectation at no more variance.
- `exhaustive`: every talent ran once on the task, so the routing loss is the exact expected
  gradient `-sum_t pi(t|x) * stopgrad(r(t) - b)`, `b = sum_t pi(t|x) r(t)`. Its gradient is
  `sum_t pi(t|x) (r(t) - b) grad log pi(t|x)`, so the rollout of talent t carries the weight
  `A_route = pi(t|x) (r(t) - b)` on its label tokens, divided by their own std (a positive
  constant per step: the direction stays the exact gradient's; unscaled, these weights of
  ~0.1 drown beside A_exec's ~1 on the tokens both move).
- `terminal`: the talent tokens get A_exec (plain GRPO credit), the baseline the paper argues
  cannot isolate the routing decision.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from talentrl_cli.registry import Registry

EPS = 1e-6


@dataclass
class Credit:
    rewards: np.ndarray                                 # (N,) r_i of the trained rollouts
    group: np.ndarray                                   # (N,) task id (any hashable ints)
    baseline: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))       # (N, M) r'_{i,m}
    baseline_mask: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (N, M) 1 where r'_{i,m} exists
    probs: np.ndarray = field(default_factory=lambda: np.zeros(0))              # (N,) pi_route(t_i | x)

    def __post_init__(self) -> None:
        self.rewards = np.asarray(self.rewards, dtype=np.float64)
        self.group = np.asarray(self.group)
        self.baseline = np.asarray(self.baseline, dtype=np.float64)
        self.baseline_mask = (np.asarray(self.baseline_mask, dtype=np.float64) if np.size(self.baseline_mask)
                              else np.ones_like(self.baseline))
        self.probs = np.asarray(self.probs, dtype=np.float64)


EXECUTION: Registry[Callable[[Credit], np.ndarray]] = Registry("execution advantage estimator (rl.exec_estimator)")
ROUTING: Registry[Callable[[Credit, np.ndarray], np.ndarray]] = Registry("routing credit (rl.routing_credit)")


@EXECUTION.register("grpo")
def grpo(credit: Credit, eps: float = EPS) -> np.ndarray:
    out = np.zeros_like(credit.rewards)
    for g in np.unique(credit.group):
        rows = credit.group == g
        r = credit.rewards[rows]
        std = r.std(ddof=1) if len(r) > 1 else 0.0
        out[rows] = (r - r.mean()) / (std + eps) if std > 0 else 0.0
    return out


def route_scale(credit: Credit, raw: np.ndarray, scale_by: str) -> float:
    """The positive number a step's raw routing credit is divided by (`rl.route_scale`):
    `reward`, the std of the step's trained-rollout rewards, the scale GRPO's A_exec is in;
    `contrast`, the std of the raw credit itself. The second blows up a step whose credit is
    sparse: one nonzero contrast among N becomes +-sqrt(N - 1) whatever its size, and with a
    confident router most swap draws repeat the sampled talent and contrast 0 (measured on
    SmolLM2: 11-16 of 16 interventions reused a step, one contrast becoming +-4.1)."""
    if scale_by == "contrast":
        spread = raw.std()
    elif scale_by == "reward":
        spread = credit.rewards.std()
    else:
        from talentrl_cli.errors import ConfigError

        raise ConfigError(f"rl.route_scale={scale_by!r} is not known", "use reward or contrast")
    return float(spread) + EPS if spread > 0 else 1.0


@ROUTING.register("matched")
def matched(credit: Credit, a_exec: np.ndarray | None = None, scale: bool = True,
            scale_by: str = "reward") -> np.ndarray:
    contrast = matched_contrast(credit)
    return contrast / route_scale(credit, contrast, scale_by) if scale and len(contrast) > 1 else contrast


def matched_contrast(credit: Credit) -> np.ndarray:
    """`r_i - mean_m r'_{i,m}`; 0 for a rollout with no intervention."""
    counts = credit.baseline_mask.sum(axis=1)
    if credit.baseline.shape[0] != len(credit.rewards):
        raise ValueError("matched routing credit needs one row of intervention rewards per rollout")
    means = np.divide((credit.baseline * credit.baseline_mask).sum(axis=1), counts,
                      out=np.zeros_like(credit.rewards), where=counts > 0)
    return np.where(counts > 0, credit.rewards - means, 0.0)


@ROUTING.register("matched_distinct")
def matched_distinct(credit: Credit, a_exec: np.ndarray | None = None, scale: bool = True,
                     scale_by: str = "reward") -> np.ndarray:
    """`rl.intervention=swap_distinct`: the contrast against interventions drawn without t_i,
    weighed by the chance 1 - pi(t_i | x) that a `swap` draw differs from t_i."""
    if len(credit.probs) != len(credit.rewards):
        raise ValueError("matched_distinct routing credit needs pi_route(t_i | x) for every rollout")
    contrast = (1.0 - credit.probs) * matched_contrast(credit)
    return contrast / route_scale(credit, contrast, scale_by) if scale and len(contrast) > 1 else contrast


@ROUTING.register("exhaustive")
def exhaustive(credit: Credit, a_exec: np.ndarray | None = None, scale: bool = True,
               scale_by: str = "contrast") -> np.ndarray:
    """Each group holds every talent's rollout once, and `probs` their pi_route(t | x)."""
    if len(credit.probs) != len(credit.rewards):
        raise ValueError("exhaustive routing needs pi_route(t | x) for every rollout")
    out = np.zeros_like(credit.rewards)
    for g in np.unique(credit.group):
        rows = credit.group == g
        p, r = credit.probs[rows], credit.rewards[rows]
        out[rows] = p * (r - (p * r).sum() / p.sum())
    return out / route_scale(credit, out, scale_by) if scale and len(out) > 1 else out


@ROUTING.register("terminal")
def terminal(credit: Credit, a_exec: np.ndarray | None = None) -> np.ndarray:
    return grpo(credit) if a_exec is None else np.asarray(a_exec, dtype=np.float64)


def zero_advantage_share(credit: Credit) -> float:
    """The share of groups whose rewards are all equal (they teach execution nothing)."""
    groups = np.unique(credit.group)
    flat = sum(1 for g in groups if np.ptp(credit.rewards[credit.group == g]) == 0)
    return flat / len(groups) if len(groups) else 0.0


def informative_groups(group: np.ndarray, a_exec: np.ndarray, a_route: np.ndarray) -> list[int]:
    """The groups, in first-seen order, with a nonzero advantage on some rollout: execution
    or routing. The rest add no gradient (without KL); DAPO's dynamic sampling
    (`rl.filter_groups`) draws further tasks in their place."""
    group = np.asarray(group)
    signal = (np.abs(np.asarray(a_exec)) + np.abs(np.asarray(a_route))) > 0
    order = list(dict.fromkeys(group.tolist()))
    return [g for g in order if bool(signal[group == g].any())]
