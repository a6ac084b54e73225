import math

import pytest
import torch

from lq.rl.a2c import TERMS, Term, TermInputs, a2c_losses, objective
from lq.rl.losses import (
    LossCoefficients,
    advantages,
    discounted_returns,
    entropy,
    normalized,
    policy_gradient_loss,
    valid_candidates_loss,
    value_loss,
)
from tests.samples import a2c_settings, one_env_rollout


def switch_a2c_loss(rollout, returns, settings):
    """The objective of ``rollout`` with the given ``returns`` (in place of its discounted rewards)."""
    return objective(TermInputs(rollout, returns.reshape(-1), settings))


def test_discounted_returns_by_hand():
    rewards = torch.tensor([[1.0, 0.0], [0.0, 0.5], [2.0, 1.0]])
    dones = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    last = torch.tensor([10.0, -1.0])
    got = discounted_returns(rewards, dones, last, gamma=0.5)
    # env 0: R2 = 2 + 0.5*10 = 7; R1 = 0 (episode ends at t=1, no bootstrap); R0 = 1 + 0.5*0 = 1
    # env 1: R2 = 1 + 0.5*(-1) = 0.5; R1 = 0.5 + 0.5*0.5 = 0.75; R0 = 0 + 0.5*0.75 = 0.375
    assert torch.allclose(got, torch.tensor([[1.0, 0.375], [0.0, 0.75], [7.0, 0.5]]))
    assert torch.allclose(advantages(got, torch.ones(3, 2)), got - 1)


def test_policy_gradient_only_on_masked_steps_and_constant_advantage():
    log_probs = torch.tensor([-1.0, -2.0, -3.0], requires_grad=True)
    adv = torch.tensor([2.0, 1.0, 5.0], requires_grad=True)
    loss = policy_gradient_loss(log_probs, adv, torch.tensor([True, True, False]))
    assert loss.item() == pytest.approx((2 * 1 + 1 * 2) / 2)  # -(-1*2) and -(-2*1), step 3 masked out
    loss.backward()
    assert torch.allclose(log_probs.grad, torch.tensor([-1.0, -0.5, 0.0])) and adv.grad is None


def test_valid_candidates_loss_by_hand():
    logits = torch.tensor([[0.0, math.log(3.0)], [2.0, -2.0]])
    valid = torch.tensor([[1, 0], [0, 0]])
    # step 1, policy (0.25, 0.75): -log 0.25 for the valid one, -log(1 - 0.75) for the invalid one, summed;
    # step 2 is another head's
    expected = math.log(4) + math.log(4)
    assert valid_candidates_loss(logits, valid, torch.tensor([True, False])).item() == pytest.approx(expected)
    # it raises the policy's probability of the valid candidate (the sigmoid of its own score would not see the other)
    logits.requires_grad_(True)
    valid_candidates_loss(logits, valid, torch.tensor([True, False])).backward()
    assert logits.grad[0, 0] < 0 < logits.grad[0, 1] and logits.grad[1].abs().sum() == 0


def test_the_valid_terms_reductions_over_candidates_and_steps_by_hand():
    """sum: over the candidates, steps averaged; total: over both (the released code's); mean: averaged over both;
    positives: each step's sum divided by its valid targets."""
    logits = torch.zeros(3, 4)  # uniform: p = 1/4 for every candidate
    valid = torch.tensor([[1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 1]])
    mask = torch.tensor([True, True, False])
    on, off = math.log(4), -math.log(0.75)  # -log p for a valid candidate, -log(1 - p) for an invalid one
    step = [2 * on + 2 * off, on + 3 * off]
    expected = {
        "sum": sum(step) / 2,
        "total": sum(step),
        "mean": sum(s / 4 for s in step) / 2,
        "positives": (step[0] / 2 + step[1] / 1) / 2,
    }
    for reduction, value in expected.items():
        assert valid_candidates_loss(logits, valid, mask, reduction).item() == pytest.approx(value), reduction
    with pytest.raises(ValueError, match="unknown valid-output loss reduction 'max': choose sum, total, mean"):
        valid_candidates_loss(logits, valid, mask, "max")


