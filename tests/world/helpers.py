"""Invariant checks and state fingerprints shared by the engine tests."""

from __future__ import annotations

from lq.world import World


def fingerprint(world: World) -> tuple:
    """Everything an action can change."""
    return tuple(
        sorted(
            (
                n.id,
                n.container.id if n.container else None,
                tuple(n.contents),
                n.equipped,
                n.following.id if n.following else None,
                n.health,
                n.contain_size,
            )
            for n in world.nodes.values()
        )
    ) + (tuple(world.consumed),)


def capacities(world: World) -> dict[str, float]:
    """Each node's room left plus the sizes of what it holds: what moving things never changes."""
    return {n.id: n.contain_size + sum(c.size for c in n.contents.values()) for n in world.nodes.values()}


def check_invariants(world: World) -> None:
    holders: dict[str, list[str]] = {}
    for m in world.nodes.values():
        for cid in m.contents:
            holders.setdefault(cid, []).append(m.id)
    for n in world.nodes.values():
        if n.kind == "room":
            assert n.container is None, f"room {n.id} is inside {n.container}"
            continue
        assert n.container is not None, f"{n.id} has no container"
        assert n.container.id in world.nodes, f"{n.id} is inside a node not in the world"
        assert n.container.contents.get(n.id) is n, f"{n.id} missing from its container's contents"
        assert holders.get(n.id) == [n.container.id], f"{n.id} held by {holders.get(n.id)}"
        seen, c = {n.id}, n.container
        while c is not None:  # no containment cycle: the chain ends at a room
            assert c.id not in seen, f"containment cycle through {n.id}"
            seen.add(c.id)
            c = c.container
        assert n.room is not None, f"{n.id} is not inside any room"
        if n.kind == "agent":
            assert n.container.kind == "room", f"agent {n.id} is inside {n.container.id}"
        if n.equipped:
            assert n.container.kind == "agent", f"{n.id} equipped but not carried"
    for n in world.nodes.values():
        assert n.contain_size >= 0, f"{n.id} holds more than it has room for ({n.contain_size} left)"


def build_world(rooms: dict[str, list[str]], things: dict[str, dict]) -> World:
    """A world from a plan: ``rooms`` (room id -> its neighbours' ids) and ``things`` (node id -> its fields: ``name``,
    ``kind`` "agent" or "object", ``in`` the id it is inside, and any LIGHT node field such as ``gettable``,
    ``wearable``, ``container``, ``equipped``, ``name_prefix``). Rooms are named by their ids."""
    nodes: dict[str, dict] = {}
    for rid, neighbors in rooms.items():
        nodes[rid] = {
            "node_id": rid,
            "name": rid,
            "room": True,
            "agent": False,
            "object": False,
            "classes": ["room"],
            "desc": f"The {rid}.",
            "container_node": {"target_id": "VOID"},
            "contained_nodes": {},
            "neighbors": {n: {"target_id": n, "label": f"a path to {n}"} for n in neighbors},
        }
    for nid, spec in things.items():
        spec = dict(spec)
        kind, inside = spec.pop("kind", "object"), spec.pop("in")
        node = {
            "node_id": nid,
            "room": False,
            "agent": kind == "agent",
            "object": kind == "object",
            "classes": [kind],
            "container_node": {"target_id": inside},
            "contained_nodes": {},
            **({"gettable": True} if kind == "object" else {}),
            **spec,
        }
        nodes[nid] = node
    for nid, spec in things.items():  # each container lists what is inside it, in the plan's order
        nodes[spec["in"]]["contained_nodes"][nid] = {"target_id": nid}
    agents = [n for n, s in things.items() if s.get("kind") == "agent"]
    objects = [n for n, s in things.items() if s.get("kind", "object") == "object"]
    return World.from_json({"agents": agents, "objects": objects, "rooms": list(rooms), "nodes": nodes})
