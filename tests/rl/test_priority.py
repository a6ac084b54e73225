import json
import math
import random

import pytest

from lq.rl.priority import PrioritySampler

N, UNSOLVABLE, EPISODES, TAIL = 100, 20, 5000, 2000  # quests 0..19 can never be completed


class _Agent:
    """Never completes quests 0..19; completes any other with probability 0.1 for its first 3 plays, 0.9 after."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.plays = [0] * N

    def play(self, quest: int) -> bool:
        p = 0.0 if quest < UNSOLVABLE else 0.9 if self.plays[quest] >= 3 else 0.1
        self.plays[quest] += 1
        return self.rng.random() < p


def _unsolvable_share(drawn: list[int]) -> float:
    return sum(i < UNSOLVABLE for i in drawn) / len(drawn)


def _documented_share(sampler: PrioritySampler) -> float:
    """P(unsolvable) = mix * u / N + (1 - mix) * u / (u + W_S), the module docstring's formula."""
    solvable_mass = sum(max(f, sampler.floor) for f in sampler.failure[UNSOLVABLE:])
    return sampler.mix * UNSOLVABLE / N + (1 - sampler.mix) * UNSOLVABLE / (UNSOLVABLE + solvable_mass)


def test_unsolvable_quests_take_a_bounded_share_unlike_under_the_old_rule():
    mix = 0.5
    sampler, rng, agent = PrioritySampler(N, mix=mix, decay=0.9), random.Random(0), _Agent(1)
    drawn, expected, variance = [], 0.0, 0.0
    for t in range(EPISODES):
        if t >= EPISODES - TAIL:  # the exact probability of drawing an unsolvable quest at this step
            share = _documented_share(sampler)
            expected, variance = expected + share, variance + share * (1 - share)
        quest = sampler(rng)
        drawn.append(quest)
        sampler.record(quest, agent.play(quest))
    new_share = _unsolvable_share(drawn[-TAIL:])
    assert sampler.failure[:UNSOLVABLE] == [1.0] * UNSOLVABLE  # never completed: failure stays exactly 1
    assert new_share <= mix * UNSOLVABLE / N + (1 - mix)
    # the draws follow the documented probabilities: within 4 standard deviations of their sum over the tail
    assert abs(new_share * TAIL - expected) <= 4 * math.sqrt(variance)
    assert sum(sampler.probabilities()[:UNSOLVABLE]) == pytest.approx(_documented_share(sampler))

    # the paper's literal rule, weight 1 / (1 + completions), on the same simulated agent
    rng, agent, completions, old_drawn = random.Random(0), _Agent(1), [0] * N, []
    for _ in range(EPISODES):
        quest = rng.choices(range(N), weights=[1 / (1 + c) for c in completions])[0]
        old_drawn.append(quest)
        completions[quest] += agent.play(quest)
    old_share = _unsolvable_share(old_drawn[-TAIL:])
    assert old_share > 0.4 and old_share > new_share + 0.2  # ~0.78 against ~0.43
    assert old_share > _unsolvable_share(old_drawn[-2 * TAIL : -TAIL])  # and it keeps growing


def _replay(sampler: PrioritySampler, quest: int, outcomes: str) -> None:
    for outcome in outcomes:
        sampler.record(quest, outcome == "S")


@pytest.mark.parametrize("mix", [0.0, 0.5, 0.9])
def test_recent_failures_are_drawn_more_than_recent_successes(mix):
    sampler = PrioritySampler(5, mix=mix)
    _replay(sampler, 0, "F" * 10)
    _replay(sampler, 1, "S" * 5 + "F" * 5)  # same completion count as quest 2, which the old rule could not tell apart
    _replay(sampler, 2, "F" * 5 + "S" * 5)
    _replay(sampler, 3, "S" * 10)
    p = sampler.probabilities()
    assert p[4] == pytest.approx(p[0])  # unplayed: maximum priority, like a quest never completed
    assert p[0] > p[1] > p[2] > p[3]
    if mix <= 0.5:  # at mix 0.9 the gaps are within sampling noise of 4000 draws
        rng = random.Random(0)
        drawn = [sampler(rng) for _ in range(4000)]
        counts = [drawn.count(i) for i in range(5)]
        assert counts[0] > counts[2] > counts[3] and counts[1] > counts[3]


