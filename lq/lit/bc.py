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

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from lq.data.dataset import load_dataset
from lq.envs.episode import instances_from_data
from lq.envs.replay import demonstration_turns
from lq.lit.agent import AgentModule
from lq.rl.acting import choice_mask, valid_mask
from lq.rl.losses import masked


@dataclass
class Episode:
    contexts: list[str]
    acted: list[bool]
    targets: list[int]  # into the action space where acted, else into the utterance space
    valid_action_ids: list[list[int]]


class BCModule(AgentModule):
    stage = "bc"

    def __init__(self, batch_size: int = 16, **kwargs):
        """``batch_size``: demonstrations per update; the rest as :class:`AgentModule`."""
        super().__init__(**kwargs)
        self.episodes: dict[str, list[Episode]] = {}

    def setup(self, stage: str) -> None:
        self.build_agent()
        if self.episodes or stage not in ("fit", "validate"):
            return
        quests = load_dataset(self.hparams.data_dir).quests.all()
        for split in ("train", "valid"):
            self.episodes[split] = self.cloning_episodes(instances_from_data(quests, self.demos[split]))
            if not self.episodes[split]:
                raise ValueError(
                    f"{self.hparams.data_dir}: no {split} demonstration is linked to a quest whose goal can be played; "
                    "`lq data stats` on this folder says what became of each demonstration"
                )

    def cloning_episodes(self, instances) -> list[Episode]:
        """The supervised episodes: each demonstration's self turns that fall in the agent's spaces."""
        a_index = {a: i for i, a in enumerate(self.action_space)}
        u_index = {u: i for i, u in enumerate(self.utterance_space)}
        out = []
        for inst in instances:
            episode = Episode([], [], [], [])
            for turn in demonstration_turns(inst, objects=self.hparams.context_objects):
                index = a_index if turn.kind == "action" else u_index
                if turn.text not in index:  # an emote, or a text outside the spaces
                    continue
                episode.contexts.append(turn.context)
                episode.acted.append(turn.kind == "action")
                episode.targets.append(index[turn.text])
                episode.valid_action_ids.append([a_index[a] for a in turn.valid_actions if a in a_index])
            if episode.contexts:
                out.append(episode)
        return out

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        return DataLoader(
            self.episodes[split], batch_size=self.hparams.batch_size, shuffle=shuffle, collate_fn=lambda b: b
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("valid", False)

    def configure_optimizers(self):
        return torch.optim.Adam([p for p in self.parameters() if p.requires_grad], lr=self.hparams.lr)

    def cloning_loss(self, episodes: list[Episode]) -> dict[str, torch.Tensor]:
        """Cross-entropy of the demonstrated turns, summed over turns and averaged; accuracies per head."""
        hidden = self.agent.initial_state(len(episodes))
        losses, correct = [], {"action": [], "speech": []}
        for t in range(max(len(e.contexts) for e in episodes)):
            live = [i for i, e in enumerate(episodes) if t < len(e.contexts)]
            ids, mask, lines = self.batcher.contexts_with_lines([episodes[i].contexts[t] for i in live])
            acted = torch.tensor([episodes[i].acted[t] for i in live], device=self.device)
            hidden_live = (hidden[0][live], hidden[1][live])
            out = self.agent(ids.to(self.device), mask.to(self.device), hidden_live, acted, lines=lines)
            (ha, hu), u_logits = out.hidden, out.speech_logits
            hidden = (
                hidden[0].index_copy(0, torch.tensor(live, device=self.device), ha),
                hidden[1].index_copy(0, torch.tensor(live, device=self.device), hu),
            )
            valid = valid_mask([episodes[i].valid_action_ids[t] for i in live], out.action_logits.shape[1])
            a_logits = masked(out.action_logits, choice_mask(valid, self.protocol.restrict).to(self.device))
            targets = torch.tensor([episodes[i].targets[t] for i in live], device=self.device)
            for head, logits, which in (("action", a_logits, acted), ("speech", u_logits, ~acted)):
                if which.any():
                    losses.append(F.cross_entropy(logits[which], targets[which], reduction="sum"))
                    correct[head].append(logits[which].argmax(-1) == targets[which])
        turns = sum(len(e.contexts) for e in episodes)
        out = {"loss": torch.stack(losses).sum() / turns}
        for head, hits in correct.items():
            if hits:
                out[f"{head}_accuracy"] = torch.cat(hits).float().mean()
        return out

    def training_step(self, batch: list[Episode], batch_idx: int) -> torch.Tensor:
        out = self.cloning_loss(batch)
        self.log("train/loss", out["loss"], prog_bar=True, batch_size=len(batch))
        return out["loss"]

    def validation_step(self, batch: list[Episode], batch_idx: int) -> None:
        for name, value in self.cloning_loss(batch).items():
            self.log(f"val/{name}", value, prog_bar=name == "loss", batch_size=len(batch))