def test_the_speech_policy_gradient_takes_its_own_weight_where_given():
    weights = {t.name: t.weight for t in TERMS}
    assert weights["speech_policy"](LossCoefficients()) == 1.0
    released = LossCoefficients(speech_policy=4.0)  # the released code's scale_coef
    assert (weights["speech_policy"](released), weights["action_policy"](released)) == (4.0, 1.0)
    assert weights["action_entropy"](LossCoefficients()) == -0.01  # maximised: negated


def test_entropy_and_value_by_hand():
    uniform = torch.zeros(1, 4)
    assert entropy(uniform, torch.tensor([True])).item() == pytest.approx(math.log(4))
    assert entropy(torch.tensor([[0.0, -1e9]]), torch.tensor([True])).item() == pytest.approx(0.0, abs=1e-6)
    assert value_loss(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 2.0])).item() == pytest.approx(0.5 * 4 / 2)


def test_switch_masks_each_heads_terms():
    torch.manual_seed(0)
    steps, n_actions, n_utts = 4, 3, 5
    action_logits = torch.randn(steps, n_actions, requires_grad=True)
    speech_logits = torch.randn(steps, n_utts, requires_grad=True)
    acted = torch.tensor([True, False, False, True])
    rollout = one_env_rollout(
        action_logits=action_logits,
        speech_logits=speech_logits,
        action_log_probs=action_logits.log_softmax(-1)[:, 0],
        speech_log_probs=speech_logits.log_softmax(-1)[:, 1],
        acted=acted,
        valid_actions=torch.randint(0, 2, (steps, n_actions)),
        valid_utterances=torch.randint(0, 2, (steps, n_utts)),
        values=torch.zeros(steps),
    )
    out = switch_a2c_loss(rollout, torch.ones(steps, 1), a2c_settings(LossCoefficients()))
    (out.action_policy + out.valid_action - out.action_entropy).backward()
    assert action_logits.grad[~acted].abs().sum() == 0 and action_logits.grad[acted].abs().sum() > 0
    assert speech_logits.grad is None  # no path from the action terms to the speech scores at all
    expected = (
        out.action_policy
        + out.speech_policy
        + 10 * out.valid_action
        + 40 * out.valid_speech
        - 0.01 * out.action_entropy
        - 0.04 * out.speech_entropy
        + 0.5 * out.value
    )
    assert out.total.item() == pytest.approx(expected.item())


def test_entropy_is_that_of_the_candidates_a_head_chose_among():
    logits = torch.zeros(1, 4)
    common = dict(
        action_logits=logits,
        speech_logits=torch.zeros(1, 2),
        action_log_probs=torch.zeros(1),
        speech_log_probs=torch.zeros(1),
        acted=torch.tensor([True]),
        valid_actions=torch.ones(1, 4),
        valid_utterances=torch.ones(1, 2),
        values=torch.zeros(1),
    )
    whole = switch_a2c_loss(one_env_rollout(**common), torch.zeros(1, 1), a2c_settings()).action_entropy
    two = torch.tensor([[True, True, False, False]])
    restricted = switch_a2c_loss(one_env_rollout(**common, action_choices=two), torch.zeros(1, 1), a2c_settings())
    restricted = restricted.action_entropy
    assert whole.item() == pytest.approx(math.log(4)) and restricted.item() == pytest.approx(math.log(2))


def test_normalized_advantages_have_zero_mean_and_unit_std_and_drive_the_policy_gradient():
    assert torch.allclose(normalized(torch.tensor([1.0, 2.0, 3.0])), torch.tensor([-1.0, 0.0, 1.0]))
    assert torch.equal(normalized(torch.tensor([0.7])), torch.tensor([0.7]))  # one step: nothing to scale by
    log_probs = torch.log(torch.tensor([0.5, 0.25, 0.5, 0.25]))
    rollout = one_env_rollout(
        action_logits=torch.zeros(4, 2),
        speech_logits=torch.zeros(4, 2),
        action_log_probs=log_probs,
        speech_log_probs=torch.zeros(4),
        acted=torch.tensor([True, True, True, True]),
        valid_actions=torch.ones(4, 2),
        valid_utterances=torch.ones(4, 2),
        values=torch.zeros(4),
    )
    returns = torch.tensor([0.1, 0.1, 0.3, 0.3])  # small rewards: raw advantages of 0.1 and 0.3
    raw = switch_a2c_loss(rollout, returns, a2c_settings()).action_policy
    scaled = switch_a2c_loss(rollout, returns, a2c_settings(normalize_advantages=True)).action_policy
    assert torch.isclose(raw, -(log_probs * returns).mean())
    unit = normalized(returns)  # [-0.866, -0.866, 0.866, 0.866]
    assert torch.isclose(scaled, -(log_probs * unit).mean())


