import copy
import json

import pytest

from lq.data import DataFormatError, load_world_graph, parse_world_graph, write_world_graph
from tests.samples import tiny_graph

# (rooms, agents, objects) per shared world, counted from the files themselves.
EXPECTED = {
    "complex_world": (41, 27, 127),
    "dragon-village": (21, 36, 174),
    "johnson-family-farm": (23, 56, 276),
    "joust-central": (21, 38, 190),
    "simple_world": (2, 2, 6),
    "smithing-competition": (25, 57, 268),
    "test_world": (2, 2, 8),
    "tutorial_world": (2, 2, 2),
}


def test_all_eight_worlds_load_into_typed_records(light_worlds):
    assert {p.stem for p in light_worlds} == set(EXPECTED)
    for path in light_worlds:
        g = load_world_graph(path)
        assert (len(g.rooms), len(g.agents), len(g.objects)) == EXPECTED[path.stem], path.name
        raw = json.loads(path.read_text())
        assert set(g.ids("agent")) == set(raw["agents"])
        for node in g.nodes.values():
            assert node.container_id == "VOID" or node.node_id in g.nodes[node.container_id].contained_ids
        for room in g.rooms:
            assert all(g.nodes[t].kind == "room" for t in room.neighbors)


def test_worlds_write_back_unchanged(light_worlds, tmp_path):
    for path in light_worlds:
        g = load_world_graph(path)
        write_world_graph(g, tmp_path / path.name)
        assert json.loads((tmp_path / path.name).read_text()) == json.loads(path.read_text()), path.name
        assert load_world_graph(tmp_path / path.name) == g


def test_affordances_read_from_fields_and_classes():
    g = parse_world_graph(tiny_graph())
    egg = g.nodes["egg_3"]
    assert egg.gettable and not egg.wearable and egg.container_id == "knight_2"
    raw = tiny_graph()
    del raw["nodes"]["egg_3"]["gettable"]
    raw["nodes"]["egg_3"]["classes"] = ["object", "not_gettable", "wieldable"]
    del raw["nodes"]["egg_3"]["wieldable"]
    egg = parse_world_graph(raw).nodes["egg_3"]
    assert not egg.gettable and egg.wieldable


def test_changed_node_is_written():
    g = parse_world_graph(tiny_graph())
    egg = g.nodes["egg_3"]
    egg.wearable = True
    egg.container_id = "dragon_1"
    g.nodes["knight_2"].contained_ids.remove("egg_3")
    g.nodes["dragon_1"].contained_ids.append("egg_3")
    again = parse_world_graph(g.to_json())
    assert again == g and again.nodes["egg_3"].wearable


def test_graph_may_be_a_json_string():
    assert parse_world_graph(json.dumps(tiny_graph())) == parse_world_graph(tiny_graph())


def _broken(mutate):
    raw = copy.deepcopy(tiny_graph())
    mutate(raw)
    return raw


@pytest.mark.parametrize(
    ("mutate", "field", "text"),
    [
        (lambda g: g["nodes"]["egg_3"].update(container_node={"target_id": "nowhere"}), "container_node", "not a node"),
        (lambda g: g["nodes"]["knight_2"].update(contained_nodes={}), "container_node", "does not list it"),
        (
            lambda g: g["nodes"]["lair_0"].update(neighbors={"egg_3": {"target_id": "egg_3", "label": "x"}}),
            "neighbors",
            "not a room",
        ),
        (lambda g: g["nodes"]["egg_3"].update(node_id="egg_4"), "node_id", "differs"),
        (lambda g: g["nodes"]["egg_3"].update(agent=True), "room/agent/object", "exactly one"),
        (lambda g: g["nodes"]["egg_3"].update(object=False, classes=[]), "room/agent/object", "exactly one"),
        (lambda g: g["nodes"]["egg_3"].update(gettable="yes"), "gettable", "expected"),
        (lambda g: g.update(agents=["egg_3"]), "agents", "not a agent"),
    ],
)
def test_broken_graph_names_node_and_field(mutate, field, text):
    with pytest.raises(DataFormatError) as info:
        parse_world_graph(_broken(mutate), "world.json")
    assert info.value.field == field and text in str(info.value) and "world.json" in str(info.value)


