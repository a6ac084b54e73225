"""The partner agent (paper 4.1): it has no motivation of its own and reacts to the self character.

At each of its turns it answers with an utterance or an action chosen from its candidate sets; its
actions run through the engine. The poly-encoder partner scores every candidate with one matrix
product per step for the whole batch (the candidates are encoded once and cached). It listens: a valid action scores
``listen_weight`` more for each content word it shares with what the agent said last, so that "give me the egg" makes
giving the egg its best action. The weight and the action bias are learned from the demonstrations
(:mod:`lq.envs.calibration`). With a ``scene_filter`` (:class:`lq.envs.scene.SceneFilter`, an option, off by
default), the utterance it says is its best one that names no character or place absent from its scene.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import torch

from lq.data.context import last_line
from lq.models.poly_encoder import CandidateCache, PolyEncoder, TextBatcher
from lq.world.text import content_words

if TYPE_CHECKING:
    from lq.envs.episode import DemoTurn
    from lq.envs.scene import SceneFilter

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
        scene_filter: SceneFilter | None = None,
    ):
        """``store_dir``: where to keep the encoded candidates between runs (see :class:`CandidateCache`).
        ``scene_filter``: its utterance is the best of those naming no character or place absent from its context's
        scene (:class:`lq.envs.scene.SceneFilter` over ``utterances``); whether it speaks or acts is decided as
        without it, on its best utterance's score over all of them (so that its calibration holds). None: any."""
        self.model, self.batcher, self.action_bias = model, batcher, action_bias
        self.listen_weight, self.scene_filter = listen_weight, scene_filter
        store = (lambda name: Path(store_dir) / name) if store_dir is not None else (lambda name: None)
        self.utterances = CandidateCache(model, batcher, utterances, store=store("partner-utterances.pt"))
        self.actions = CandidateCache(model, batcher, actions, store=store("partner-actions.pt"))
        self.action_words = [content_words(a) for a in self.actions.texts]  # what listening compares with
        self.memo: dict | None = None  # (context, valid actions) -> what its choice reads (:meth:`remembering`)

    @torch.no_grad()
    def choices(
        self, contexts: Sequence[str], valid_actions: Sequence[Sequence[str]]
    ) -> tuple[torch.Tensor, list[Turn], list[Turn | None]]:
        """For each context: how much its best valid action outscores its best utterance (``-inf`` with no valid
        action in the partner's space), that utterance, and that action."""
        scored = self._scored(contexts, valid_actions)
        gaps, speech, actions = [], [], []
        for context, (best_speech, utterance, known, known_scores) in zip(contexts, scored, strict=True):
            speech.append(("speech", self.utterances.texts[utterance]))
            if not known:
                gaps.append(float("-inf"))
                actions.append(None)
                continue
            if self.listen_weight:
                said = content_words(last_line(context, "_partner_say"))  # the agent, seen from the partner's side
                heard = torch.tensor([float(len(self.action_words[j] & said)) for j in known], dtype=known_scores.dtype)
                known_scores = known_scores + self.listen_weight * heard
            best = int(known_scores.argmax())
            gaps.append(float(known_scores[best] - best_speech))
            actions.append(("action", self.actions.texts[known[best]]))
        return torch.tensor(gaps), speech, actions

    def _scored(
        self, contexts: Sequence[str], valid_actions: Sequence[Sequence[str]]
    ) -> list[tuple[torch.Tensor, int, list[int], torch.Tensor]]:
        """For each context, what its choice reads before listening: its best utterance's score and index (with a
        scene filter, the index of the best one that fits the scene), the ids of its valid actions in the partner's
        space, and their scores. Inside :meth:`remembering`, each (context, valid actions) pair is scored once."""
        keys = [(c, tuple(v)) for c, v in zip(contexts, valid_actions, strict=True)]
        if self.memo is None:
            return self._score(keys)
        missing = list(dict.fromkeys(k for k in keys if k not in self.memo))
        self.memo.update(zip(missing, self._score(missing), strict=True))
        return [self.memo[k] for k in keys]

    def _score(self, keys: Sequence[tuple[str, tuple[str, ...]]]) -> list:
        """:meth:`_scored`'s four figures of each (context, valid actions) pair, encoded in one batch."""
        if not keys:
            return []
        ctx = self._encode([c for c, _ in keys])
        speech_scores = self.utterances.score(ctx)
        best_speech = speech_scores.max(dim=1)
        said = best_speech.indices.tolist()
        if self.scene_filter is not None:  # what it says fits its scene; the gap still reads its best utterance's score
            said = self.scene_filter.demote(speech_scores, [c for c, _ in keys]).argmax(dim=1).tolist()
        action_scores = self.actions.score(ctx).cpu()
        out = []
        for i, (value, index) in enumerate(zip(best_speech.values.cpu(), said, strict=True)):
            known = sorted(set(self._known(keys[i][1])))  # of equal scores the first id wins, as a row's max
            out.append((value, index, known, action_scores[i, known]))
        return out

    @contextmanager
    def remembering(self) -> Iterator[None]:
        """Within the block each (context, valid actions) pair is encoded and scored once, whatever the listening and
        the bias: the calibration replays the same demonstrations under 49 settings, and most of their partner turns
        come again."""
        self.memo = {}
        try:
            yield
        finally:
            self.memo = None

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
