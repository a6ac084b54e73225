"""The environment's Dungeon Master (paper 4.2): a poly-encoder that ranks the agent's utterances for its reward."""

from __future__ import annotations

from lq.stages.families import EnvModel


class DungeonMaster(EnvModel):
    name = "dm"
    summary = "train the Dungeon Master's poly-encoder"
