"""The loaders and the engine on worlds as people write them: mutations of the eight real LIGHT worlds (nodes dropped,
duplicated, renamed, re-parented, put in cycles; names with unicode, padding and case). Each mutated world is either
refused with one DataFormatError line, or it loads, every valid action of every character executes, and 50 random
turns play; no hang (a per-case alarm), no other exception. ``pytest -s`` prints how many were tried, refused and
played."""

import copy
import json
import random
import signal
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lq.data import DataFormatError, parse_world_graph
from lq.world import World, step, valid_actions

WORLDS = sorted((Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "light_worlds").glob("*.json"))
RAW = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in WORLDS}
SECONDS = 20  # a case's limit: a hang fails it
TALLY: Counter = Counter()
NAMES = st.sampled_from(
    ["  Dragon  ", "ÉPÉE", "baker's shop", "Baker's Shop", "", "x" * 300, "sword", "🐉 egg", "THE KNIGHT", "a\tb"]
)
MUTATIONS = ("drop", "duplicate", "rename", "reparent", "cycle", "relist")


def _mutate(raw: dict, mutation: str, rng: random.Random, name: str) -> None:
    """One mutation of a world's JSON in place, as an editor might leave it (references fixed up or not)."""
    nodes = raw["nodes"]
    things = [nid for nid, n in nodes.items() if not n.get("room")]
    if not things:
        return
    nid = rng.choice(things)
    node = nodes[nid]
    parent = node.get("container_node", {}).get("target_id")
    if mutation == "drop":  # gone, and (half the time) still listed by its container
        del nodes[nid]
        if rng.random() < 0.5 and parent in nodes:
            nodes[parent].get("contained_nodes", {}).pop(nid, None)
        for key in ("agents", "objects"):
            if key in raw and rng.random() < 0.5:
                raw[key] = [x for x in raw[key] if x != nid]
    elif mutation == "duplicate":  # a twin with the same name beside it
        twin = f"{nid}_twin"
        nodes[twin] = {**copy.deepcopy(node), "node_id": twin, "contained_nodes": {}}
        if parent in nodes:
            nodes[parent].setdefault("contained_nodes", {})[twin] = {"target_id": twin}
    elif mutation == "rename":
        node["name"] = name
    elif mutation in ("reparent", "cycle"):  # into another node, or into itself / one of what it holds
        inside = list(node.get("contained_nodes", {})) + [nid]
        target = rng.choice(inside) if mutation == "cycle" else rng.choice(list(nodes))
        if parent in nodes:
            nodes[parent].get("contained_nodes", {}).pop(nid, None)
        node["container_node"] = {"target_id": target}
        nodes[target].setdefault("contained_nodes", {})[nid] = {"target_id": nid}
    elif mutation == "relist":  # listed by a second container
        other = rng.choice(list(nodes))
        nodes[other].setdefault("contained_nodes", {})[nid] = {"target_id": nid}


def _alarm(signum, frame):
    raise TimeoutError(f"a mutated world took more than {SECONDS} s: the engine hangs on it")


def _play(graph, rng: random.Random) -> None:
    world = World(graph)
    agents = world.agents()
    for actor in rng.sample(agents, min(3, len(agents))):  # three characters' every valid action
        for text in valid_actions(world, actor):
            trial = world.copy()
            result = step(trial, trial[actor.id], text)
            assert result.success, (actor.name, text, result.message)
    for _ in range(50 if agents else 0):
        actor = rng.choice(agents)
        options = list(valid_actions(world, actor))
        if options:
            assert step(world, actor, rng.choice(options)).success


@pytest.mark.skipif(not WORLDS, reason="the real LIGHT world graphs are not in ../shared/data/light_worlds")
@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    world=st.sampled_from(sorted(RAW) or ["none"]),
    mutations=st.lists(st.tuples(st.sampled_from(MUTATIONS), NAMES), min_size=1, max_size=4),
    seed=st.integers(0, 2**16),
)
def test_a_mutated_real_world_is_refused_in_one_line_or_plays(world, mutations, seed):
    rng = random.Random(seed)
    raw = copy.deepcopy(RAW[world])
    for mutation, name in mutations:
        _mutate(raw, mutation, rng, name)
    TALLY["tried"] += 1
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(SECONDS)
    try:
        try:
            graph = parse_world_graph(raw, f"{world}.json")
        except DataFormatError as err:
            assert "\n" not in str(err) and f"{world}.json" in str(err)
            TALLY["refused"] += 1
            return
        _play(graph, rng)
        TALLY["played"] += 1
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def teardown_module():
    if TALLY:
        print(f"\nmutated LIGHT worlds: {TALLY['tried']} tried, {TALLY['refused']} refused, {TALLY['played']} played")
