"""Switch A2C (paper 4.2, appendix 8.2), top to bottom: collect a rollout, then compute its losses.

    rollout = collect(env, actor, state, steps)        # T steps of B environments, with the autograd graph
    losses = a2c_losses(rollout, settings)              # the switch A2C objective (lq.rl.losses)
    losses.total.backward(); clip; optimizer.step()    # the caller's (Lightning's) optimisation step

The two policies are two actors with a shared critic; each head's terms are masked by the switch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from lq.envs.quest_env import QuestEnv
from lq.rl.acting import Actor, ActorState
from lq.rl.losses import A2CSettings, Losses, discounted_returns, switch_a2c_loss
from lq.rl.rollout import Rollout


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


def a2c_losses(
    rollout: Rollout, settings: A2CSettings, imitation: Callable[[], torch.Tensor] | None = None
) -> Losses:
    """The switch A2C objective of a rollout under ``settings`` (:class:`lq.rl.losses.A2CSettings`): n-step returns
    cut at episode ends and bootstrapped from V(s_T), advantages (normalised over the rollout where the settings say
    so), per-head policy gradients, valid-candidate BCEs, entropies and the value loss, and the imitation term where
    ``imitation`` gives it (:data:`lq.rl.losses.TERMS`)."""
    returns = discounted_returns(rollout.rewards, rollout.dones, rollout.last_value, settings.gamma)
    return switch_a2c_loss(rollout, returns, settings, imitation)
