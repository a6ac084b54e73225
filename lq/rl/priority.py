"""Priority sampling of quests (paper 4.2, after Graves et al. 2017): quests the agent has completed less
often are drawn more often. Weight of quest i: 1 / (1 + completions_i)."""

from __future__ import annotations

import random


class PrioritySampler:
    def __init__(self, num_quests: int):
        self.completions = [0] * num_quests
        self.plays = [0] * num_quests

    def __call__(self, rng: random.Random) -> int:
        weights = [1.0 / (1 + c) for c in self.completions]
        return rng.choices(range(len(weights)), weights=weights)[0]

    def record(self, index: int, completed: bool) -> None:
        self.plays[index] += 1
        self.completions[index] += int(completed)

    def state_dict(self) -> dict[str, list[int]]:
        return {"completions": list(self.completions), "plays": list(self.plays)}

    def load_state_dict(self, state: dict[str, list[int]]) -> None:
        if len(state["completions"]) != len(self.completions):
            raise ValueError("the priority table is for another set of quests")
        self.completions, self.plays = list(state["completions"]), list(state["plays"])
