"""The engine's rules that follow LIGHT's own: sizes and room left, the wield and wear limits, ``go`` by
path label, and follow chains (without LIGHT's recursion). Checked on the shared LIGHT worlds."""

import json

from lq.world import World, parse, step, valid_actions
from tests.world.helpers import check_invariants, fingerprint


def _load(light_worlds, stem: str) -> World:
    return World.load(next(p for p in light_worlds if p.stem == stem))


def _raw(light_worlds, stem: str) -> dict:
    return json.loads(next(p for p in light_worlds if p.stem == stem).read_text())


def _bakery(world: World) -> list:
    """The three characters in dragon-village's baker's shop: the baker and two customers."""
    return [world[i] for i in ("john the baker_39", "mrs. smith, the customer_40", "mrs. johnson, the customer_41")]


def _objects(world: World, *, small=True, **flags) -> list:
    """Loose objects (not containers, not equipped) with the given affordances."""
    return [
        n
        for n in world.nodes.values()
        if n.kind == "object"
        and not n.is_container
        and n.equipped is None
        and not n.contents
        and (n.size == 1 or not small)
        and all(getattr(n, k) == v for k, v in flags.items())
    ]


def _refused(world: World, actor, text: str, why: str) -> None:
    """``text`` is not listed, does nothing, and says ``why``."""
    before = fingerprint(world)
    assert text not in valid_actions(world, actor)
    result = step(world, actor, text)
    assert not result.success and why in result.message, (text, result.message)
    assert fingerprint(world) == before


# -- sizes and the room left -----------------------------------------------------------------------


def test_the_worlds_sizes_are_lights(light_worlds):
    world = _load(light_worlds, "complex_world")
    sleet = world["sleet_121"]
    assert (sleet.size, sleet.gettable) == (100, True)
    bucket = next(n for n in world.nodes.values() if n.name == "metal bucket")
    assert (bucket.size, bucket.contain_size) == (4, 3)
    # contain_size is the room *left*, as LIGHT saves it: a room that holds 48 has 1952 left of 2000
    room = next(r for r in world.rooms() if r.contain_size == 1952)
    assert sum(n.size for n in room.contents.values()) == 48


def test_a_full_container_refuses(light_worlds):
    world = _load(light_worlds, "dragon-village")
    room = world["baker's shop_9"]
    baker = world["john the baker_39"]
    box = next(n for n in world.nodes.values() if n.kind == "object" and n.is_container and n.gettable)
    world.move(box, room)
    assert (box.size, box.contain_size) == (4, 3)
    things = _objects(world, gettable=True)[:4]
    for t in things:
        world.move(t, baker)
    for t in things[:3]:  # three of size 1 fill it
        assert f"put {t.key} {box.surface} {box.key}" in valid_actions(world, baker)
        assert step(world, baker, f"put {t.key} {box.surface} {box.key}").success
    assert box.contain_size == 0 and baker.contain_size == 20 - 4 + 3
    last = things[3]
    _refused(world, baker, f"put {last.key} {box.surface} {box.key}", "no room left")
    # taking one out makes room again
    assert step(world, baker, f"get {things[0].key} from {box.key}").success and box.contain_size == 1
    assert step(world, baker, f"put {last.key} {box.surface} {box.key}").success
    check_invariants(world)


def test_a_container_never_fits_in_another(light_worlds):
    world = _load(light_worlds, "dragon-village")
    baker = world["john the baker_39"]
    bag, box = [n for n in world.nodes.values() if n.kind == "object" and n.is_container and not n.contents][:2]
    world.move(bag, baker)
    world.move(box, baker.container)
    assert bag.size > box.contain_size
    _refused(world, baker, f"put {bag.key} {box.surface} {box.key}", "no room left")
    # the other way round too, with the box carried
    assert step(world, baker, f"get {box.key}").success
    _refused(world, baker, f"put {bag.key} {box.surface} {box.key}", "no room left")


def test_a_size_100_object_cannot_be_taken(light_worlds):
    world = _load(light_worlds, "complex_world")
    sleet = world["sleet_121"]
    agent = world.agents()[0]
    world.move(agent, sleet.container)
    _refused(world, agent, f"get {sleet.key}", "can't carry that much more")
    assert sleet.container is agent.container
    # what fits is taken, and the room left goes down by its size
    small = next(n for n in sleet.container.contents.values() if n.kind == "object" and n.gettable and n.size == 1)
    left = agent.contain_size
    assert step(world, agent, f"get {small.key}").success and agent.contain_size == left - 1


