"""The partner agent (paper 4.1): it has no motivation of its own and reacts to the self character.

At each of its turns it answers with an utterance or an action chosen from its candidate sets; its
actions run through the engine. The poly-encoder partner scores every candidate with one matrix
product per step for the whole batch (the candidates are encoded once and cached). It listens: a valid action scores
``listen_weight`` more for each content word it shares with what the agent said last, so that "give me the egg" makes
giving the egg its best action. The weight and the action bias are learned from the demonstrations
(:mod:`lq.envs.calibration`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import torch

from lq.data.context import last_line
from lq.models.agent import content_words
from lq.models.poly_encoder import CandidateCache, PolyEncoder, TextBatcher

if TYPE_CHECKING:
    from lq.envs.replay import DemoTurn

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
        listen_weight: float = 0.0,
    ):
        """``store_dir``: where to keep the encoded candidates between runs (see :class:`CandidateCache`)."""
        self.model, self.batcher, self.action_bias = model, batcher, action_bias
        self.listen_weight = listen_weight
        store = (lambda name: Path(store_dir) / name) if store_dir is not None else (lambda name: None)
        self.utterances = CandidateCache(model, batcher, utterances, store=store("partner-utterances.pt"))
        self.actions = CandidateCache(model, batcher, actions, store=store("partner-actions.pt"))
        self.action_words = [content_words(a) for a in self.actions.texts]  # what listening compares with

    @torch.no_grad()
    def choices(
        self, contexts: Sequence[str], valid_actions: Sequence[Sequence[str]]
    ) -> tuple[torch.Tensor, list[Turn], list[Turn | None]]:
        """For each context: how much its best valid action outscores its best utterance (``-inf`` with no valid
        action in the partner's space), that utterance, and that action."""
        ctx = self._encode(contexts)
        best_speech = self.utterances.score(ctx).max(dim=1)
        action_scores = self.actions.score(ctx)
        valid = torch.zeros_like(action_scores, dtype=torch.bool)
        heard = torch.zeros_like(action_scores)
        for i, options in enumerate(valid_actions):
            known = self._known(options)
            if known:
                valid[i, known] = True
            if known and self.listen_weight:
                said = content_words(last_line(contexts[i], "_partner_say"))  # the agent, seen from the partner's side
                words = [float(len(self.action_words[j] & said)) for j in known]
                heard[i, known] = torch.tensor(words, device=heard.device, dtype=heard.dtype)
        action_scores = action_scores + self.listen_weight * heard
        best_action = action_scores.masked_fill(~valid, float("-inf")).max(dim=1)
        gaps = (best_action.values - best_speech.values).cpu()
        speech = [("speech", self.utterances.texts[int(j)]) for j in best_speech.indices]
        actions = [
            ("action", self.actions.texts[int(j)]) if valid[i].any() else None
            for i, j in enumerate(best_action.indices)
        ]
        return gaps, speech, actions

    def act(self, contexts: Sequence[str], valid_actions: Sequence[Sequence[str]]) -> list[Turn]:
        """Its best valid action where that outscores its best utterance by more than ``-action_bias``, else that
        utterance."""
        if not contexts:
            return []
        gaps, speech, actions = self.choices(contexts, valid_actions)
        return [
            action if action is not None and float(gap) + self.action_bias > 0 else utterance
            for gap, utterance, action in zip(gaps, speech, actions, strict=True)
        ]

    def _encode(self, contexts: Sequence[str]) -> torch.Tensor:
        ids, mask = self.batcher.contexts(contexts)
        device = self.model.codes.device
        return self.model.encode_context(ids.to(device), mask.to(device))

    def _known(self, options: Sequence[str]) -> list[int]:
        """The ids of the valid actions that are in its action space."""
        return [self.actions.index[a] for a in options if a in self.actions.index]

    @torch.no_grad()
    def action_spread(self, turns: Sequence[DemoTurn]) -> float:
        """How far apart its scores of one turn's valid actions lie: their standard deviation, averaged over the
        turns with two or more (the scale of :attr:`listen_weight`)."""
        spreads = []
        for part in _batches(turns):
            scores = self.actions.score(self._encode([t.context for t in part]))
            for row, turn in zip(scores, part, strict=True):
                known = self._known(turn.valid_actions)
                if len(known) > 1:
                    spreads.append(float(row[known].std()))
        return sum(spreads) / len(spreads) if spreads else 1.0

    def choices_at(self, turns: Sequence[DemoTurn]) -> tuple[torch.Tensor, list[Turn | None]]:
        """:meth:`choices`' gaps and best valid actions at the given turns (the demonstrations' partner turns, as the
        partner saw them)."""
        gaps, actions = [torch.empty(0)], []
        for part in _batches(turns):
            g, _, a = self.choices([t.context for t in part], [t.valid_actions for t in part])
            gaps.append(g)
            actions += a
        return torch.cat(gaps), actions


def _batches(turns: Sequence[DemoTurn], size: int = 64) -> list[Sequence[DemoTurn]]:
    return [turns[i : i + size] for i in range(0, len(turns), size)]


def bias_for_share(gaps: torch.Tensor, share: float) -> float:
    """The action bias at which a partner acts on ``share`` of the turns whose gaps (best action minus best
    utterance) are ``gaps``: halfway between the gap that acts last and the one that speaks first."""
    ranked = gaps[torch.isfinite(gaps)].sort(descending=True).values
    if len(ranked) == 0:
        return 0.0
    acting = round(share * len(ranked))
    if acting <= 0:
        return -float(ranked[0]) - 1e-3
    if acting >= len(ranked):
        return -float(ranked[-1]) + 1e-3
    return -float(ranked[acting - 1] + ranked[acting]) / 2


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
