"""The environment's partner (paper 4.2): a poly-encoder that chooses the partner's actions and utterances."""

from __future__ import annotations

from lq.stages.families import EnvModel


class Partner(EnvModel):
    name = "partner"
    summary = "train the partner agent's poly-encoder"
