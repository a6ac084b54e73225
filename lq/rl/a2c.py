"""Switch A2C (paper 4.2, appendix 8.2), top to bottom: collect a rollout, its objective, the update.

    a2c = SwitchA2C(env, actor, settings, steps=8)      # a batch of environments, the agent's actor (lq.rl.acting)
    losses, rollout = a2c.update(optimizer)             # collect T steps of B environments, the objective, one step
    a2c.state_dict() / a2c.load_state_dict(saved)       # what a resumed run needs to go on exactly where this one is

The two policies are two actors with a shared critic; each head's terms are masked by the switch (the action head's
on the steps where the switch chose to act, the dialogue head's where it chose to speak). :class:`lq.lit.rl.RLModule`
is the Lightning shell around it: setup, one call of :meth:`SwitchA2C.update` a training step, checkpoints.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import torch

from lq.envs.quest_env import QuestEnv
from lq.rl.acting import Actor, ActorState
from lq.rl.curriculum import RarityCurriculum
from lq.rl.curves import StartedEpisodes
from lq.rl.losses import (
    A2CSettings,
    LossCoefficients,
    advantages,
    discounted_returns,
    entropy,
    masked,
    normalized,
    policy_gradient_loss,
    valid_candidates_loss,
    value_loss,
)
from lq.rl.rollout import Rollout

# -- collecting a rollout ------------------------------------------------------------------------------------------


@dataclass
class RolloutState:
    """What carries over from one rollout to the next: the last observations and the actor's per-env state."""

    obs: list[str]
    infos: list[dict]
    actor: ActorState
    k_of: list[int] = field(default_factory=list)  # the ratio switch's k per instance (empty: not used)

    @classmethod
    def start(cls, env: QuestEnv, actor: Actor, k_of: list[int] | None = None) -> RolloutState:
        obs, infos = env.reset()
        k_of = k_of or []
        k = [k_of[info["instance"]] for info in infos] if k_of else None
        return cls(obs, infos, actor.start(len(obs), k), k_of)


def collect(env: QuestEnv, actor: Actor, state: RolloutState, steps: int) -> Rollout:
    """Play ``steps`` steps of every environment (auto-resetting) with the actor's current weights, sampling
    (Boltzmann exploration). The actor's state follows the agent first, wherever it was moved since the last
    rollout (:meth:`Actor.placed`)."""
    state.actor = actor.placed(state.actor)
    spaces = len(actor.action_space), len(actor.utterance_space)
    rollout = Rollout.allocate(steps, len(state.obs), *spaces, actor.device, actor.dtype)
    actor.cache_candidates()  # one embedding of the spaces for the rollout (the update backpropagates through it)
    for t in range(steps):
        commands, out = actor.step(env, state.obs, state.infos, state.actor)
        state.obs, rewards, dones, state.infos = env.step(commands)
        rollout.store(t, out, rewards, dones)
        rollout.episodes += [info["episode"] for info in state.infos if "episode" in info]
        k = [state.k_of[info["instance"]] for info in state.infos] if state.k_of else None
        actor.reset_done(state.actor, dones, k)
    actor.cache_candidates(False)
    with torch.no_grad():  # V(s_T) to bootstrap the n-step returns
        rollout.last_value = actor.step_value(state.obs, state.actor)
    state.actor = state.actor.map(torch.Tensor.detach)  # the next rollout starts a new graph
    return rollout


# -- the objective -------------------------------------------------------------------------------------------------


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

    def flat(self, name: str) -> torch.Tensor:
        return self.rollout.flat(name)


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


