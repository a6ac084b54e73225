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
