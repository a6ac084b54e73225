from hypothesis import given, settings
from hypothesis import strategies as st

from lq.world import World, step, valid_actions
from tests.samples import tiny_graph
from tests.world.helpers import fingerprint

WORLD = World.from_json(tiny_graph())
WORDS = [
    "get",
    "pick",
    "up",
    "put",
    "in",
    "on",
    "from",
    "to",
    "give",
    "steal",
    "the",
    "a",
    "golden",
    "dragon",
    "egg",
    "knight",
    "go",
    "hug",
    "hit",
    "wear",
    "remove",
    "eat",
    "drink",
    "drop",
    "follow",
    "lair",
    " ",
    "",
]


def _check(text):
    world = WORLD.copy()
    actor = world["dragon_1"]
    before = fingerprint(world)
    valid = valid_actions(world, actor)
    result = step(world, actor, text)
    assert isinstance(result.message, str) and result.message
    if result.success:
        assert result.action in valid.values()
    else:
        assert fingerprint(world) == before


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=60))
def test_arbitrary_strings_never_raise_and_failures_change_nothing(text):
    _check(text)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join))
def test_command_like_strings_never_raise_and_failures_change_nothing(text):
    _check(text)


@settings(max_examples=50, deadline=None)
@given(st.one_of(st.none(), st.integers(), st.lists(st.text())))
def test_non_text_input_is_refused(value):
    world = WORLD.copy()
    result = step(world, world["dragon_1"], value)
    assert not result.success
