"""Retrieval metrics: Hits@k of the gold candidate among scored candidates."""

from __future__ import annotations

import torch
from torchmetrics import Metric


def rank_of_gold(scores: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``[b]`` how many candidates score strictly higher than each example's gold one (0: the gold is first; ties
    are in the gold's favour, as in ParlAI's ranking metrics)."""
    return (scores > scores.gather(1, target.view(-1, 1))).sum(dim=1)


class HitsAtK(Metric):
    """Share of examples whose gold candidate ranks in the top ``k``.

    The rank counts candidates scoring strictly higher than the gold one, so ties are in the gold's
    favour, as in ParlAI's ranking metrics.
    """

    full_state_update = False

    def __init__(self, k: int):
        super().__init__()
        self.k = k
        self.add_state("hits", default=torch.tensor(0.0), dist_reduce_fx="sum")
        self.add_state("total", default=torch.tensor(0.0), dist_reduce_fx="sum")

    def update(self, scores: torch.Tensor, target: torch.Tensor) -> None:
        self.hits += (rank_of_gold(scores, target) < self.k).sum().to(self.hits.dtype)
        self.total += target.numel()

    def compute(self) -> torch.Tensor:
        return self.hits / self.total.clamp(min=1)