def test_the_loss_takes_the_rollout_and_one_settings_value():
    with pytest.raises(ValueError, match=r"valid_reduction='avg': choose sum, total, mean, positives"):
        a2c_settings(valid_reduction="avg")
    stored = a2c_settings({"valid_action": 1.0, "value": 2.0})  # as a checkpoint's hyperparameters hold them
    assert stored.coefficients == LossCoefficients(valid_action=1.0, value=2.0)
    rollout = one_env_rollout(
        action_logits=torch.zeros(2, 2),
        speech_logits=torch.zeros(2, 2),
        action_log_probs=torch.zeros(2),
        speech_log_probs=torch.zeros(2),
        acted=torch.tensor([True, True]),
        valid_actions=torch.ones(2, 2),
        valid_utterances=torch.ones(2, 2),
        values=torch.zeros(2),
        rewards=torch.tensor([0.0, 1.0]),
    )
    rollout.last_value = torch.zeros(1)
    value_only = LossCoefficients(0, 0, 0, 0, value=1.0, policy=0.0)
    # returns [gamma, 1] against values 0: the value term (R - V)^2 / 2 averaged is (gamma^2 + 1) / 4
    for gamma in (0.5, 0.9):
        out = a2c_losses(rollout, a2c_settings(value_only, gamma=gamma))
        assert out.total.item() == pytest.approx((gamma**2 + 1) / 4)


def test_a_new_objective_term_is_one_entry_of_the_table_and_at_zero_weight_moves_nothing():
    """A term added to the table is computed, logged by its name and weighted into the total; at weight 0 the total,
    every other term and the gradients are bit for bit those without it; an own-forward term at weight 0 is not even
    computed."""
    torch.manual_seed(0)
    logits = torch.randn(4, 5, requires_grad=True)
    rollout = one_env_rollout(
        action_logits=logits,
        speech_logits=logits * 2,
        action_log_probs=logits.log_softmax(-1)[:, 0],
        speech_log_probs=logits.log_softmax(-1)[:, 1],
        acted=torch.tensor([True, False, False, True]),
        valid_actions=torch.randint(0, 2, (4, 5)),
        valid_utterances=torch.randint(0, 2, (4, 5)),
        values=logits.mean(-1),
    )
    inputs = TermInputs(rollout, torch.ones(4), a2c_settings())
    extra = Term("logit_norm", lambda x: x.action_logits.pow(2).mean(), lambda c: 0.0)
    never = Term("never", lambda x: 1 / 0, lambda c: 0.0, own_forward=True)
    plain, more = objective(inputs), objective(inputs, (*TERMS, extra, never))
    assert more.logit_norm.item() > 0 and "never" not in more.terms
    assert more.total.item() == plain.total.item()
    assert all(torch.equal(plain.terms[k], more.terms[k]) for k in plain.terms)
    (g_plain,) = torch.autograd.grad(plain.total, logits, retain_graph=True)
    (g_more,) = torch.autograd.grad(more.total, logits, retain_graph=True)
    assert torch.equal(g_plain, g_more)
    weighted = objective(inputs, (*TERMS, Term("logit_norm", extra.value, lambda c: 0.5)))
    assert weighted.total.item() == pytest.approx(plain.total.item() + 0.5 * more.logit_norm.item())
    with pytest.raises(AttributeError, match="no term 'imitation'"):
        plain.imitation  # noqa: B018 (no imitation input: the term was not computed)