def test_a_quest_that_starts_being_solved_loses_its_priority():
    sampler = PrioritySampler(2, mix=0.0)
    _replay(sampler, 0, "F" * 50)
    _replay(sampler, 1, "F" * 50)
    assert sampler.probabilities() == pytest.approx([0.5, 0.5])
    _replay(sampler, 0, "S" * 10)  # the old rule would still give it weight 1 / 11 of an unsolved quest's forever
    _replay(sampler, 1, "F" * 10)
    assert sampler.probabilities()[0] == pytest.approx(0.9**10 / (1 + 0.9**10))


def test_all_successes_give_uniform_probabilities():
    sampler = PrioritySampler(5, mix=0.0)
    for quest in range(5):
        _replay(sampler, quest, "F" * quest + "S" * (50 + 10 * quest))
    assert sampler.probabilities() == pytest.approx([0.2] * 5)
    no_floor = PrioritySampler(5, mix=0.0, floor=0.0)
    no_floor.load_state_dict({"failure": [0.0] * 5, "plays": [3] * 5})
    assert no_floor.probabilities() == pytest.approx([0.2] * 5)
    assert {no_floor(random.Random(seed)) for seed in range(200)} == set(range(5))


def test_state_dict_round_trips_and_rejects_other_tables():
    sampler, rng = PrioritySampler(30, mix=0.3, decay=0.8), random.Random(5)
    for _ in range(200):
        quest = sampler(rng)
        sampler.record(quest, quest % 3 == 0 and rng.random() < 0.7)
    state = json.loads(json.dumps(sampler.state_dict()))  # what survives a checkpoint
    restored = PrioritySampler(30, mix=0.3, decay=0.8)
    restored.load_state_dict(state)
    assert restored.failure == sampler.failure and restored.plays == sampler.plays
    rng_a, rng_b = random.Random(9), random.Random(9)
    for step in range(100):
        a, b = sampler(rng_a), restored(rng_b)
        assert a == b
        sampler.record(a, step % 2 == 0)
        restored.record(b, step % 2 == 0)
    assert restored.state_dict() == sampler.state_dict()

    before = restored.state_dict()
    with pytest.raises(ValueError, match="is for 30 quests but this sampler has 31"):
        PrioritySampler(31).load_state_dict(state)
    with pytest.raises(ValueError, match="lacks \\['plays'\\]"):
        restored.load_state_dict({"failure": state["failure"]})
    with pytest.raises(ValueError, match="old 1 / \\(1 \\+ completions\\) sampler"):
        restored.load_state_dict({"completions": [0] * 30, "plays": [0] * 30})
    with pytest.raises(ValueError, match="'failure' must hold numbers in \\[0, 1\\]"):
        restored.load_state_dict({"failure": [1.5] * 30, "plays": state["plays"]})
    assert restored.state_dict() == before  # a rejected state changes nothing


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"num_quests": 0}, "num_quests"),
        ({"mix": -0.1}, "mix"),
        ({"mix": 1.5}, "mix"),
        ({"mix": math.nan}, "mix"),
        ({"decay": 0.0}, "decay"),
        ({"decay": 1.0}, "decay"),
        ({"floor": -0.01}, "floor"),
    ],
)
def test_arguments_are_validated(kwargs, argument):
    with pytest.raises(ValueError, match=f"^{argument} must be"):
        PrioritySampler(**{"num_quests": 4, **kwargs})


def test_record_rejects_an_index_outside_the_table():
    sampler = PrioritySampler(3)
    with pytest.raises(IndexError, match="out of range for a table of 3 quests"):
        sampler.record(-1, True)  # would silently update the last quest
    assert sampler.plays == [0, 0, 0]
