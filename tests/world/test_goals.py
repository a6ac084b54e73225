import pytest

from lq.world import ActGoal, GoalError, World, step
from tests.samples import tiny_graph


def _world():
    world = World.from_json(tiny_graph())
    return world, world["dragon_1"], world["knight_2"]


def _run(world, goal, actor, text):
    result = step(world, actor, text)
    assert result.success, result.message
    return goal.reached_by(world, actor, result.action)


def test_get_goal_by_self_act_completion():
    world, dragon, knight = _world()
    goal = ActGoal.parse(world, "get golden dragon egg", "dragon_1", "knight_2")
    assert not goal.satisfied(world)
    assert _run(world, goal, dragon, "hug knight") is None
    assert _run(world, goal, dragon, "steal golden dragon egg from knight") == "self"


def test_get_goal_by_partner_act_completion():
    world, dragon, knight = _world()
    goal = ActGoal.parse(world, "get golden dragon egg", "dragon_1", "knight_2")
    assert _run(world, goal, knight, "give golden dragon egg to dragon") == "partner"


def test_give_goal_reached_only_when_the_receiver_holds_it():
    world, dragon, knight = _world()
    step(world, dragon, "steal golden dragon egg from knight")
    goal = ActGoal.parse(world, "give golden dragon egg to knight", "dragon_1", "knight_2")
    assert _run(world, goal, dragon, "drop golden dragon egg") is None
    assert _run(world, goal, knight, "get golden dragon egg") == "partner"  # the knight took it himself


def test_event_goals():
    world, dragon, knight = _world()
    hit = ActGoal.parse(world, "hit the knight", "dragon_1", "knight_2")
    hug = ActGoal.parse(world, "hug knight", "dragon_1", "knight_2")
    assert _run(world, hit, knight, "hit dragon") is None  # being hit is not hitting
    assert _run(world, hug, knight, "hug dragon") == "partner"  # a hug is mutual
    assert _run(world, hit, dragon, "hit knight") == "self"


def test_goal_words_that_name_nothing():
    world, *_ = _world()
    with pytest.raises(GoalError, match="no object .orders. in this world"):  # real quests hold free-text goals
        ActGoal.parse(world, "give orders to knight", "dragon_1")
    with pytest.raises(GoalError, match="no object .silver sword. in this world"):
        ActGoal.parse(world, "get silver sword", "dragon_1")
    with pytest.raises(GoalError) as refused:  # what is missing, what there is, and the fix
        ActGoal.parse(world, "give golden dragon egg to wizard", "dragon_1")
    assert str(refused.value) == (
        "goal 'give golden dragon egg to wizard': no character 'wizard' in this world; name one of its characters "
        "(dragon, knight) or add it to the quest's graph"
    )
    with pytest.raises(GoalError, match="unknown verb"):
        ActGoal.parse(world, "ponder the orb", "dragon_1")


def test_wear_and_go_goals(light_worlds):
    world = World.load(next(p for p in light_worlds if p.stem == "simple_world"))
    kitty = world.find_agent("kitty")
    go = ActGoal.parse(world, "go to the orc cave", kitty.id)
    wield = ActGoal.parse(world, "wield shovel", kitty.id)
    assert _run(world, wield, kitty, "get shovel") is None
    assert _run(world, wield, kitty, "wield shovel") == "self"
    assert _run(world, go, kitty, "go orc cave") == "self"
