"""The switch A2C objective's term functions (paper 4.2 and appendix 8.2, equations 1 to 3) and its settings; the
objective itself, the table of its terms, is :data:`lq.rl.a2c.TERMS`.

Every per-step term takes a ``mask`` of the steps it applies to: the action head's terms on the steps
where the switch chose to act, the dialogue head's where it chose to speak, so that neither head
learns from the other's steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class LossCoefficients:
    """Table 6 of the paper (the value coefficient is not given there; 0.5 is A2C's usual). ``imitation``, not the
    paper's: the weight of a behaviour-cloning term on the training demonstrations beside the A2C objective (0: off,
    the paper's agent; :meth:`lq.lit.rl.RLModule.imitation_loss`); ``policy``: the policy gradients' weight (1, the
    paper's; 0 leaves an agent that learns from its other terms alone, a control)."""

    valid_action: float = 10.0
    action_entropy: float = 0.01
    valid_speech: float = 40.0
    speech_entropy: float = 0.04
    value: float = 0.5
    imitation: float = 0.0
    policy: float = 1.0  # both heads' policy gradients (1: the paper's; 0 with imitation on: behaviour cloning alone)
    # the dialogue head's policy gradient, where it differs from ``policy`` (the released code's ``scale_coef``, 4,
    # multiplies it as it does the speech valid and entropy terms: a2c_acktr.py:140); None: ``policy``
    speech_policy: float | None = None


# how the valid-output terms reduce over candidates and steps (valid_candidates_loss)
VALID_REDUCTIONS = ("sum", "total", "mean", "positives")


@dataclass(frozen=True)
class A2CSettings:
    """Everything the switch A2C update takes beside its rollout (:func:`lq.rl.a2c.a2c_losses`), in one value:
    the terms' weights (``coefficients``, Table 6's and the imitation term's), ``gamma`` for the n-step returns,
    ``normalize_advantages`` (the policy gradients use :func:`normalized` advantages), ``valid_reduction`` (how the
    valid-output terms reduce over candidates and steps: :func:`valid_candidates_loss`) and ``imitation_batch``
    (training demonstrations per update in the imitation term, where ``coefficients.imitation`` turns it on).
    :class:`lq.lit.rl.RLModule` builds it from its hyperparameters; conf/objective/ sets them."""

    coefficients: LossCoefficients
    gamma: float
    normalize_advantages: bool
    valid_reduction: str
    imitation_batch: int

    def __post_init__(self) -> None:
        if self.valid_reduction not in VALID_REDUCTIONS:
            raise ValueError(
                f"model.valid_reduction={self.valid_reduction!r}: choose {', '.join(VALID_REDUCTIONS)} "
                "(lq/rl/losses.py)"
            )
        if isinstance(self.coefficients, dict):  # as stored in a checkpoint's hyperparameters
            object.__setattr__(self, "coefficients", LossCoefficients(**self.coefficients))


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp(min=1.0)


def discounted_returns(
    rewards: torch.Tensor, dones: torch.Tensor, last_value: torch.Tensor, gamma: float
) -> torch.Tensor:
    """n-step returns ``[T, B]``: r_t + gamma * R_{t+1}, cut at episode ends, bootstrapped from V(s_T)."""
    returns = torch.zeros_like(rewards)
    running = last_value
    for t in reversed(range(rewards.shape[0])):
        running = rewards[t] + gamma * running * (1.0 - dones[t].to(rewards.dtype))
        returns[t] = running
    return returns


def advantages(returns: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Equation 3: A(s_t, a_t) = E[r_t + gamma V(s_{t+1})] - V(s_t), with the n-step return as the estimate."""
    return returns - values


def normalized(advantage: torch.Tensor) -> torch.Tensor:
    """Advantages scaled to zero mean and unit variance over the batch (as PPO and cleanrl's A2C do): the policy
    gradient keeps its size beside the valid-candidate terms (Table 6's 10 and 40) whatever the rewards' scale."""
    if advantage.numel() < 2:
        return advantage
    return (advantage - advantage.mean()) / (advantage.std() + 1e-8)


def policy_gradient_loss(log_probs: torch.Tensor, advantage: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """-log pi(a_t | s_t) A(s_t, a_t) over the masked steps; the advantage is a constant here."""
    return _masked_mean(-log_probs * advantage.detach(), mask)


def valid_candidates_loss(
    logits: torch.Tensor, valid: torch.Tensor, mask: torch.Tensor, reduction: str = "sum"
) -> torch.Tensor:
    """Equations 1 and 2: the binary cross-entropy of the policy's probability of every candidate, pi(a_i | s_t) (the
    softmax over the whole space), against being valid now (y = 1 for the engine's valid actions / the DM's valid
    utterances, and the protocol's demonstration targets), summed over the candidates as the equations' sums and the
    released code's ``BCELoss(probs, valid).sum()``; averaged over the masked steps. It moves the policy's own mass
    onto the valid candidates, which a per-candidate sigmoid of the scores, averaged over thousands of candidates,
    barely does (docs/deviations.md). ``reduction``, over the candidates and the steps:

    - ``sum``: summed over the candidates, averaged over the steps;
    - ``total``: summed over both, as the released code does (a2c_acktr.py:110-120: ``(BCELoss(reduction="none")(probs,
      valid) * mask).sum()`` over every candidate, step and environment);
    - ``mean``: averaged over both (the same direction, 1/N the size beside the policy gradient);
    - ``positives``: summed over the candidates and divided by the step's valid targets (at least 1), averaged over
      the steps: each target weighs the same whatever the size of the space."""
    if reduction not in VALID_REDUCTIONS:
        raise ValueError(f"unknown valid-output loss reduction {reduction!r}: choose {', '.join(VALID_REDUCTIONS)}")
    log_p = logits.log_softmax(dim=-1)
    log_not_p = torch.log1p(-log_p.exp().clamp(max=1.0 - 1e-6))
    y = valid.to(logits.dtype)
    per_candidate = -(y * log_p + (1.0 - y) * log_not_p)
    if reduction == "mean":
        return _masked_mean(per_candidate.mean(dim=-1), mask)
    per_step = per_candidate.sum(dim=-1)
    if reduction == "positives":
        per_step = per_step / y.sum(dim=-1).clamp(min=1.0)
    if reduction == "total":
        return (per_step * mask.to(per_step.dtype)).sum()
    return _masked_mean(per_step, mask)


NEG = -1e9  # not -inf: keeps p * log p at 0 for the masked candidates


def masked(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``logits`` with the candidates outside ``mask`` (bool, same shape) at a large negative value."""
    return logits.masked_fill(~mask, NEG)


def entropy(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean entropy of the policy over the masked steps (to be maximised)."""
    log_p = logits.log_softmax(dim=-1)
    return _masked_mean(-(log_p.exp() * log_p).sum(dim=-1), mask)


def value_loss(values: torch.Tensor, returns: torch.Tensor) -> torch.Tensor:
    return 0.5 * (returns.detach() - values).pow(2).mean()
