"""Refusals that give the true reason (:func:`lq.world.refusals.refusal`), one test per kind, each through the parser
as a player or an agent types the command; a refused command changes nothing and is not listed."""

import pytest

from lq.world import step, valid_actions
from lq.world.refusals import refusal
from tests.world.helpers import build_world, fingerprint

VETERAN = "Goblin King\u2019s War veteran"  # a name as the real LIGHT DB spells it (U+2019)


@pytest.fixture
def world():
    """A squire in a hall with a knight, a veteran who holds a key and wears a helm, a hat on the floor, a chest with a
    coin on it, an apple, one of two twin swords (the other in the squire's hands), a worn cloak and a wielded dagger;
    a yard next door."""
    return build_world(
        {"hall": ["yard"], "yard": ["hall"]},
        {
            "me": {"name": "squire", "kind": "agent", "in": "hall"},
            "knight": {"name": "knight", "kind": "agent", "in": "hall"},
            "vet": {"name": VETERAN, "kind": "agent", "in": "hall"},
            "hat": {"name": "hat", "in": "hall", "wearable": True},
            "chest": {"name": "chest", "in": "hall", "container": True, "contain_size": 10, "gettable": False},
            "coin": {"name": "coin", "in": "chest"},
            "apple": {"name": "apple", "in": "hall", "food": True},
            "sword_1": {"name": "sword", "in": "me", "wieldable": True},
            "sword_2": {"name": "sword", "in": "hall", "wieldable": True},
            "cloak": {"name": "cloak", "in": "me", "wearable": True, "equipped": "worn"},
            "dagger": {"name": "dagger", "in": "me", "wieldable": True, "equipped": "wielded"},
            "key": {"name": "rusty key", "in": "vet"},
            "helm": {"name": "iron helm", "in": "vet", "wearable": True, "equipped": "worn"},
        },
    )


def refused(world, text: str) -> str:
    """The message of ``text`` refused: not listed, nothing changed."""
    me = world["me"]
    before = fingerprint(world)
    assert text not in valid_actions(world, me)
    result = step(world, me, text)
    assert not result.success, (text, result.message)
    assert fingerprint(world) == before
    return result.message


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # not here at all
        ("get lantern", "You don't see 'lantern' here."),
        # here, but not carried: where it is, and the command that takes it from there
        ("drop hat", "You aren't carrying the hat: it is here. Try 'get hat'."),
        ("eat apple", "You aren't carrying the apple: it is here. Try 'get apple'."),
        ("put coin in chest", "You aren't carrying the coin: it is on the chest. Try 'get coin from chest'."),
        # carried already, or inside a container rather than on the floor
        ("get cloak", "You already have the cloak."),
        ("get coin", "The coin is not on the floor here: it is on the chest. Try 'get coin from chest'."),
        ("get apple from chest", "The apple is not on the chest: it is here. Try 'get apple'."),
        # the wrong kind of thing, with the verb that does what was meant
        ("put sword in knight", "The knight is not a container. Try 'give sword to knight'."),
        ("give sword to chest", "The chest is not a character. Try 'put sword on chest'."),
        ("steal coin from chest", "The chest is not a character. Try 'get coin from chest'."),
        ("hug hat", "You can't hug the hat: it is not a character."),
        ("go hat", "The hat is not a place you can go to."),
        ("go hall", "You are already in hall."),
        ("hug squire", "You can't hug yourself."),
        ("get coin from hat", "The hat is not a container."),
        # already worn or wielded; equipped, so it comes off first
        ("wear cloak", "You are already wearing the cloak."),
        ("wield dagger", "You are already wielding the dagger."),
        ("wear dagger", "You are wielding the dagger: remove it first. Try 'remove dagger'."),
        ("drop cloak", "You are wearing the cloak: remove it first. Try 'remove cloak'."),
        ("give cloak to knight", "You are wearing the cloak: remove it first. Try 'remove cloak'."),
        ("wear sword", "The sword is not something you can wear."),
        # held by a character: taken with steal, never when worn
        (
            f"get rusty key from {VETERAN.lower()}",
            f"The {VETERAN} has the rusty key: from a character, you steal. "
            f"Try 'steal rusty key from {VETERAN.lower()}'.",
        ),
        (
            f"get iron helm from {VETERAN}",
            f"The {VETERAN} wears the iron helm: a thing worn or wielded can't be taken.",
        ),
        (
            f"steal iron helm from {VETERAN}",
            f"The {VETERAN} wears the iron helm: a thing worn or wielded can't be stolen.",
        ),
        ("get rusty key", f"The rusty key is not on the floor here: the {VETERAN} has it. Try 'steal rusty key from"),
        ("steal apple from knight", "The knight has no apple: it is here. Try 'get apple'."),
        # a twin's number once one of the twins is gone from the floor
        ("get sword 1", "There is only one sword here now: call it 'sword', not 'sword 1'."),
    ],
)
def test_a_refusal_gives_the_true_reason(world, text, reason):
    assert refused(world, text).startswith(reason)


def test_the_room_left_is_the_reason_where_it_is(world):
    world["me"].contain_size = 0  # hands full
    assert refused(world, "get hat") == "You can't get the hat: you can't carry that much more."
    world["chest"].contain_size = 0
    assert refused(world, "put sword on chest") == "You can't put the sword on the chest: there's no room left for it."


def test_a_name_with_a_separator_word_is_refused_for_what_it_names_not_for_a_split():
    """``get rare wood from a tree`` reads "rare wood" from "a tree" first, which is not here; the reason is about the
    one thing of that whole name, which the actor already has."""
    world = build_world(
        {"hall": []},
        {
            "me": {"name": "squire", "kind": "agent", "in": "hall"},
            "wood": {"name": "rare wood from a tree", "in": "me"},
        },
    )
    assert refused(world, "get rare wood from a tree") == "You already have the rare wood from a tree."


def test_refusal_is_none_for_a_possible_action_and_names_unknown_verbs(world):
    me = world["me"]
    assert refusal(world, me, "get", world["hat"]) is None
    assert refusal(world, me, "get", "hat") is None  # a name, looked for in sight: the hat on the floor
    with pytest.raises(ValueError, match="unknown verb 'juggle'"):
        refusal(world, me, "juggle", world["hat"])


def test_every_verb_refused_goes_through_the_one_function(world):
    """For each of the 13 verbs and remove, a refused command's message is :func:`refusal`'s for its names."""
    me = world["me"]
    cases = {
        "go": ("hat", None),
        "follow": ("hat", None),
        "hit": ("apple", None),
        "hug": ("chest", None),
        "get": ("coin", None),
        "put": ("sword", "knight"),
        "drop": ("hat", None),
        "steal": ("coin", "chest"),
        "give": ("sword", "chest"),
        "wear": ("cloak", None),
        "wield": ("dagger", None),
        "remove": ("sword", None),
        "eat": ("sword", None),
        "drink": ("apple", None),
    }
    for verb, (obj, target) in cases.items():
        sep = {"put": "in", "give": "to"}.get(verb, "from")
        text = f"{verb} {obj}" + (f" {sep} {target}" if target else "")
        expected = refusal(world, me, verb, obj, target)
        if verb in ("remove", "eat", "wear", "wield"):  # carried: the name resolves to the node
            node = next(n for n in me.contents.values() if n.key == obj)
            expected = refusal(world, me, verb, node)
        assert expected and refused(world, text) == expected, verb
