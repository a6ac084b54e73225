"""The rewards of ``QuestEnv`` (paper 4.1), as named functions.

* :func:`act_reward`: 1 when a turn (the agent's or the partner's) reaches the act goal, else 0.
* :func:`speech_reward`: with n the number of the self character's utterances in this quest's
  demonstration, 1/(2n) for an utterance of that demonstration and 1/(2n) for an utterance among the
  Dungeon Master's top k for the context it was said in.

A step's speech reward is the increase of the episode's speech score: each demonstration utterance pays once and the
top-k bonus once per distinct utterance, not on every repeat as the paper's literal reading (kept as
``top_k_every_repeat=True``), which can be farmed (docs/deviations.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field


def act_reward(goal_reached_now: bool) -> float:
    """1 for the turn that reaches the act goal (self or partner act completion), 0 otherwise."""
    return 1.0 if goal_reached_now else 0.0


@dataclass
class SpeechScore:
    """What an episode has earned for speech so far: the demonstration utterances said and the distinct
    utterances said while in the DM's top k. ``score`` (in [0, 1]) decides the speech goal."""

    n: int  # the self character's utterances in the quest's demonstration
    said: set[str] = field(default_factory=set)
    natural: set[str] = field(default_factory=set)

    @property
    def score(self) -> float:
        return (len(self.said) + len(self.natural)) / (2 * self.n) if self.n else 0.0


def speech_reward(
    score: SpeechScore,
    utterance: str,
    demo_utterances: set[str],
    in_dm_top_k: bool,
    top_k_every_repeat: bool = False,
) -> float:
    """The speech reward of saying ``utterance``, updating ``score``: the increase of the speech score (each
    demonstration utterance once, the top-k bonus once per distinct utterance), or with ``top_k_every_repeat`` the
    paper's literal reading (the top-k bonus on every repeat)."""
    if not score.n:
        return 0.0
    unit = 1 / (2 * score.n)
    reward = 0.0
    if utterance in demo_utterances and utterance not in score.said:
        score.said.add(utterance)
        reward += unit
    if in_dm_top_k:
        if utterance not in score.natural:
            score.natural.add(utterance)
            reward += unit
        elif top_k_every_repeat:
            reward += unit
    return reward
