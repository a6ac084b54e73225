"""Behaviour cloning (paper 5, Table 1): the switch agent trained supervised on the training demonstrations.

Each demonstration is replayed through the engine as the environment would show it
(:func:`lq.envs.replay.demonstration_turns`), so the agent learns from exactly the contexts and
valid actions it will see when evaluated. An episode runs through the agent's GRUs turn by turn;
at each self turn the head the demonstration used is trained with cross-entropy on the demonstrated
action (among the valid actions when the agent is restricted to them, as it acts) or utterance
(among the whole utterance space: the Dungeon Master's valid set is not part of the data). The
switch is not learned (hardcoded or ratio, as in RL). Validation: the same loss and the per-head
accuracy on the valid demonstrations; the best checkpoint by ``val/loss``.
"""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader

from lq.lit.agent import AgentModule, Episode


class BCModule(AgentModule):
    stage = "bc"

    def __init__(self, batch_size: int = 16, **kwargs):
        """``batch_size``: demonstrations per update; the rest as :class:`AgentModule`."""
        super().__init__(**kwargs)
        self.episodes: dict[str, list[Episode]] = {}

    def setup(self, stage: str) -> None:
        self.check_worlds()
        self.build_agent()
        if self.episodes or stage not in ("fit", "validate"):
            return
        for split in ("train", "valid"):
            self.episodes[split] = self.demonstration_episodes(split, needed_by="behaviour cloning")

    def collate(self, batch: list) -> object:
        """A batch as :meth:`cloning_loss` reads it: the episodes themselves."""
        return batch

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        return DataLoader(
            self.episodes[split], batch_size=self.hparams.batch_size, shuffle=shuffle, collate_fn=self.collate
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("valid", False)

    def configure_optimizers(self):
        return torch.optim.Adam([p for p in self.parameters() if p.requires_grad], lr=self.hparams.lr)

    def training_step(self, batch: list[Episode], batch_idx: int) -> torch.Tensor:
        out = self.cloning_loss(batch)
        self.log("train/loss", out["loss"], prog_bar=True, batch_size=self.batch_len(batch))
        return out["loss"]

    def validation_step(self, batch: list[Episode], batch_idx: int) -> None:
        for name, value in self.cloning_loss(batch).items():
            self.log(f"val/{name}", value, prog_bar=name == "loss", batch_size=self.batch_len(batch))

    def batch_len(self, batch) -> int:
        """How many examples ``batch`` holds (demonstrations here)."""
        return len(batch)
