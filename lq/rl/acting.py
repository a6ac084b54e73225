"""Turning the switch agent's scores into environment commands, the same way in RL, BC and evaluation.

Each step the switch picks the head (act or speak, or only one for the ability ablations); the head
samples its candidate by Boltzmann exploration (softmax at a temperature) or, when evaluating,
takes the best one. Per-environment counters feed the switch.

With ``restrict=True`` (the default) a head chooses only among the candidates the environment says
are valid: the engine's valid actions and the Dungeon Master's M valid utterances (Jericho's
valid-action handicap; the paper's environment offers both sets). The valid-candidate losses are
trained either way. Without an agent the actor is the random baseline: uniform over the same
candidates, with the same switch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lq.models.agent import SwitchAgent
from lq.models.poly_encoder import TextBatcher
from lq.rl.losses import masked
from lq.rl.switch import HardcodedSwitch, RatioSwitch

ABILITIES = ("act_speech", "act", "speech", "speech_no_speech_goals")


@dataclass
class StepOutput:
    action_logits: torch.Tensor
    speech_logits: torch.Tensor
    value: torch.Tensor
    acted: torch.Tensor  # [b] bool: the action head chose this step
    action_choice: torch.Tensor
    speech_choice: torch.Tensor
    action_log_prob: torch.Tensor
    speech_log_prob: torch.Tensor
    action_mask: torch.Tensor  # [b, actions] bool: the candidates the head chose among
    speech_mask: torch.Tensor


def candidate_mask(infos: list[dict], key: str, size: int, restrict: bool) -> torch.Tensor:
    """``[b, size]`` bool of the valid candidates ``infos[i][key]``; every candidate where none is valid (or
    when not restricting)."""
    mask = torch.zeros(len(infos), size, dtype=torch.bool)
    for i, info in enumerate(infos):
        ids = info.get(key, []) if restrict else []
        if ids:
            mask[i, ids] = True
        else:
            mask[i] = True
    return mask


class Actor:
    def __init__(
        self,
        agent: SwitchAgent | None,
        batcher: TextBatcher,
        action_space: list[str],
        utterance_space: list[str],
        switch: HardcodedSwitch | RatioSwitch,
        ability: str = "act_speech",
        temperature: float = 1.0,
        restrict: bool = True,
    ):
        if ability not in ABILITIES:
            raise ValueError(f"unknown ability '{ability}': choose from {', '.join(ABILITIES)}")
        self.agent, self.batcher, self.switch = agent, batcher, switch
        self.action_space, self.utterance_space = action_space, utterance_space
        self.ability, self.temperature, self.restrict = ability, temperature, restrict

    def start(self, batch: int) -> dict[str, torch.Tensor]:
        state = {}
        if self.agent is not None:
            state["hidden_a"], state["hidden_u"] = self.agent.initial_state(batch)
        return {
            **state,
            "steps": torch.zeros(batch, dtype=torch.long),
            "since_action": torch.zeros(batch, dtype=torch.long),
            "k": torch.zeros(batch, dtype=torch.long),
        }

    def reset_done(self, state: dict[str, torch.Tensor], dones: list[bool], k: list[int] | None = None) -> None:
        done = torch.tensor(dones, dtype=torch.bool)
        for key in ("hidden_a", "hidden_u") if self.agent is not None else ():
            state[key] = state[key] * (~done).unsqueeze(1).to(state[key].dtype)
        state["steps"] = torch.where(done, 0, state["steps"])
        state["since_action"] = torch.where(done, 0, state["since_action"])
        if k is not None:
            state["k"] = torch.tensor(k, dtype=torch.long)

    def step(
        self, obs: list[str], infos: list[dict], state: dict[str, torch.Tensor], greedy: bool = False
    ) -> tuple[list[tuple[str, str]], StepOutput]:
        if self.agent is None:  # the random baseline
            device = torch.device("cpu")
            a_logits = torch.zeros(len(obs), len(self.action_space))
            u_logits = torch.zeros(len(obs), len(self.utterance_space))
            value, greedy = torch.zeros(len(obs)), False
        else:
            device = next(self.agent.critic.parameters()).device
            ids, mask = self.batcher.contexts(obs)
            a_logits, u_logits, value, (ha, hu) = self.agent(
                ids.to(device), mask.to(device), (state["hidden_a"], state["hidden_u"])
            )
            state["hidden_a"], state["hidden_u"] = ha, hu
        a_mask = candidate_mask(infos, "valid_action_ids", a_logits.shape[1], self.restrict).to(device)
        u_mask = candidate_mask(infos, "valid_utterance_ids", u_logits.shape[1], self.restrict).to(device)
        if self.ability == "act":
            acted = torch.ones(len(obs), dtype=torch.bool)
        elif self.ability.startswith("speech"):
            acted = torch.zeros(len(obs), dtype=torch.bool)
        else:
            k = state["k"] if isinstance(self.switch, RatioSwitch) and bool((state["k"] > 0).all()) else None
            acted = self.switch.acts(state["steps"], state["since_action"], k)
        a_masked, u_masked = masked(a_logits, a_mask), masked(u_logits, u_mask)
        a_choice = self._choose(a_masked, greedy)
        u_choice = self._choose(u_masked, greedy)
        a_logp = a_masked.log_softmax(-1).gather(1, a_choice.unsqueeze(1)).squeeze(1)
        u_logp = u_masked.log_softmax(-1).gather(1, u_choice.unsqueeze(1)).squeeze(1)
        commands = [
            ("action", self.action_space[int(a_choice[i])])
            if acted[i]
            else ("speech", self.utterance_space[int(u_choice[i])])
            for i in range(len(obs))
        ]
        state["steps"] = state["steps"] + 1
        state["since_action"] = torch.where(acted, 0, state["since_action"] + 1)
        return commands, StepOutput(
            a_logits, u_logits, value, acted.to(device), a_choice, u_choice, a_logp, u_logp, a_mask, u_mask
        )

    def _choose(self, logits: torch.Tensor, greedy: bool) -> torch.Tensor:
        if greedy:
            return logits.argmax(dim=-1)
        probs = (logits.detach() / self.temperature).softmax(dim=-1)
        return torch.multinomial(probs, 1).squeeze(1)
