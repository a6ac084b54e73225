import random

import pytest

from lq.rl.curriculum import RarityCurriculum, goal_verb, rarity_order
from lq.rl.priority import PrioritySampler


def test_quests_are_ordered_by_their_goal_verbs_count_in_the_reference_unseen_verbs_last():
    reference = ["get the sword", "get a cup", "Give the cup to the dwarf", "hit the troll"]
    goals = ["hit the orc", "get the apple", "eat the bread", "give the rope to the king", "get the axe"]
    assert goal_verb(reference[2]) == "give"
    # get (2) first, in their order; then hit and give (1 each) in theirs; eat (never in the reference) last
    assert rarity_order(goals, reference) == [1, 4, 0, 3, 2]


def test_the_pool_opens_from_the_common_end_stage_by_stage():
    curriculum = RarityCurriculum(PrioritySampler(10), [9, 8, 7, 6, 5, 4, 3, 2, 1, 0], stages=4, interactions=90)
    assert [curriculum.stage(i) for i in (0, 29, 30, 59, 60, 89, 90, 10**6)] == [1, 1, 2, 2, 3, 3, 4, 4]
    assert curriculum.open(0) == [9, 8, 7]  # ceil(10 / 4)
    assert curriculum.open(30) == [9, 8, 7, 6, 5] and len(curriculum.open(60)) == 8 and len(curriculum.open(90)) == 10
    assert RarityCurriculum(PrioritySampler(3), [2, 1, 0], stages=1, interactions=5).open(0) == [2, 1, 0]


def test_draws_are_priority_sampling_restricted_to_the_open_quests():
    priority = PrioritySampler(6, mix=0.0)
    for i in range(6):  # quest 0 always solved, the others always failed
        for _ in range(50):
            priority.record(i, completed=i == 0)
    curriculum = RarityCurriculum(priority, [0, 1, 2, 3, 4, 5], stages=3, interactions=30)  # 2, 4, 6 open
    rng = random.Random(0)
    first = [curriculum(rng) for _ in range(400)]
    assert set(first) == {0, 1} and first.count(1) > 20 * first.count(0)  # failure-weighted, quest 0 at the floor
    curriculum.reach(30)
    assert set(curriculum(rng) for _ in range(400)) == set(range(6))
    curriculum.record(3, completed=True)
    assert curriculum.state_dict() == priority.state_dict() and priority.plays[3] == 51


def test_a_curriculum_that_cannot_open_is_refused():
    with pytest.raises(ValueError, match="permutation"):
        RarityCurriculum(PrioritySampler(3), [0, 1], stages=2, interactions=10)
    with pytest.raises(ValueError, match="stages=0"):
        RarityCurriculum(PrioritySampler(3), [0, 1, 2], stages=0, interactions=10)