def test_sizes_are_read_with_lights_defaults():
    g = parse_world_graph(tiny_graph())
    room, dragon, egg = g.nodes["lair_0"], g.nodes["dragon_1"], g.nodes["egg_3"]
    assert (room.size, room.contain_size) == (1, 100_000)
    assert (dragon.size, dragon.contain_size) == (20, 20)
    assert (dragon.max_wieldable_items, dragon.max_wearable_items) == (1, 3)
    assert (egg.size, egg.contain_size) == (1, 0)
    raw = tiny_graph()
    raw["nodes"]["egg_3"].update(container=True, size=None, contain_size=None)  # null: LIGHT's default
    egg = parse_world_graph(raw).nodes["egg_3"]
    assert (egg.size, egg.contain_size) == (20, 20)
    assert "size" not in parse_world_graph(tiny_graph()).to_json()["nodes"]["egg_3"]  # defaults are not written
    g = parse_world_graph(tiny_graph())
    g.nodes["knight_2"].contain_size = 19  # what the engine saves after the knight takes a thing
    assert g.to_json()["nodes"]["knight_2"]["contain_size"] == 19
    assert parse_world_graph(g.to_json()).nodes["knight_2"].contain_size == 19


@pytest.mark.parametrize("value", [-1, "big", True, float("inf"), [3]])
@pytest.mark.parametrize("field", ["size", "contain_size", "max_wieldable_items"])
def test_a_bad_size_names_node_and_field(field, value):
    raw = tiny_graph()
    raw["nodes"]["knight_2"][field] = value
    with pytest.raises(DataFormatError) as info:
        parse_world_graph(raw, "world.json")
    assert info.value.field == field and "number >= 0" in str(info.value) and "knight_2" in str(info.value)


def _object(node_id, container, contains=()):
    return {
        "node_id": node_id,
        "name": node_id,
        "room": False,
        "agent": False,
        "object": True,
        "container": True,
        "classes": ["object", "container"],
        "container_node": {"target_id": container},
        "contained_nodes": {c: {"target_id": c} for c in contains},
    }


def test_a_containment_cycle_is_refused_in_one_line_naming_it():
    """The issue's smallest input (a sack inside itself) loaded and then hung the engine at `x sack` (Node.room never
    returned); a cycle of any length is now refused where the world is read."""
    selfish = copy.deepcopy(tiny_graph())
    selfish["nodes"]["sack"] = _object("sack", "sack", ["sack"])
    with pytest.raises(DataFormatError, match=r"containment cycle sack -> sack") as info:
        parse_world_graph(selfish, "world.json")
    assert info.value.field == "container_node" and "world.json" in str(info.value)
    pair = copy.deepcopy(tiny_graph())
    pair["nodes"]["box_a"] = _object("box_a", "box_b", ["box_b"])
    pair["nodes"]["box_b"] = _object("box_b", "box_a", ["box_a"])
    with pytest.raises(DataFormatError, match=r"containment cycle box_a -> box_b -> box_a"):
        parse_world_graph(pair)
    nested = copy.deepcopy(tiny_graph())  # a box in a box in the knight's hands: no cycle, it loads
    nested["nodes"]["knight_2"]["contained_nodes"]["box_a"] = {"target_id": "box_a"}
    nested["nodes"]["box_a"] = _object("box_a", "knight_2", ["box_b"])
    nested["nodes"]["box_b"] = _object("box_b", "box_a")
    assert parse_world_graph(nested).nodes["box_b"].container_id == "box_a"


def test_a_character_inside_an_object_is_refused():
    raw = copy.deepcopy(tiny_graph())
    raw["nodes"]["lair_0"]["contained_nodes"].pop("knight_2")
    raw["nodes"]["egg_3"]["contained_nodes"] = {"knight_2": {"target_id": "knight_2"}}
    raw["nodes"]["knight_2"]["contained_nodes"] = {}
    raw["nodes"]["knight_2"]["container_node"] = {"target_id": "egg_3"}
    raw["nodes"]["egg_3"]["container_node"] = {"target_id": "lair_0"}
    raw["nodes"]["lair_0"]["contained_nodes"]["egg_3"] = {"target_id": "egg_3"}
    with pytest.raises(DataFormatError, match=r"a character inside the object 'egg_3'") as info:
        parse_world_graph(raw)
    assert info.value.field == "container_node"


def test_a_character_carried_by_a_character_is_refused():
    """(The fuzz test's case: a duplicated character re-parented into the first, whose carried twin was then listed as
    a thing to drop that the parser could not drop.)"""
    raw = copy.deepcopy(tiny_graph())
    twin = copy.deepcopy(raw["nodes"]["knight_2"])
    twin.update(node_id="knight_9", contained_nodes={}, container_node={"target_id": "knight_2"})
    raw["nodes"]["knight_9"] = twin
    raw["nodes"]["knight_2"]["contained_nodes"]["knight_9"] = {"target_id": "knight_9"}
    with pytest.raises(DataFormatError, match=r"a character inside the character 'knight_2'"):
        parse_world_graph(raw)