def test_a_character_carries_what_it_has_room_for(light_worlds):
    raw = _raw(light_worlds, "dragon-village")
    raw["nodes"]["john the baker_39"]["contain_size"] = 2  # two more things, then full
    world = World.from_json(raw)
    baker, customer = world["john the baker_39"], world["mrs. smith, the customer_40"]
    things = _objects(world, gettable=True)[:3]
    for t in things:
        world.move(t, baker.container)
    assert step(world, baker, f"get {things[0].key}").success
    assert step(world, baker, f"get {things[1].key}").success
    _refused(world, baker, f"get {things[2].key}", "can't carry that much more")
    # nor steal, nor be given more
    world.move(things[2], customer)
    _refused(world, baker, f"steal {things[2].key} from {customer.key}", "can't carry that much more")
    _refused(world, customer, f"give {things[2].key} to {baker.key}", "no room to carry")
    assert step(world, baker, f"drop {things[0].key}").success and baker.contain_size == 1
    assert step(world, customer, f"give {things[2].key} to {baker.key}").success
    # the room left is saved as LIGHT's contain_size, and read back
    again = World.from_json(world.to_json())
    assert again[baker.id].contain_size == 0 and again[customer.id].contain_size == customer.contain_size


def test_a_full_room_takes_no_one(light_worlds):
    raw = _raw(light_worlds, "dragon-village")
    raw["nodes"]["town hall_5"]["contain_size"] = 20  # room for one character of size 20
    world = World.from_json(raw)
    baker, customer = world["john the baker_39"], world["mrs. smith, the customer_40"]
    hall = world["town hall_5"]
    assert step(world, customer, f"follow {baker.key}").success
    assert step(world, baker, "go town hall").success
    assert baker.container is hall and hall.contain_size == 0
    assert customer.container is world["baker's shop_9"]  # no room left there for the follower
    _refused(world, customer, "go town hall", "not enough room")
    check_invariants(world)


# -- the wield and wear limits ---------------------------------------------------------------------------


def test_a_second_weapon_is_refused(light_worlds):
    world = _load(light_worlds, "dragon-village")
    baker = world["john the baker_39"]
    sword, dagger = world["broadsword_57"], world["dagger_75"]
    world.move(sword, baker)
    world.move(dagger, baker)
    assert step(world, baker, f"wield {sword.key}").success
    _refused(world, baker, f"wield {dagger.key}", "can't wield any more")
    assert step(world, baker, f"remove {sword.key}").success
    assert step(world, baker, f"wield {dagger.key}").success and dagger.equipped == "wielded"
    # LIGHT's counter follows the state when the graph has it
    assert world.to_json()["nodes"][baker.id]["num_wieldable_items"] == 1


def test_a_fourth_thing_to_wear_is_refused(light_worlds):
    world = _load(light_worlds, "dragon-village")
    baker = world["john the baker_39"]
    clothes = list({c.key: c for c in _objects(world, small=False, wearable=True, wieldable=False)}.values())[:4]
    for c in clothes:
        world.move(c, baker)
    for c in clothes[:3]:
        assert step(world, baker, f"wear {c.key}").success
    _refused(world, baker, f"wear {clothes[3].key}", "can't wear any more")
    assert world.to_json()["nodes"][baker.id]["num_wearable_items"] == 3


def test_the_limits_are_the_characters_own(light_worlds):
    raw = _raw(light_worlds, "dragon-village")
    raw["nodes"]["john the baker_39"]["max_wieldable_items"] = 2
    world = World.from_json(raw)
    baker = world["john the baker_39"]
    for w in ("broadsword_57", "dagger_75", "hammer_112"):
        world.move(world[w], baker)
    assert step(world, baker, "wield broadsword").success and step(world, baker, "wield dagger").success
    _refused(world, baker, "wield hammer", "can't wield any more")


# -- go by path label -----------------------------------------------------------------------------------


