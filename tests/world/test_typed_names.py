"""Names as people type them: one normalisation (:func:`lq.world.text.match_key`: Unicode compatibility form,
typographic apostrophes, quotes and dashes, case, articles) on what is typed and what a world says, for commands,
``--as``/``PLAY_AS`` and the Gymnasium environment's free text. The listed action texts keep the world's spelling."""

import json

import pytest

from lq.world import World, parse, step, valid_actions
from lq.world.play import complete_names
from lq.world.scope import name_in
from tests.samples import tiny_graph
from tests.world.helpers import build_world

CURLY, STRAIGHT = "\u2019", "'"
DASHES = ("\u2013", "\u2014", "\u2010", "\u2212")  # en dash, em dash, hyphen, minus


def _with_the(world: World, actor, text: str, action) -> str:
    """``text`` with "the" before each of its names (``get the sword from the chest``)."""
    verb, o, t = action
    rest = text[len(verb) + 1 :]
    if t is None:
        return f"{verb} the {rest}"
    sep = "to" if verb == "give" else t.surface if verb == "put" else "from"
    target = name_in(world, actor, verb, "target", t)
    assert rest.endswith(f" {sep} {target}"), (text, target)
    return f"{verb} the {rest[: -len(target) - len(sep) - 2]} {sep} the {target}"


def variants(world: World, actor, text: str, action) -> set[str]:
    """How a person might type the listed ``text``: in capitals, with curly or straight apostrophes, with dashes for
    hyphens, with "the" before each name, and all of those at once."""
    out = {text.upper(), text.title(), _with_the(world, actor, text, action)}
    swaps = [(STRAIGHT, CURLY), (CURLY, STRAIGHT)] + [("-", d) for d in DASHES]
    for a, b in swaps:
        if a in text:
            out.add(text.replace(a, b))
            out.add(_with_the(world, actor, text, action).replace(a, b).upper())
    out.discard(text)
    return out


def test_typed_variants_of_every_valid_action_parse_to_that_action(light_worlds):
    """Over the eight real LIGHT worlds, three characters each (those among the most names with apostrophes and
    hyphens): every valid action typed as people type it."""
    tried = {"all": 0, STRAIGHT: 0, "-": 0}
    for path in light_worlds:
        world = World.load(path)
        # the three whose actions name the most things spelled with apostrophes or hyphens
        marked = {a.id: sum(STRAIGHT in t or "-" in t for t in valid_actions(world, a)) for a in world.agents()}
        for actor in sorted(world.agents(), key=lambda a: -marked[a.id])[:3]:
            for text, action in valid_actions(world, actor).items():
                for typed in variants(world, actor, text, action):
                    assert parse(world, actor, typed) == (action, ""), (path.name, actor.name, text, typed)
                    tried["all"] += 1
                tried[STRAIGHT] += STRAIGHT in text
                tried["-"] += "-" in text
    assert tried["all"] > 1500 and tried[STRAIGHT] > 50 and tried["-"] > 10, tried  # apostrophes and hyphens too


def test_a_world_that_spells_with_curly_apostrophes_and_dashes_matches_straight_typing():
    world = build_world(
        {"hall": []},
        {
            "me": {"name": "squire", "kind": "agent", "in": "hall"},
            "vet": {"name": "Goblin King\u2019s War veteran", "kind": "agent", "in": "hall"},
            "axe": {"name": "master\u2013at\u2013arms\u2019 axe", "in": "hall"},
            "mug": {"name": "\uff2d\uff35\uff27", "in": "hall"},  # full-width letters
        },
    )
    me = world["me"]
    listed = valid_actions(world, me)
    assert "hug goblin king\u2019s war veteran" in listed  # the world's own spelling, unchanged
    assert "get master\u2013at\u2013arms\u2019 axe" in listed
    for typed, expected in [
        ("hug goblin king's war veteran", "hug goblin king\u2019s war veteran"),
        ("Hug the Goblin King's War Veteran", "hug goblin king\u2019s war veteran"),
        ("hug goblin king\u02bcs war veteran", "hug goblin king\u2019s war veteran"),
        ("get master-at-arms' axe", "get master\u2013at\u2013arms\u2019 axe"),
        ("take the MASTER\u2014AT\u2014ARMS' AXE", "get master\u2013at\u2013arms\u2019 axe"),
        ("get mug", "get \uff4d\uff55\uff47"),
    ]:
        assert parse(world, me, typed) == (listed[expected], ""), typed
    # lq play's partial names too: "veteran" and "king's" are words of the curly name
    assert complete_names(world, me, "hug king's veteran") == ("hug goblin king\u2019s war veteran", "")


def test_a_character_of_the_real_light_db_is_played_as_typed_with_a_straight_apostrophe(light_env):
    """``--as`` and ``PLAY_AS`` (``World.find_agent``) with the DB's "Goblin King’s War veterans" (U+2019)."""
    name = next(c["name"] for c in json.loads((light_env / "characters.json").read_text()) if CURLY in c["name"])
    graph = tiny_graph()
    graph["nodes"]["knight_2"]["name"] = name
    world = World.from_json(graph)
    typed = name.replace(CURLY, STRAIGHT)
    assert world.find_agent(typed) is world["knight_2"]
    assert world.find_agent(typed.upper()) is world["knight_2"]
    assert step(world, world["dragon_1"], f"hug {typed}").success


def test_an_unknown_character_is_still_refused_with_the_names_there_are():
    world = World.from_json(tiny_graph())
    with pytest.raises(LookupError, match="no character 'wizard' in this world; characters: dragon, knight"):
        world.find_agent("wizard")
