"""The Dungeon Master (paper 4.1): ranks utterances for the current context, conditioned on the quest.

Its ``M`` most likely utterances are the valid utterances the environment offers; an utterance the
agent says that is among the ``k`` most likely earns a further speech reward. With a ``scene_filter``
(:class:`lq.envs.scene.SceneFilter`, an option, off by default), the utterances naming a character or place absent
from the context's scene rank below every other one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from lq.models.poly_encoder import CandidateCache, PolyEncoder, TextBatcher

if TYPE_CHECKING:
    from lq.envs.scene import SceneFilter


class DungeonMaster:
    def __init__(
        self,
        model: PolyEncoder,
        batcher: TextBatcher,
        utterances: Sequence[str],
        top_k: int = 10,
        num_valid: int = 50,
        store: str | Path | None = None,
        scene_filter: SceneFilter | None = None,
    ):
        if top_k > num_valid:
            raise ValueError(f"top_k ({top_k}) must not exceed num_valid ({num_valid})")
        self.model, self.batcher, self.scene_filter = model, batcher, scene_filter
        self.top_k, self.num_valid = top_k, min(num_valid, len(utterances))
        self.utterances = CandidateCache(model, batcher, utterances, store=store)

    @torch.no_grad()
    def rank(self, contexts: Sequence[str]) -> torch.Tensor:
        """Indices ``[batch, num_valid]`` into the utterance space, most likely first (with a scene filter, those
        naming a character or place absent from the context's scene after every other one)."""
        if not contexts:
            return torch.empty(0, self.num_valid, dtype=torch.long)
        scores = self.utterances.score(self._encode(contexts))
        if self.scene_filter is not None:
            scores = self.scene_filter.demote(scores, contexts)
        return scores.topk(self.num_valid, dim=1).indices.cpu()

    def _encode(self, contexts: Sequence[str]) -> torch.Tensor:
        """The contexts' codes ``[batch, codes, hidden]``, on the model's device."""
        device = self.model.codes.device
        ids, mask = self.batcher.contexts(contexts)
        return self.model.encode_context(ids.to(device), mask.to(device))

    @torch.no_grad()
    def place(self, context: str, text: str) -> int:
        """Where ``text`` would stand (1 = the DM's most likely) among the utterance space for ``context``: how the
        DM ranks a line said by a person, which need not be in the space."""
        device = self.model.codes.device
        ctx = self._encode([context])
        cids, cmask = self.batcher.candidates([text])
        own = self.model.score(ctx, self.model.encode_candidates(cids.to(device), cmask.to(device)))[0, 0]
        return 1 + int((self.utterances.score(ctx)[0] > own).sum())
