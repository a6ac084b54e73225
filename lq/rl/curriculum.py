"""The rarity curriculum of Ammanabrolu, Jia and Riedl, "Situated Dialogue Learning through Procedural Environment
Generation" (ACL 2022): training quests ordered from common to rare, and the pool widened from the common end.

A quest's rarity there is that of its short motivation's first verb in the original training distribution. lq's
generated short motivations open with a template ("I need to ...", "I have to ...", "I must take ..."), so their
first verb says which template was drawn, not what the quest asks; lq ranks by the **goal's verb** (``get``, ``give``,
``steal``, ... : the first word of the quest's goal action) instead, counted over the dataset's own training quests
(without a training pool's, :mod:`lq.data.pools`: the original distribution). A verb they never have is rarer than
every verb they have.

The schedule widens by environment interactions: with ``stages`` S and ``interactions`` I, stage k (1 to S) opens
the first ceil(k N / S) quests of the order, from interactions (k - 1) I / (S - 1) on: the commonest N / S from the
start, the whole pool from I on (one stage: the whole pool from the start).
Within the open quests, priority sampling draws as it does over all of them (:class:`PrioritySampler`'s
probabilities, restricted and renormalised).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence

from lq.data.dataset import load_dataset
from lq.rl.priority import PrioritySampler


def goal_verb(goal: str) -> str:
    """The verb of a goal action (``"give the basket to the dwarf"`` -> ``"give"``)."""
    return goal.split(maxsplit=1)[0].lower() if goal.strip() else ""


def dataset_rarity_order(goals: Sequence[str], data_dir: str) -> list[int]:
    """:func:`rarity_order` of ``goals`` (a pool's quests' goals) by the goals of ``data_dir``'s own training quests
    (those of its training demonstrations)."""
    dataset = load_dataset(data_dir)
    quests = dataset.quests_by_id()
    return rarity_order(goals, [quests[d.conv_extra["quest_id"]].goal for d in dataset.demos.train])


def rarity_order(goals: Sequence[str], reference: Sequence[str]) -> list[int]:
    """Indices of ``goals`` from the most common verb in ``reference`` (the reference quests' goals) to the rarest;
    equals keep their order."""
    counts = Counter(goal_verb(g) for g in reference)
    return sorted(range(len(goals)), key=lambda i: -counts.get(goal_verb(goals[i]), 0))


class RarityCurriculum:
    """A quest sampler: ``priority`` restricted to the quests the schedule has opened (see the module doc). ``order``:
    :func:`rarity_order` of the pool; :meth:`reach` tells it the interactions so far (the RL module, before each
    rollout). ``record``, ``state_dict`` and ``load_state_dict`` are the priority table's (the schedule depends only on
    the interactions, which a checkpoint's step holds)."""

    def __init__(self, priority: PrioritySampler, order: Sequence[int], stages: int, interactions: int):
        if sorted(order) != list(range(len(priority))):
            raise ValueError(f"order must be a permutation of the {len(priority)} quests' indices")
        if stages < 1 or interactions < 1:
            raise ValueError(
                f"curriculum: stages={stages}, interactions={interactions}: both must be at least 1 (stages the pool "
                "opens in, and the interactions by which all of it is open)"
            )
        self.priority, self.order = priority, list(order)
        self.stages, self.interactions = stages, interactions
        self.reached = 0

    def __len__(self) -> int:
        return len(self.priority)

    def stage(self, interactions: int | None = None) -> int:
        """The stage (1 to ``stages``) at ``interactions`` (None: those reached)."""
        at = self.reached if interactions is None else interactions
        return min(self.stages, 1 + at * (self.stages - 1) // self.interactions)

    def open(self, interactions: int | None = None) -> list[int]:
        """The quest indices open at ``interactions`` (None: those reached), commonest first."""
        n = len(self.order)
        return self.order[: math.ceil(self.stage(interactions) * n / self.stages)]

    def reach(self, interactions: int) -> None:
        self.reached = interactions

    def __call__(self, rng: random.Random) -> int:
        indices = self.open()
        p = self.priority.probabilities()
        return rng.choices(indices, weights=[p[i] for i in indices])[0]

    def record(self, index: int, completed: bool) -> None:
        self.priority.record(index, completed)

    def state_dict(self) -> dict[str, list]:
        return self.priority.state_dict()

    def load_state_dict(self, state) -> None:
        self.priority.load_state_dict(state)
