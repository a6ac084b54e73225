"""The switch A2C losses (paper 4.2 and appendix 8.2, equations 1 to 3), as plain functions.

Every per-step term takes a ``mask`` of the steps it applies to: the action head's terms on the steps
where the switch chose to act, the dialogue head's where it chose to speak, so that neither head
learns from the other's steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from lq.rl.rollout import Rollout


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

    coefficients: LossCoefficients = LossCoefficients()  # noqa: RUF009 (frozen dataclass)
    gamma: float = 0.99
    normalize_advantages: bool = False
    valid_reduction: str = "sum"
    imitation_batch: int = 4

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


@dataclass
class TermInputs:
    """What the objective's terms read (:data:`TERMS`): the rollout and its returns ``[T, B]``, flattened to ``[T*B]``
    rows (which the action head chose, which the dialogue head; the heads' scores; the advantages), the settings, and
    the imitation term's loss where the module has one (:meth:`lq.lit.rl.RLModule.imitation_loss`)."""

    rollout: Rollout
    returns: torch.Tensor  # [T*B]
    settings: A2CSettings
    imitation: Callable[[], torch.Tensor] | None = None

    def __post_init__(self) -> None:
        self.acted = self.rollout.flat("acted")
        self.spoke = ~self.acted
        self.values = self.rollout.flat("values")
        self.action_logits, self.speech_logits = self.rollout.flat("action_logits"), self.rollout.flat("speech_logits")
        adv = advantages(self.returns, self.values)
        self.advantage = normalized(adv.detach()) if self.settings.normalize_advantages else adv


@dataclass(frozen=True)
class Term:
    """One term of the objective: its ``name`` (its curve ``losses/NAME``), its ``value`` unweighted, and its
    ``weight`` as it enters the total, from the coefficients (the entropies, maximised, negated). An ``own_forward``
    term runs a forward pass of its own: it is computed only where its weight is not 0."""

    name: str
    value: Callable[[TermInputs], torch.Tensor]
    weight: Callable[[LossCoefficients], float]
    own_forward: bool = False


def _speech_policy_weight(c: LossCoefficients) -> float:
    return c.policy if c.speech_policy is None else c.speech_policy


# the objective, term by term, in the order the total sums them (equations 1 to 3 and appendix 8.2; the imitation term
# is lq's: conf/objective/lq.yaml). A new term is one entry here (and, where it has a coefficient of its own, a field
# of LossCoefficients).
TERMS: tuple[Term, ...] = (
    Term("action_policy", lambda x: policy_gradient_loss(x.rollout.flat("action_log_probs"), x.advantage, x.acted),
         lambda c: c.policy),
    Term("speech_policy", lambda x: policy_gradient_loss(x.rollout.flat("speech_log_probs"), x.advantage, x.spoke),
         _speech_policy_weight),
    Term("valid_action", lambda x: valid_candidates_loss(
        x.action_logits, x.rollout.flat("valid_actions"), x.acted, x.settings.valid_reduction),
         lambda c: c.valid_action),
    Term("valid_speech", lambda x: valid_candidates_loss(
        x.speech_logits, x.rollout.flat("valid_utterances"), x.spoke, x.settings.valid_reduction),
         lambda c: c.valid_speech),
    Term("action_entropy", lambda x: entropy(masked(x.action_logits, x.rollout.flat("action_choices")), x.acted),
         lambda c: -c.action_entropy),
    Term("speech_entropy", lambda x: entropy(masked(x.speech_logits, x.rollout.flat("speech_choices")), x.spoke),
         lambda c: -c.speech_entropy),
    Term("value", lambda x: value_loss(x.values, x.returns), lambda c: c.value),
    Term("imitation", lambda x: x.imitation(), lambda c: c.imitation, own_forward=True),
)  # fmt: skip


@dataclass
class Losses:
    """An update's objective: ``total`` (what it minimises: each term's weight times its value, summed in the table's
    order) and each computed term's value unweighted, by name (``losses.valid_action`` reads ``terms["valid_action"]``);
    ``weighted``, each as it entered the total."""

    total: torch.Tensor
    terms: dict[str, torch.Tensor]
    weighted: dict[str, torch.Tensor]

    def __getattr__(self, name: str) -> torch.Tensor:
        terms = self.__dict__.get("terms", {})
        if name in terms:
            return terms[name]
        raise AttributeError(f"no term {name!r} in this objective (its terms: {', '.join(terms)})")


def objective(inputs: TermInputs, terms: Sequence[Term] = TERMS) -> Losses:
    """The terms of ``terms`` weighted by the settings' coefficients and summed: the rollout's terms first, in order
    (their values, then their weights, then the sum), then each ``own_forward`` term where its weight is not 0 and
    its input is there, added to the total. The same operations in the same order as ever: the losses, and so the
    gradients, are bit for bit those of lq before the table (``tests/lit/test_loop_bits.py``)."""
    coef = inputs.settings.coefficients
    rollout_terms = [t for t in terms if not t.own_forward]
    values = {t.name: t.value(inputs) for t in rollout_terms}
    weighted = {t.name: t.weight(coef) * values[t.name] for t in rollout_terms}
    total = sum(weighted.values())
    for term in (t for t in terms if t.own_forward):
        weight = term.weight(coef)
        if weight == 0 or inputs.imitation is None:
            continue
        values[term.name] = term.value(inputs)
        weighted[term.name] = weight * values[term.name]
        total = total + weighted[term.name]
    return Losses(total=total, terms=values, weighted=weighted)


def switch_a2c_loss(
    rollout: Rollout,
    returns: torch.Tensor,
    settings: A2CSettings = A2CSettings(),  # noqa: B008 (frozen dataclass)
    imitation: Callable[[], torch.Tensor] | None = None,
) -> Losses:
    """All terms of the switch A2C objective (:data:`TERMS`) of a rollout and its ``returns`` ``[T, B]``, the
    imitation term too where ``imitation`` gives it and its coefficient is not 0. ``rollout.acted`` marks the steps
    where the switch chose the action head; the dialogue head's terms use the others.

    The entropies are those of the distributions each head sampled from (``action_choices`` / ``speech_choices``:
    the valid candidates where the protocol restricts choice to them, else every candidate); the valid-candidate
    terms always see every candidate. ``settings``: the weights, the advantages' normalisation and the valid terms'
    reduction (:class:`A2CSettings`; its ``gamma`` made ``returns``)."""
    return objective(TermInputs(rollout, returns.reshape(-1), settings, imitation))
