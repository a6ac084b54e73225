"""Rollout storage: ``T`` steps of ``B`` environments as ``[T, B, ...]`` tensors, allocated up front (as cleanrl).

The scores keep their autograd graph from the rollout's forward passes, so the A2C update backpropagates
through them without running the agent again (the GRU states flow through the ``T`` steps: truncated
backpropagation through time).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import torch


@dataclass
class Rollout:
    action_logits: torch.Tensor  # [T, B, actions] the action head's scores (rows where it acted)
    speech_logits: torch.Tensor  # [T, B, utterances] the dialogue head's scores (rows where it spoke)
    action_log_probs: torch.Tensor  # [T, B] log pi(a_t | s_t) of the chosen action
    speech_log_probs: torch.Tensor  # [T, B] log pi(u_t | s_t) of the chosen utterance
    acted: torch.Tensor  # [T, B] bool: the switch chose the action head
    valid_actions: torch.Tensor  # [T, B, actions] bool: the engine's valid actions (the valid-action loss's y)
    valid_utterances: torch.Tensor  # [T, B, utterances] bool: the DM's valid utterances (where the agent spoke)
    action_choices: torch.Tensor  # [T, B, actions] bool: the candidates the action head chose among
    speech_choices: torch.Tensor  # [T, B, utterances] bool
    values: torch.Tensor  # [T, B] V(s_t)
    rewards: torch.Tensor  # [T, B]
    dones: torch.Tensor  # [T, B] 1.0 where the episode ended at this step
    last_value: torch.Tensor = field(default_factory=lambda: torch.zeros(0))  # [B] V(s_T), no gradient
    episodes: list[dict] = field(default_factory=list)  # the summaries of episodes that ended in the rollout

    @classmethod
    def allocate(
        cls,
        steps: int,
        envs: int,
        actions: int,
        utterances: int,
        device: torch.device,
        dtype: torch.dtype = torch.float,
    ) -> Rollout:
        """Zeros of every field on ``device``, the floating ones in ``dtype`` (the agent's: float32 under autocast)."""

        def zeros(*shape: int, dtype: torch.dtype = dtype) -> torch.Tensor:
            return torch.zeros(steps, envs, *shape, dtype=dtype, device=device)

        return cls(
            action_logits=zeros(actions),
            speech_logits=zeros(utterances),
            action_log_probs=zeros(),
            speech_log_probs=zeros(),
            acted=zeros(dtype=torch.bool),
            valid_actions=zeros(actions, dtype=torch.bool),
            valid_utterances=zeros(utterances, dtype=torch.bool),
            action_choices=zeros(actions, dtype=torch.bool),
            speech_choices=zeros(utterances, dtype=torch.bool),
            values=zeros(),
            rewards=zeros(),
            dones=zeros(),
        )

    def store(self, t: int, step, rewards: list[float], dones: list[bool]) -> None:
        """Keep time step ``t``: the actor's output (a :class:`lq.rl.acting.StepOutput`, whose fields are named as
        these) and what the environment answered."""
        for f in fields(step):
            getattr(self, f.name)[t] = getattr(step, f.name)
        self.rewards[t] = torch.tensor(rewards, dtype=self.rewards.dtype, device=self.rewards.device)
        self.dones[t] = torch.tensor(dones, dtype=self.dones.dtype, device=self.dones.device)

    def flat(self, name: str) -> torch.Tensor:
        """A field with its ``[T, B]`` dimensions merged into one, for the per-step losses."""
        value = getattr(self, name)
        return value.reshape(-1, *value.shape[2:])

    @property
    def steps(self) -> int:
        return self.rewards.shape[0]

    def names(self) -> list[str]:
        return [f.name for f in fields(self) if f.name not in ("last_value", "episodes")]
