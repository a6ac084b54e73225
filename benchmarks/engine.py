"""World engine throughput on the real LIGHT worlds: load, valid-action listing, parse-and-execute.

    python benchmarks/engine.py [--worlds DIR] [--steps N]

Prints one row per world. The original LIGHT engine, measured on a 2-core machine, takes 2.6 ms
(simple_world, complex_world) to 8.3 ms (dragon-village) median to list one character's valid
actions over these verbs, and 0.4 to 12 ms to parse and execute one action; lq's targets are
100 times less: under 100 us per listing and under 50 us per parse-and-execute.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

from lq.world import World, step, valid_actions

from timing import Yardstick

DEFAULT_WORLDS = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "light_worlds"


def bench_world(path: Path, steps: int, seed: int = 0) -> dict[str, float]:
    loads = []
    for _ in range(5):
        t = time.perf_counter()
        world = World.load(str(path))
        loads.append(time.perf_counter() - t)
    rng = random.Random(seed)
    listing, stepping = [], []
    clock = time.perf_counter_ns
    for _ in range(3):  # listing for every character, a few rounds
        for agent in world.agents():
            t = clock()
            valid_actions(world, agent)
            listing.append(clock() - t)
    for _ in range(steps):
        agent = rng.choice(world.agents())
        t = clock()
        options = valid_actions(world, agent)
        listing.append(clock() - t)
        if not options:
            continue
        text = rng.choice(list(options))
        t = clock()
        result = step(world, agent, text)
        stepping.append(clock() - t)
        assert result.success, (path.name, text, result.message)
    mean_list = statistics.fmean(listing) / 1e3
    return {
        "load_ms": statistics.median(loads) * 1e3,
        "list_median_us": statistics.median(listing) / 1e3,
        "list_p95_us": sorted(listing)[int(0.95 * len(listing))] / 1e3,
        "list_calls_per_s": 1e6 / mean_list,
        "step_median_us": statistics.median(stepping) / 1e3,
        "step_p95_us": sorted(stepping)[int(0.95 * len(stepping))] / 1e3,
        "nodes": len(world.nodes),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=Path, default=DEFAULT_WORLDS)
    parser.add_argument("--steps", type=int, default=5000, help="random valid actions played per world")
    args = parser.parse_args(argv)
    worlds = sorted(args.worlds.glob("*.json"))
    if not worlds:
        print(f"no world graphs in {args.worlds}: pass --worlds DIR (LIGHT world JSON files)", file=sys.stderr)
        return 1
    stick = Yardstick()  # this machine's speed, measured again at the end (benchmarks/timing.py)
    head = (
        f"{'world':<22}{'nodes':>6}{'load ms':>9}{'list med us':>13}{'list p95 us':>13}"
        f"{'list calls/s':>14}{'step med us':>13}{'step p95 us':>13}"
    )
    print(head)
    print("-" * len(head))
    worst_list = worst_step = 0.0
    for path in worlds:
        r = bench_world(path, args.steps)
        worst_list, worst_step = max(worst_list, r["list_median_us"]), max(worst_step, r["step_median_us"])
        print(
            f"{path.stem:<22}{r['nodes']:>6}{r['load_ms']:>9.2f}{r['list_median_us']:>13.1f}"
            f"{r['list_p95_us']:>13.1f}{r['list_calls_per_s']:>14,.0f}{r['step_median_us']:>13.1f}"
            f"{r['step_p95_us']:>13.1f}"
        )
    print("-" * len(head))
    stick.end()
    print(stick.report())
    print(
        f"worst median listing {worst_list:.1f} us (target < 100 us); "
        f"worst median parse-and-execute {worst_step:.1f} us (target < 50 us); "
        f"x yardstick: {worst_list * stick.rate:.0f} and {worst_step * stick.rate:.0f} (lower is faster)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