def test_go_by_path_label_moves(light_worlds):
    world = _load(light_worlds, "dragon-village")
    baker = world["john the baker_39"]
    shop, hall = world["baker's shop_9"], world["town hall_5"]
    assert shop.neighbors[hall.id] == "a cobblestone pathway leading to Town Hall"
    assert "go town hall" in valid_actions(world, baker)  # the listing names the room
    action, why = parse(world, baker, "go a cobblestone pathway leading to Town Hall")
    assert why == "" and action == valid_actions(world, baker)["go town hall"]
    assert step(world, baker, "go a cobblestone pathway leading to Town Hall").success
    assert baker.container is hall
    back = hall.neighbors[shop.id]
    assert step(world, baker, f"go to {back}").success and baker.container is shop
    assert not step(world, baker, "go a cobblestone pathway").success  # a label is matched whole


# -- follow chains ---------------------------------------------------------------------------------------


def test_a_follower_of_a_follower_moves(light_worlds):
    world = _load(light_worlds, "dragon-village")
    baker, smith_, johnson = _bakery(world)
    shop, hall, square = world["baker's shop_9"], world["town hall_5"], world["village square_7"]
    assert step(world, smith_, f"follow {baker.key}").success
    assert step(world, johnson, f"follow {smith_.key}").success
    # one more follows the baker, then walks off to another room: LIGHT brings followers from wherever they are
    far = next(a for a in world.agents() if a.container not in (shop, hall, square))
    world.move(far, shop)
    assert step(world, far, f"follow {baker.key}").success and step(world, far, "go village square").success
    result = step(world, baker, "go town hall")
    assert result.success
    assert smith_.container is hall and johnson.container is hall and far.container is hall
    came = result.message.splitlines()[0]
    assert came.endswith("follow you.") and all(a.the().lower() in came.lower() for a in (smith_, johnson, far))
    check_invariants(world)


def test_mutual_following_terminates(light_worlds):
    world = _load(light_worlds, "dragon-village")
    baker, smith_, johnson = _bakery(world)
    hall, square = world["town hall_5"], world["village square_7"]
    assert step(world, baker, f"follow {smith_.key}").success
    assert step(world, smith_, f"follow {baker.key}").success  # LIGHT raises RecursionError when either goes
    assert step(world, johnson, f"follow {baker.key}").success
    result = step(world, baker, "go town hall")
    assert result.success and {baker.container, smith_.container, johnson.container} == {hall}
    came = result.message.splitlines()[0].lower()
    assert came.count(smith_.the().lower()) == 1 and came.count(johnson.the().lower()) == 1 and "baker" not in came
    # a circle of three: baker -> johnson -> smith -> baker
    assert step(world, baker, f"follow {johnson.key}").success and step(world, johnson, f"follow {smith_.key}").success
    assert step(world, smith_, "go village square").success
    assert {baker.container, smith_.container, johnson.container} == {square}
    saved = World.from_json(world.to_json())
    assert [saved[a.id].following.id for a in (baker, smith_, johnson)] == [johnson.id, baker.id, smith_.id]
    check_invariants(world)


# -- where LIGHT is wrong, lq keeps its own rule ---------------------------------------------------------


def test_where_light_is_wrong_lq_keeps_its_rule(light_worlds):
    world = _load(light_worlds, "complex_world")
    me, other = [a for a in world.agents() if not any(o.equipped for o in a.contents.values())][:2]
    world.move(other, me.container)
    fixture = next(n for n in world.nodes.values() if n.kind == "object" and not n.gettable)
    world.move(fixture, me.container)
    sword = _objects(world, gettable=True, wieldable=True)[0]
    bag = next(
        n for n in world.nodes.values() if n.kind == "object" and n.is_container and n.gettable and n.contain_size
    )
    thing = _objects(world, gettable=True, wieldable=False)[0]
    for t in (sword, bag, thing):
        world.move(t, me)
    assert step(world, me, f"wield {sword.key}").success
    assert step(world, me, f"follow {other.key}").success
    listed = valid_actions(world, me)
    assert f"get {fixture.key}" not in listed  # LIGHT lists get of what cannot be taken
    assert f"put {sword.key} {bag.surface} {bag.key}" not in listed  # LIGHT lists put of what is wielded
    assert f"follow {other.key}" not in listed  # LIGHT lists following whom one follows
    # LIGHT's listing misses puts into a carried container; lq lists them
    assert f"put {thing.key} {bag.surface} {bag.key}" in listed
