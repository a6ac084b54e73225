"""Behaviour cloning of the switch agent on the training demonstrations: its best validation epoch is kept, the start of
the RL agent of the same configuration and seed (``init_from: bc``)."""

from __future__ import annotations

from lq.stages.families import Agent, agent_dir
from lq.stages.run import Run

CHECKPOINT = "best.ckpt"


def bc_checkpoint(bc_dir: str, encoder: str, ability: str, switch: str, seed: int) -> str:
    """The BC agent of a configuration and seed: what an RL run of the same one starts from (``init_from: bc``)."""
    return f"{agent_dir(bc_dir, encoder, ability, switch, seed)}/{CHECKPOINT}"


class BehaviourCloning(Agent):
    name = "bc"
    summary = "behaviour cloning of the switch agent on demonstrations"
    profile_file = "bc"
    checkpoint_name = CHECKPOINT

    def label(self, run: Run) -> str:
        return f"{super().label(run)} (the RL agent's start)"
