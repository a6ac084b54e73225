"""Priority sampling of quests (paper 4.2, after Graves et al. 2017).

The paper's weight by completion count lets never-solvable quests take ever more of training; this sampler draws by
*recent* failure mixed with the uniform distribution instead (docs/deviations.md).

Recent failure. Per quest i an exponential moving average of failure, f_i <- x + decay * (f_i - x) with x = 1 for
a failed episode and 0 for a completed one; an unplayed quest starts at f_i = 1 (maximum priority). A moving average
rather than a window of the last W outcomes because it is one float per quest (checkpoint and update O(1), no ring
buffers), it needs no convention for half-filled windows (a window over one success says f = 0 at once, over one
failure f = 1), and its prior washes out smoothly: it remembers about 1 / (1 - decay) plays (10 at decay 0.9).
Written as x + decay * (f - x), a quest that only ever fails keeps f = 1.0 exactly.

Probabilities. With w_i = max(f_i, floor) and N quests,

    p_i = mix / N + (1 - mix) * w_i / sum_j w_j.

The floor (default 0.01, about 44 successes in a row at decay 0.9) treats quests the agent solves reliably as equally
mastered rather than ranking them by the length of their success streak, so a table where everything succeeds is
uniform. With floor = 0 a table whose failures are all 0 falls back to uniform.

Bounds. Every quest keeps p_i >= mix / N, at least mix times its uniform share (solved quests are still rehearsed),
and none gets more than mix / N + (1 - mix). For a set U of u quests that can never be completed (w_i = 1 for ever)
and the other N - u quests with total weight W_S = sum_{j not in U} w_j,

    P(U) = mix * u / N + (1 - mix) * u / (u + W_S)
        <= mix * u / N + (1 - mix) * u / (u + (N - u) * floor)      (W_S >= (N - u) * floor)
        <= mix * u / N + (1 - mix).

Unlike the old rule this depends on the other quests' *recent* failure mass, not on time: if they settle at a failure
rate r (W_S ~ (N - u) * r), P(U) ~ mix * u / N + (1 - mix) * u / (u + (N - u) * r), e.g. u / N = 0.2, mix = 0.5:
0.27 at r = 0.5, 0.46 at r = 0.1, and at most 0.581 with the default floor however well the rest is solved. No
failure-rate rule can tell an unsolvable quest from a hard one; mix is the knob that caps what the former can take.
"""

from __future__ import annotations

import math
import numbers
import operator
import random
from collections.abc import Mapping

STATE_KEYS = ("failure", "plays")


class PrioritySampler:
    """Draws quest indices with probability mix / N + (1 - mix) * (recent failure share); see the module docstring.

    ``failure`` holds the per-quest moving averages of failure, ``plays`` how many episodes of each were recorded.
    ``state_dict`` holds both; the settings (mix, decay, floor) come from the constructor, so a resumed run may change
    them.
    """

    def __init__(self, num_quests: int, mix: float = 0.5, decay: float = 0.9, floor: float = 0.01):
        if isinstance(num_quests, bool) or not isinstance(num_quests, int) or num_quests < 1:
            raise ValueError(f"num_quests must be a positive int (how many quests to sample from), got {num_quests!r}")
        if not 0.0 <= mix <= 1.0:
            raise ValueError(
                f"mix must be in [0, 1] (the uniform share: 0 samples by failure only, 1 uniformly), got {mix!r}"
            )
        if not 0.0 < decay < 1.0:
            raise ValueError(
                f"decay must be in (0, 1) exclusive (the moving average keeps about 1 / (1 - decay) plays; "
                f"0.9 remembers about 10), got {decay!r}"
            )
        if not 0.0 <= floor <= 1.0:
            raise ValueError(f"floor must be in [0, 1] (the smallest failure weight, e.g. 0.01), got {floor!r}")
        self.mix = float(mix)
        self.decay = float(decay)
        self.floor = float(floor)
        self.failure = [1.0] * num_quests
        self.plays = [0] * num_quests
        self._indices = range(num_quests)

    def __len__(self) -> int:
        return len(self.failure)

    def probabilities(self) -> list[float]:
        """p_i = mix / N + (1 - mix) * w_i / sum_j w_j with w_i = max(failure_i, floor); uniform when sum w = 0."""
        n = len(self.failure)
        weights = [max(f, self.floor) for f in self.failure]
        total = sum(weights)
        if total <= 0.0:  # floor 0 and no recent failure anywhere: nothing to prioritise
            return [1.0 / n] * n
        base, scale = self.mix / n, (1.0 - self.mix) / total
        return [base + scale * w for w in weights]

    def __call__(self, rng: random.Random) -> int:
        return rng.choices(self._indices, weights=self.probabilities())[0]

    def record(self, index: int, completed: bool) -> None:
        """One finished episode of quest ``index``: completed or not."""
        index = operator.index(index)
        if not 0 <= index < len(self.failure):
            raise IndexError(f"quest index {index} out of range for a table of {len(self.failure)} quests")
        outcome = 0.0 if completed else 1.0
        self.failure[index] = outcome + self.decay * (self.failure[index] - outcome)
        self.plays[index] += 1

    def state_dict(self) -> dict[str, list]:
        return {"failure": list(self.failure), "plays": list(self.plays)}

    def load_state_dict(self, state: Mapping[str, list]) -> None:
        """Restores ``failure`` and ``plays``; the sampler is left unchanged when the state is rejected."""
        missing = [key for key in STATE_KEYS if key not in state]
        if missing:
            hint = (
                " (this is a table of the old 1 / (1 + completions) sampler, which kept no recent outcomes: "
                "start a fresh table by leaving it out)"
                if "completions" in state
                else ""
            )
            raise ValueError(f"priority state lacks {missing} (it needs keys {list(STATE_KEYS)}){hint}")
        failure, plays = list(state["failure"]), list(state["plays"])
        n = len(self.failure)
        for key, values in (("failure", failure), ("plays", plays)):
            if len(values) != n:
                raise ValueError(
                    f"priority state {key!r} is for {len(values)} quests but this sampler has {n}: "
                    "it was saved for another set of quests (other data or split)"
                )
        if not all(isinstance(f, numbers.Real) and math.isfinite(f) and 0.0 <= f <= 1.0 for f in failure):
            raise ValueError("priority state 'failure' must hold numbers in [0, 1]")
        if not all(isinstance(p, numbers.Integral) and not isinstance(p, bool) and p >= 0 for p in plays):
            raise ValueError("priority state 'plays' must hold non-negative ints")
        self.failure = [float(f) for f in failure]
        self.plays = [int(p) for p in plays]
