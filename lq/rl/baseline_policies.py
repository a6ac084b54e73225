"""The baselines every agent result stands beside, in one place: the rules a :class:`lq.rl.acting.Actor` plays with
in place of an agent (so that they go through the same switch, candidates and environment), their registry, the
ceiling, and the demonstrations replayed through the environment.

* ``random``: uniform among the candidates a head chooses among (the whole spaces, or the valid candidates).
* ``overlap``: the candidate sharing most content words with the quest's short motivation (ties broken at random):
  the bar an agent that reads its motivation should clear.
* The ceiling: the share of quests whose goal is in the action space, the best act-goal rate an agent acting from that
  space can reach by itself.
* Demonstration replay: each demonstration's own turns (both sides) played through :class:`QuestEnv`: the rates the
  environment gives the data itself, which shows that it reproduces it. With ``partner="model"`` the self character's
  turns are the demonstration's and the environment's partner answers: how often it completes the goal when
  persuaded as the demonstration's partner was.
"""

from __future__ import annotations

import torch

from lq.envs.quest_env import QuestEnv
from lq.envs.replay import by_whom, replay_demonstrations
from lq.rl.registry import RULES
from lq.world.text import content_words

# the replay rows' episodes and who reached their goals (lq.envs.replay: the partner's calibration plays them too)
__all__ = ["by_whom", "replay_demonstrations"]


def word_overlap_scores(candidates: list[str], motivations: list[str]) -> torch.Tensor:
    """``[b, n]``: how many content words each candidate shares with each environment's short motivation."""
    words = [content_words(c) for c in candidates]
    out = torch.zeros(len(motivations), len(candidates))
    for i, motivation in enumerate(motivations):
        target = content_words(motivation)
        out[i] = torch.tensor([float(len(w & target)) for w in words])
    return out


def rule_scores(
    rule: str, action_space: list[str], utterance_space: list[str], motivations: list[str]
) -> tuple[torch.Tensor, torch.Tensor]:
    """A rule's action and utterance scores ``[b, n]`` for environments with these short motivations: all equal for
    ``random`` (the head samples uniformly), word overlap plus a little noise for ``overlap`` (ties: uniform)."""
    b = len(motivations)
    if rule == "random":
        return torch.zeros(b, len(action_space)), torch.zeros(b, len(utterance_space))
    if rule == "overlap":
        a = word_overlap_scores(action_space, motivations)
        u = word_overlap_scores(utterance_space, motivations)
        return a + 1e-3 * torch.rand(a.shape), u + 1e-3 * torch.rand(u.shape)
    raise ValueError(f"unknown baseline '{rule}': choose from {', '.join(RULES)} (or give an agent)")


def ceiling(env: QuestEnv) -> float:
    """The share of the environment's quests whose goal action is in the action space."""
    return sum(inst.quest.goal in env.action_index for inst in env.instances) / len(env.instances)
