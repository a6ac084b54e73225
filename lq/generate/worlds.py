"""Quest worlds (a starting room and two neighbours) built from an environment DB, in the LIGHT world-graph JSON.

As in the original LIGHT-Quests collection, a quest happens in one room: the self character, a
partner, objects on the floor (some in or on a container), and objects each character carries.
Two neighbouring rooms are attached so that "go" has somewhere to lead.

Every node has LIGHT's ``size`` and ``contain_size`` (the room left inside it, as LIGHT saves it):
objects as :func:`lq.data.affordances.infer` sizes them, characters 20 carrying 20, rooms holding
2000 as in LIGHT's own worlds. A thing is placed only where it fits, and takes its size from the
room left there, so generated worlds obey the engine's size rules from the start.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from lq.data.affordances import Affordances, infer
from lq.data.light_db import Character, LightDB, LightObject, Room
from lq.data.names import looks_singular, strip_article
from lq.data.world_graph import AGENT_CONTAIN_SIZE, AGENT_SIZE, WorldGraph

ROOM_CONTAIN_SIZE = 2000  # what every room of LIGHT's own worlds holds


@dataclass
class Pools:
    """The DB, filtered to things that make sense as quest characters and objects."""

    rooms: list[Room]
    characters: list[Character]
    objects: list[LightObject]
    portable: list[LightObject]
    fixtures: list[LightObject]
    containers: list[LightObject]
    afford: dict[str, Affordances] = field(default_factory=dict)  # by object id; inferred when missing
    _fitting: dict[float, list[LightObject]] = field(default_factory=dict, repr=False)

    def affordances(self, o: LightObject) -> Affordances:
        a = self.afford.get(o.id)
        if a is None:
            a = self.afford[o.id] = infer(o.name, o.base_form)
        return a

    def portable_within(self, room_left: float) -> list[LightObject]:
        """The portable objects whose size is at most ``room_left``."""
        if room_left not in self._fitting:
            self._fitting[room_left] = [o for o in self.portable if self.affordances(o).size <= room_left]
        return self._fitting[room_left]

    @classmethod
    def from_db(cls, db: LightDB) -> Pools:
        characters = [
            c
            for c in db.characters
            if c.char_type in ("person", "creature") and looks_singular(c.name) and c.persona and c.persona[0].strip()
        ]
        objects = [o for o in db.objects if o.name.strip() and len(o.name.split()) <= 5]
        afford = {o.id: infer(o.name, o.base_form) for o in objects}
        portable = [o for o in objects if afford[o.id].gettable and looks_singular(o.name)]
        fixtures = [o for o in objects if not afford[o.id].gettable]
        containers = [o for o in objects if afford[o.id].container]
        rooms = [r for r in db.rooms if r.name.strip()]
        if len(rooms) < 3 or len(characters) < 2 or len(portable) < 10:
            raise ValueError(
                f"environment DB too small for quests: {len(rooms)} rooms, {len(characters)} usable "
                f"characters, {len(portable)} portable objects (need 3, 2 and 10)"
            )
        return cls(rooms, characters, objects, portable, fixtures, containers, afford)


def _object_node(o: LightObject, a: Affordances, node_id: str, container: str) -> dict[str, Any]:
    name = strip_article(o.name)
    classes = ["object"] + [k for k in ("container", "food", "drink", "wearable", "wieldable") if getattr(a, k)]
    if not a.gettable:
        classes.append("not_gettable")
    return {
        "node_id": node_id,
        "name": name.lower(),
        "name_prefix": "an" if name[:1].lower() in "aeiou" else "a",
        "names": [name.lower()],
        "desc": o.descriptions[0] if o.descriptions else "",
        "room": False,
        "agent": False,
        "object": True,
        "classes": classes,
        "gettable": a.gettable,
        "wearable": a.wearable,
        "wieldable": a.wieldable,
        "food": a.food,
        "drink": a.drink,
        "container": a.container,
        "surface_type": "in" if a.container else "on",
        "equipped": None,
        "size": a.size,
        "contain_size": a.contain_size,
        "container_node": {"target_id": container},
        "contained_nodes": {},
        "db_id": o.id,
    }


def build_quest_world(pools: Pools, rng: random.Random) -> tuple[dict[str, Any], str, str]:
    """A world graph JSON with a self character and a partner; returns (graph, self id, partner id)."""
    room, *near = rng.sample(pools.rooms, 3)
    me, partner = rng.sample(pools.characters, 2)
    nodes: dict[str, dict[str, Any]] = {}
    counter = iter(range(10_000))

    def add(node: dict[str, Any]) -> str:
        nid = node["node_id"]
        nodes[nid] = node
        parent = node["container_node"]["target_id"]
        if parent != "VOID":
            nodes[parent]["contained_nodes"][nid] = {"target_id": nid}
            nodes[parent]["contain_size"] -= node["size"]  # as LIGHT's engine does when a thing moves in
        return nid

    def room_node(r: Room) -> str:
        nid = f"{strip_article(r.name).lower()}_{next(counter)}"
        return add(
            {
                "node_id": nid,
                "name": strip_article(r.name),
                "name_prefix": "the",
                "names": [strip_article(r.name)],
                "desc": r.description,
                "room": True,
                "agent": False,
                "object": False,
                "classes": ["room"],
                "size": 1,
                "contain_size": ROOM_CONTAIN_SIZE,
                "container_node": {"target_id": "VOID"},
                "contained_nodes": {},
                "neighbors": {},
                "db_id": r.id,
                "category": r.category,
            }
        )

    home = room_node(room)
    for r in near:
        other = room_node(r)
        nodes[home]["neighbors"][other] = {
            "label": f"a path to {strip_article(r.name)}",
            "examine_desc": None,
            "locked_edge": None,
            "target_id": other,
        }
        nodes[other]["neighbors"][home] = {
            "label": f"a path to {strip_article(room.name)}",
            "examine_desc": None,
            "locked_edge": None,
            "target_id": home,
        }

    def agent_node(c: Character) -> str:
        name = strip_article(c.name).lower()
        return add(
            {
                "node_id": f"{name}_{next(counter)}",
                "name": name,
                "name_prefix": "an" if name[:1] in "aeiou" else "a",
                "names": [name],
                "desc": c.description,
                "room": False,
                "agent": True,
                "object": False,
                "classes": ["agent"],
                "char_type": c.char_type,
                "persona": " ".join(c.persona),
                "size": AGENT_SIZE,
                "contain_size": AGENT_CONTAIN_SIZE,
                "container_node": {"target_id": home},
                "contained_nodes": {},
                "following": None,
                "health": 10,
                "db_id": c.id,
            }
        )

    me_id, partner_id = agent_node(me), agent_node(partner)
    used: set[str] = set()

    def place(objs: list[LightObject], where: str) -> list[str]:
        ids = []
        for o in objs:
            key = strip_article(o.name).lower()
            a = pools.affordances(o)
            # one thing per name, so that every name means one thing in this room; only where it fits
            if key in used or a.size > nodes[where]["contain_size"]:
                continue
            used.add(key)
            ids.append(add(_object_node(o, a, f"{key}_{next(counter)}", where)))
        return ids

    place(rng.sample(pools.fixtures, min(len(pools.fixtures), rng.randint(0, 1))), home)
    floor_containers = [c for c in pools.containers if pools.affordances(c).gettable]
    boxes = place(rng.sample(floor_containers, 1), home) if floor_containers and rng.random() < 0.6 else []
    place(rng.sample(pools.portable, rng.randint(2, 4)), home)
    for box in boxes:
        small = pools.portable_within(nodes[box]["contain_size"])
        place(rng.sample(small, 1) if small else [], box)
    place(rng.sample(pools.portable, rng.randint(1, 3)), me_id)
    place(rng.sample(pools.portable, rng.randint(1, 3)), partner_id)
    graph = {
        "agents": [me_id, partner_id],
        "nodes": nodes,
        "objects": [n for n, v in nodes.items() if v["object"]],
        "rooms": [n for n, v in nodes.items() if v["room"]],
    }
    WorldGraph.from_json(graph)  # fail here, not in a later stage, if composition ever breaks the format
    return graph, me_id, partner_id
