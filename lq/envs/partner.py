"""The partner agent (paper 4.1): it has no motivation of its own and reacts to the self character.

At each of its turns it answers with an utterance or an action chosen from its candidate sets; its
actions run through the engine. The poly-encoder partner scores every candidate with one matrix
product per step for the whole batch (the candidates are encoded once and cached).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import torch

from lq.models.poly_encoder import CandidateCache, PolyEncoder, TextBatcher

Turn = tuple[str, str]  # ("speech" | "action", text)


class Partner(Protocol):
    def act(self, contexts: Sequence[str], valid_actions: Sequence[Sequence[str]]) -> list[Turn]:
        """One turn for each environment, given its context (from the partner's side) and its valid actions."""
        ...


class PolyEncoderPartner:
    def __init__(
        self,
        model: PolyEncoder,
        batcher: TextBatcher,
        utterances: Sequence[str],
        actions: Sequence[str],
        action_bias: float = 0.0,
        store_dir: str | Path | None = None,
    ):
        """``store_dir``: where to keep the encoded candidates between runs (see :class:`CandidateCache`)."""
        self.model, self.batcher, self.action_bias = model, batcher, action_bias
        store = (lambda name: Path(store_dir) / name) if store_dir is not None else (lambda name: None)
        self.utterances = CandidateCache(model, batcher, utterances, store=store("partner-utterances.pt"))
        self.actions = CandidateCache(model, batcher, actions, store=store("partner-actions.pt"))

    @torch.no_grad()
    def act(self, contexts: Sequence[str], valid_actions: Sequence[Sequence[str]]) -> list[Turn]:
        if not contexts:
            return []
        device = self.model.codes.device
        ids, mask = self.batcher.contexts(contexts)
        ctx = self.model.encode_context(ids.to(device), mask.to(device))
        speech_scores = self.utterances.score(ctx)
        best_speech = speech_scores.max(dim=1)
        action_scores = self.actions.score(ctx)
        valid = torch.zeros_like(action_scores, dtype=torch.bool)
        for i, options in enumerate(valid_actions):
            known = [self.actions.index[a] for a in options if a in self.actions.index]
            if known:
                valid[i, known] = True
        masked = action_scores.masked_fill(~valid, float("-inf"))
        best_action = masked.max(dim=1)
        out: list[Turn] = []
        for i in range(len(contexts)):
            if valid[i].any() and best_action.values[i] + self.action_bias > best_speech.values[i]:
                out.append(("action", self.actions.texts[int(best_action.indices[i])]))
            else:
                out.append(("speech", self.utterances.texts[int(best_speech.indices[i])]))
        return out


class ScriptedPartner:
    """Plays given turns in order, one list per environment slot (for replaying demonstrations)."""

    def __init__(self, scripts: Sequence[Sequence[Turn]]):
        self.scripts = [list(s) for s in scripts]
        self.slot_order: list[int] = []

    def act(self, contexts: Sequence[str], valid_actions: Sequence[Sequence[str]]) -> list[Turn]:
        out = []
        for slot in self.slot_order[: len(contexts)]:
            script = self.scripts[slot]
            out.append(script.pop(0) if script else ("speech", "..."))
        return out