# The objective, term by term, in the order the total sums them: the policy gradients (equation 3's advantages), the
# valid-output BCEs (equations 1 and 2, over every candidate), the entropies of the distributions each head sampled
# from, the critic's value loss, and lq's imitation term (conf/objective/lq.yaml; its own forward pass). The term
# functions are lq.rl.losses'. A new term is one entry here (and, with a coefficient of its own, a field of
# LossCoefficients).
TERMS: tuple[Term, ...] = (
    Term("action_policy", lambda x: policy_gradient_loss(x.flat("action_log_probs"), x.advantage, x.acted),
         lambda c: c.policy),
    Term("speech_policy", lambda x: policy_gradient_loss(x.flat("speech_log_probs"), x.advantage, x.spoke),
         _speech_policy_weight),
    Term("valid_action", lambda x: valid_candidates_loss(
        x.action_logits, x.flat("valid_actions"), x.acted, x.settings.valid_reduction), lambda c: c.valid_action),
    Term("valid_speech", lambda x: valid_candidates_loss(
        x.speech_logits, x.flat("valid_utterances"), x.spoke, x.settings.valid_reduction), lambda c: c.valid_speech),
    Term("action_entropy", lambda x: entropy(masked(x.action_logits, x.flat("action_choices")), x.acted),
         lambda c: -c.action_entropy),
    Term("speech_entropy", lambda x: entropy(masked(x.speech_logits, x.flat("speech_choices")), x.spoke),
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


def a2c_losses(
    rollout: Rollout,
    settings: A2CSettings,
    imitation: Callable[[], torch.Tensor] | None = None,
) -> Losses:
    """The switch A2C objective of a rollout under ``settings`` (:class:`lq.rl.losses.A2CSettings`: the weights, the
    advantages' normalisation, the valid terms' reduction): n-step returns cut at episode ends and bootstrapped from
    V(s_T), then every term of :data:`TERMS`, the imitation term too where ``imitation`` gives it and its coefficient
    is not 0. The entropies are those of the distributions each head sampled from (``action_choices`` /
    ``speech_choices``: the valid candidates where the protocol restricts choice to them, else every candidate); the
    valid-candidate terms always see every candidate."""
    returns = discounted_returns(rollout.rewards, rollout.dones, rollout.last_value, settings.gamma)
    return objective(TermInputs(rollout, returns.reshape(-1), settings, imitation))


# -- the algorithm -------------------------------------------------------------------------------------------------


class SwitchA2C:
    """The switch A2C agent's training: ``steps`` steps of every environment of ``env`` a rollout, played by ``actor``
    (the agent's, sampling), then the objective of :data:`TERMS` under ``settings`` and one optimiser step.
    ``env.sampler`` draws the quests (:class:`lq.rl.priority.PrioritySampler`, or a
    :class:`lq.rl.curriculum.RarityCurriculum` over one), and learns of each episode's outcome; ``k_of``: the ratio
    switch's k per quest instance; ``imitation``: the imitation term's loss (a call, drawing its demonstrations; None:
    off); ``recent_episodes``: the episodes the training curves average (:class:`lq.rl.curves.StartedEpisodes`)."""

    def __init__(
        self,
        env: QuestEnv,
        actor: Actor,
        settings: A2CSettings,
        steps: int,
        recent_episodes: int,
        k_of: list[int] | None = None,
        imitation: Callable[[], torch.Tensor] | None = None,
    ):
        self.env, self.actor, self.settings, self.steps, self.imitation = env, actor, settings, steps, imitation
        self.sampler = env.sampler
        self.state = RolloutState.start(env, actor, k_of)
        self.curves = StartedEpisodes(recent_episodes)

    def collect(self, steps: int | None = None) -> Rollout:
        """A rollout of ``steps`` (default: the algorithm's) steps of every environment, with its autograd graph."""
        return collect(self.env, self.actor, self.state, steps or self.steps)

    def objective(self, rollout: Rollout) -> Losses:
        """The update's terms on ``rollout`` (:data:`TERMS`); ``total`` is what the update minimises."""
        return a2c_losses(rollout, self.settings, self.imitation)

    def update(
        self,
        optimizer: torch.optim.Optimizer,
        backward: Callable[[torch.Tensor], None] = torch.Tensor.backward,
        clip: Callable[[torch.optim.Optimizer], None] | None = None,
        interactions: int = 0,
    ) -> tuple[Losses, Rollout]:
        """One update: a rollout (a curriculum first opens what ``interactions``, the environment interactions so far,
        reach), its objective, ``backward`` of its total, ``clip`` of the gradients, the optimiser's step; then each
        ended episode's outcome to the sampler and the curves. Lightning's shell passes its ``manual_backward`` and
        gradient clipping (a norm of 1)."""
        if isinstance(self.sampler, RarityCurriculum):
            self.sampler.reach(interactions)
        rollout = self.collect()
        losses = self.objective(rollout)
        optimizer.zero_grad()
        backward(losses.total)
        if clip is not None:
            clip(optimizer)
        optimizer.step()
        for episode in rollout.episodes:
            self.sampler.record(episode["instance"], episode["act_goal"])
        self.curves.add(rollout.episodes)
        return losses, rollout

    def weigh_imitation(self, weight: float) -> None:
        """The imitation term's weight from now on."""
        self.settings = replace(self.settings, coefficients=replace(self.settings.coefficients, imitation=weight))

    def term_gradients(self, params: list[torch.Tensor], rollouts: int = 4) -> dict[str, tuple[float, float]]:
        """Where an update goes: each weighted term of the objective (:data:`TERMS`, the imitation term where on, and
        their sum, ``total``) with its value and the norm of its gradient alone over ``params``, averaged over
        ``rollouts`` rollouts (nothing is updated). ``lq gradients`` prints them as shares of the total's norm."""
        sums: dict[str, list[float]] = {}
        for _ in range(rollouts):
            losses = self.objective(self.collect())
            terms = {**losses.weighted, "total": losses.total}
            for name, term in terms.items():
                norm = term.new_zeros(())  # a term with no path to the weights (no step of its head in the rollout)
                if term.requires_grad:
                    grads = torch.autograd.grad(term, params, retain_graph=True, allow_unused=True)
                    norm = torch.stack([g.pow(2).sum() for g in grads if g is not None] or [norm]).sum()
                value, size = sums.setdefault(name, [0.0, 0.0])
                sums[name] = [value + term.item() / rollouts, size + norm.sqrt().item() / rollouts]
        return {name: (value, size) for name, (value, size) in sums.items()}

    # -- state, for resume ---------------------------------------------------------------------------------------

    def state_dict(self, rollout: bool = True) -> dict:
        """The sampler's table and random state (``lq_priority``, ``lq_env_rng``) and, with ``rollout`` (a single
        process: each DDP rank plays its own), the rollout in play (``lq_rollout``: :meth:`rollout_snapshot`)."""
        state = {"lq_priority": self.sampler.state_dict(), "lq_env_rng": self.env.rng.getstate()}
        if rollout:
            state["lq_rollout"] = self.rollout_snapshot()
        return state

    def load_state_dict(self, saved: dict, rollout: bool = True) -> None:
        """What :meth:`state_dict` kept (a checkpoint from before lq kept it: nothing)."""
        if not saved.get("lq_priority"):
            return
        self.sampler.load_state_dict(saved["lq_priority"])
        self.env.rng.setstate(saved["lq_env_rng"])
        if rollout and saved.get("lq_rollout") is not None:
            self.restore_rollout(saved["lq_rollout"])

    def rollout_snapshot(self) -> torch.Tensor:
        """What a resumed run needs to go on exactly where this one is: the episodes in play (their worlds,
        histories and turns), the last observations and the actor's per-episode state, the episodes of the training
        curves and the random state that samples the actions; pickled into a byte tensor (a checkpoint
        stays loadable with ``weights_only=True``)."""
        state = self.state
        snapshot = {
            "slots": self.env.slots,
            "obs": state.obs,
            "infos": state.infos,
            "actor": state.actor.map(lambda t: t.detach().cpu()),
            "k_of": state.k_of,
            "started": self.env.started,
            "recent": self.curves.ended,
            "torch_rng": torch.get_rng_state(),
        }
        return torch.frombuffer(bytearray(pickle.dumps(snapshot)), dtype=torch.uint8)

    def restore_rollout(self, blob: torch.Tensor) -> None:
        snapshot = pickle.loads(blob.numpy().tobytes())
        self.env.slots = snapshot["slots"]
        actor = self.actor.placed(snapshot["actor"])  # GRU states on the agent's device, counters on the CPU
        self.state = RolloutState(snapshot["obs"], snapshot["infos"], actor, snapshot["k_of"])
        self.env.started = snapshot.get("started", 0)  # a snapshot from before episodes were numbered: from 0
        self.curves.ended = snapshot["recent"] if isinstance(snapshot["recent"], dict) else {}
        torch.set_rng_state(snapshot["torch_rng"])
