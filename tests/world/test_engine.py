import json
import random

import pytest

from lq.world import World, parse, step, valid_actions
from tests.samples import tiny_graph
from tests.world.helpers import capacities, check_invariants, fingerprint

ALL_VERB_FORMS = [
    "go {a}",
    "follow {a}",
    "hit {a}",
    "hug {a}",
    "get {a}",
    "get {a} from {b}",
    "put {a} in {b}",
    "put {a} on {b}",
    "drop {a}",
    "steal {a} from {b}",
    "give {a} to {b}",
    "wear {a}",
    "wield {a}",
    "remove {a}",
    "eat {a}",
    "drink {a}",
]


def test_every_world_loads_and_lists_actions_for_every_character(light_worlds):
    for path in light_worlds:
        world = World.load(path)
        check_invariants(world)
        for agent in world.agents():
            actions = valid_actions(world, agent)
            # each listed text is its action's canonical command, or the name the listing gives one of two alike,
            # and the parser reads each back as that very action
            assert all(parse(world, agent, text) == (a, "") for text, a in actions.items())
            if agent.container.neighbors:
                assert any(t.startswith("go ") for t in actions), (path.name, agent.id)


def _invalid_texts(world, agent, valid, rng, n):
    names = [node.key for node in rng.sample(list(world.nodes.values()), min(12, len(world.nodes)))]
    out = []
    for _ in range(n * 4):
        text = rng.choice(ALL_VERB_FORMS).format(a=rng.choice(names), b=rng.choice(names))
        if text not in valid:
            out.append(text)
        if len(out) == n:
            break
    return out


@pytest.mark.parametrize("seed", [0])
def test_random_play_keeps_the_invariants(light_worlds, seed):
    for path in light_worlds:
        rng = random.Random(f"{seed}-{path.stem}")
        world = World.load(path)
        agents = world.agents()
        capacity = capacities(world)
        for i in range(2000):
            agent = rng.choice(agents)
            valid = valid_actions(world, agent)
            if i % 4 == 0:  # actions outside the valid list never change the state
                before = fingerprint(world)
                for text in _invalid_texts(world, agent, valid, rng, 3):
                    result = step(world, agent, text)
                    if result.success:  # a paraphrase ("put X on Y" for a container) of a listed action
                        assert result.action in valid.values(), (path.name, agent.id, text, result.message)
                        break
                    assert fingerprint(world) == before, (path.name, text)
            if not valid:
                continue
            text = rng.choice(list(valid))
            result = step(world, agent, text)
            assert result.success, (path.name, agent.id, text, result.message)
            assert result.action == valid[text]
            check_invariants(world)
        now = capacities(world)
        assert now == {nid: c for nid, c in capacity.items() if nid in now}, path.name


def test_every_listed_action_typed_back_parses_to_itself_and_succeeds(light_worlds):
    rng = random.Random(1)
    for path in light_worlds:
        world = World.load(path)
        for turn in range(300):
            for agent in world.agents():
                for text, action in valid_actions(world, agent).items():
                    assert parse(world, agent, text) == (action, ""), (path.name, agent.id, text)
            agent = rng.choice(world.agents())
            options = list(valid_actions(world, agent).items())
            if options:
                text, action = rng.choice(options)
                # a person types it: capitals, extra spaces, articles
                typed = "  " + text.upper().replace(" ", "   ", 1)
                if action.target is None and action.verb != "go":
                    typed = typed.replace(action.obj.key.upper(), "the " + action.obj.key.upper(), 1)
                assert parse(world, agent, typed)[0] == action, (path.name, typed)
                copy = world.copy()
                assert step(copy, copy[agent.id], text).success
                step(world, agent, text)
            if turn >= 30 and path.stat().st_size > 100_000:
                break


def _tiny():
    world = World.from_json(tiny_graph())
    return world, world["dragon_1"], world["knight_2"]


def test_verbs_and_messages():
    world, dragon, knight = _tiny()
    assert sorted(valid_actions(world, dragon)) == [
        "follow knight",
        "hit knight",
        "hug knight",
        "steal golden dragon egg from knight",
    ]
    result = step(world, dragon, "steal the golden dragon egg from the knight")
    assert result.success and result.message == "You steal the golden dragon egg from the knight."
    assert result.room_message == "The dragon steals the golden dragon egg from the knight."
    assert world["egg_3"].container is dragon
    assert "give golden dragon egg to knight" in valid_actions(world, dragon)
    assert step(world, knight, "Pick up egg").message == "You don't see 'egg' here."
    assert not step(world, dragon, "wear golden dragon egg").success
    assert step(world, dragon, "drop golden dragon egg").success
    assert step(world, knight, "pick up golden dragon egg").success
    assert step(world, knight, "give golden dragon egg to dragon").success
    assert "You are carrying a golden dragon egg." in world.describe(dragon)
    assert step(world, dragon, "dance").message.startswith("Unknown verb 'dance'")
    assert step(world, dragon, "give golden dragon egg").message == "Usage: give X to Y."


