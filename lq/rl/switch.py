"""The switch (paper 4.2, appendix 8.2): when the agent acts and when it speaks.

* ``HardcodedSwitch``: act every N-th step (N = 3 in the paper), speak otherwise.
* ``RatioSwitch``: act after every k utterances, where k is the ratio of utterances to actions in the
  quest's human demonstration during training, and the average ratio over the training
  demonstrations at test time (the paper's "learned" switch: learned from the data, not by gradient).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from lq.data.demos import Demonstration

SWITCHES = ("hardcoded", "ratio")  # the switches of section 4.2, by the names configs and the command line use


class HardcodedSwitch:
    def __init__(self, every: int = 3):
        if every < 1:
            raise ValueError("the switch must act at least every step (every >= 1)")
        self.every = every

    def acts(self, steps: torch.Tensor, since_action: torch.Tensor, k: torch.Tensor | None = None) -> torch.Tensor:
        """``[batch]`` booleans: act at steps N-1, 2N-1, ... of each episode."""
        return steps % self.every == self.every - 1


def utterance_action_ratio(demo: Demonstration) -> float:
    """Utterances per action of the self character in a demonstration (all speech: the utterance count)."""
    speech, actions = len(demo.self_acts("speech")), len(demo.self_acts("action"))
    return speech / max(actions, 1)


class RatioSwitch:
    def __init__(self, train_demos: Sequence[Demonstration]):
        ratios = [utterance_action_ratio(d) for d in train_demos]
        if not ratios:
            raise ValueError("the ratio switch needs training demonstrations to take its ratios from")
        self.average_k = max(1, round(sum(ratios) / len(ratios)))

    @staticmethod
    def k_for(demo: Demonstration | None, fallback: int) -> int:
        return max(1, round(utterance_action_ratio(demo))) if demo is not None else fallback

    def acts(self, steps: torch.Tensor, since_action: torch.Tensor, k: torch.Tensor | None = None) -> torch.Tensor:
        """Act once ``k`` utterances have been said since the last action (``k`` per environment, or the average)."""
        k = torch.full_like(since_action, self.average_k) if k is None else k
        return since_action >= k
