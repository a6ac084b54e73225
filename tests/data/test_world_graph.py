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
