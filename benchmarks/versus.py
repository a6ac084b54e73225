"""One benchmark, two commits, one call: ``benchmarks/rl.py`` run on an earlier commit (checked out in a git worktree)
and on this working tree, one after the other, twice over in alternation (old, new, new, old), so that the machine's
drift within the call falls on both; then each encoder's transitions per second on each side (the mean of its two
runs), per yardstick, and the ratio new/old. This machine's speed drifts 3x between days: only a ratio of one call
compares.

    python benchmarks/versus.py REF [--rounds 2] [--json PATH] [-- rl.py's arguments]
    python benchmarks/versus.py 160d725 -- --data data/default --protocols paper

The earlier commit runs its own ``benchmarks/rl.py`` with its own ``lq`` (``PYTHONPATH`` set to its worktree) in
this interpreter's environment; its worktree is made under ``$TMPDIR`` and removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import mean

ROOT = Path(__file__).resolve().parents[1]


def run_rl(tree: Path, rl_args: list[str], out: Path) -> dict:
    """``benchmarks/rl.py`` of ``tree`` with ``rl_args`` (``--data`` resolved against this tree), its JSON figures."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, str(tree / "benchmarks/rl.py"), *rl_args, "--json", str(out)]
    print(f"$ {' '.join(command)}  (PYTHONPATH={tree})", flush=True)
    subprocess.run(command, cwd=ROOT, env=env, check=True)
    return json.loads(out.read_text(encoding="utf-8"))


def rates(figures: list[dict]) -> dict[tuple[str, str], tuple[float, float]]:
    """Per (encoder, protocol): the mean transitions per second of the runs, and the mean per yardstick."""
    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for run in figures:
        for r in run["runs"]:
            out.setdefault((r["encoder"], r["protocol"]), []).append((r["transitions_per_s"], r["per_yardstick"]))
    return {key: (mean(a for a, _ in v), mean(b for _, b in v)) for key, v in out.items()}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    rl_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ref", help="the earlier commit (a hash, a tag, a branch)")
    parser.add_argument("--rounds", type=int, default=2, help="old-new pairs, alternated (old new, new old, ...)")
    parser.add_argument("--json", type=Path, help="write both sides' figures and the ratios to this file")
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", args.ref], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    figures: dict[str, list[dict]] = {"old": [], "new": []}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill, too, removes the worktree (finally below)
    with tempfile.TemporaryDirectory() as temporary:
        old_tree = Path(temporary) / f"lq-{commit}"
        subprocess.run(["git", "worktree", "add", "--detach", str(old_tree), commit], cwd=ROOT, check=True)
        try:
            for round_ in range(args.rounds):
                order = ("old", "new") if round_ % 2 == 0 else ("new", "old")
                for side in order:
                    tree = old_tree if side == "old" else ROOT
                    out = Path(temporary) / f"{side}-{round_}.json"
                    figures[side].append(run_rl(tree, rl_args, out))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old_tree)], cwd=ROOT, check=False)
    old, new = rates(figures["old"]), rates(figures["new"])
    sticks = {side: [r for run in runs for r in run["yardstick"]] for side, runs in figures.items()}
    print(
        f"\n{commit} (old) against this tree (new), {args.rounds} runs each, alternated; yardstick (passes/s) during "
        f"old's runs {min(sticks['old']):.2f} to {max(sticks['old']):.2f}, new's {min(sticks['new']):.2f} to "
        f"{max(sticks['new']):.2f}"
    )
    ratios = {}
    for key in new:
        if key not in old:
            continue
        (o, o_per), (n, n_per) = old[key], new[key]
        ratios[key] = n / o
        print(
            f"{key[0]}, {key[1]}: old {o:.1f} transitions/s ({o_per:.2f} per yardstick), new {n:.1f} "
            f"({n_per:.2f}): new/old {n / o:.2f}"
        )
    if args.json:
        record = {
            "old": commit,
            "rl_args": rl_args,
            "figures": figures,
            "ratios": [{"encoder": e, "protocol": p, "new_over_old": r} for (e, p), r in ratios.items()],
        }
        args.json.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