def test_containers_wearables_food_and_following(light_worlds):
    world = World.load(next(p for p in light_worlds if p.stem == "complex_world"))
    agent = next(a for a in world.agents() if any(o.is_container for o in a.container.contents.values()))
    box = next(o for o in agent.container.contents.values() if o.is_container)
    thing = next(
        o
        for o in world.nodes.values()
        if o.kind == "object" and o.gettable and not o.is_container and o.equipped is None and o is not box
    )
    world.move(thing, agent)
    assert step(world, agent, f"put {thing.key} {box.surface} {box.key}").success
    assert thing.container is box
    assert step(world, agent, f"get {thing.key} from {box.key}").success and thing.container is agent
    thing.wearable = True
    assert step(world, agent, f"wear {thing.key}").success and thing.equipped == "worn"
    assert not step(world, agent, f"drop {thing.key}").success
    assert step(world, agent, f"remove {thing.key}").success and step(world, agent, f"drop {thing.key}").success
    thing.food = True
    assert step(world, agent, f"get {thing.key}").success and step(world, agent, f"eat {thing.key}").success
    assert thing.id not in world.nodes
    check_invariants(world)
    # a follower goes along
    other = next(a for a in world.agents() if a is not agent)
    world.move(other, agent.container)
    assert step(world, other, f"follow {agent.key}").success
    exit_room = world[next(iter(agent.container.neighbors))]
    assert step(world, agent, f"go to {exit_room.key}").success
    assert other.container is exit_room is agent.container


def test_save_and_load_keep_the_state(light_worlds, tmp_path):
    rng = random.Random(3)
    world = World.load(next(p for p in light_worlds if p.stem == "dragon-village"))
    agents = world.agents()
    for _ in range(300):
        agent = rng.choice(agents)
        options = list(valid_actions(world, agent))
        if options:
            step(world, agent, rng.choice(options))
    (tmp_path / "save.json").write_text(json.dumps(world.to_json()))
    again = World.load(str(tmp_path / "save.json"))
    assert fingerprint(again) == fingerprint(world)
    for agent in agents:
        if agent.id in again.nodes:
            assert list(valid_actions(again, again[agent.id])) == list(valid_actions(world, agent))
    copy = world.copy()
    step(copy, copy[agents[0].id], next(iter(valid_actions(copy, copy[agents[0].id]))))
    assert fingerprint(copy) != fingerprint(world)


def _twin_world():
    """A square whose two ways lead to "Baker's Shop" (east lane) and "baker's shop" (west lane), with two swords."""

    def node(nid, name, kind, container, contains=(), **more):
        return {
            "node_id": nid,
            "name": name,
            "room": kind == "room",
            "agent": kind == "agent",
            "object": kind == "object",
            "classes": [kind],
            "container_node": {"target_id": container},
            "contained_nodes": {c: {"target_id": c} for c in contains},
            **more,
        }

    ways = {
        "shop_a": {"target_id": "shop_a", "label": "east lane"},
        "shop_b": {"target_id": "shop_b", "label": "west lane"},
    }
    nodes = {
        "square": node("square", "village square", "room", "VOID", ["me", "sword_a", "sword_b"], neighbors=ways),
        "shop_a": node("shop_a", "Baker's Shop", "room", "VOID", neighbors={}),
        "shop_b": node("shop_b", "baker's shop", "room", "VOID", neighbors={}),
        "me": node("me", "squire", "agent", "square"),
        "sword_a": node("sword_a", "sword", "object", "square", gettable=True),
        "sword_b": node("sword_b", "Sword", "object", "square", gettable=True),
    }
    return World.from_json({"nodes": nodes, "agents": ["me"], "objects": ["sword_a", "sword_b"], "rooms": list(ways)})


def test_places_and_things_of_one_name_are_each_their_own_action():
    """Two exits to rooms named alike were one action (`go baker's shop`), and the second room could not be reached;
    two swords one `get sword`. Each is now its own valid action, and each action reaches its own target."""
    from lq.world.play import which_twin

    world = _twin_world()
    valid = valid_actions(world, world["me"])
    assert {"go east lane", "go west lane", "get sword 1", "get sword 2"} <= set(valid)
    assert not {"go baker's shop", "get sword"} & set(valid)
    for text, target in (("go east lane", "shop_a"), ("go west lane", "shop_b")):
        trial = world.copy()
        assert step(trial, trial["me"], text).success and trial["me"].container.id == target
    trial = world.copy()
    assert step(trial, trial["me"], "get sword 2").success and trial["sword_b"].container.id == "me"
    assert trial["sword_a"].container.id == "square"
    assert "get sword" in valid_actions(trial, trial["me"])  # the one left is the only sword on the floor
    assert step(trial, trial["me"], "get sword").success and trial["sword_a"].container.id == "me"
    # a person who types the shared name is asked which one is meant (lq play)
    assert which_twin(world, world["me"], "go baker's shop") == "Which do you mean: the east lane or the west lane?"
    assert which_twin(world, world["me"], "get the sword") == "Which do you mean: the sword 1 or the sword 2?"
    assert which_twin(world, world["me"], "go east lane") == ""


def test_a_thing_without_a_name_prefix_takes_a_or_an_by_its_first_letter():
    """LIGHT's own ``name_prefix`` is kept where the world gives one; where it gives none, "an apple", not "a apple"."""
    from tests.world.helpers import build_world

    world = build_world(
        {"orchard": []},
        {
            "me": {"name": "farmer", "kind": "agent", "in": "orchard"},
            "elf": {"name": "elf", "kind": "agent", "in": "orchard"},
            "apple": {"name": "apple", "in": "orchard"},
            "pear": {"name": "pear", "in": "orchard"},
            "urn": {"name": "urn", "in": "orchard", "name_prefix": "a"},  # the world's word, kept
        },
    )
    seen = world.describe(world["me"])
    assert "There's an apple, a pear and a urn here." in seen and "An elf is here." in seen
    assert step(world, world["me"], "hug elf").message == "You hug the elf."
