"""``make quickstart`` from a fresh clone, timed: the whole target's wall time and CPU time (user + system, of every
process it ran, its virtualenv made anew), the table's own line of where its wall time went (data, environment
models and encoders; child runs), each run's own line, and this machine's yardstick before and after, with the wall
time at the reference speed of 3.6 passes/s (wall time x the yardstick's mean / 3.6: the quickstart's 15-minute
bar is stated at that speed).

    python benchmarks/quickstart.py [--commit REV] [--keep DIR] [--reference 3.6] [--jobs N]

The clone is made from this repository's commit ``REV`` (default ``HEAD``: commit first) in a temporary folder,
removed at the end unless ``--keep DIR`` names where to make it (its ``quickstart.log`` kept there). Run it on an
idle machine: a job beside it takes the cores the quickstart's runs share.
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import yardstick

ROOT = Path(__file__).resolve().parents[1]


def cpu_seconds() -> float:
    """User and system CPU seconds of every child process ended and waited for so far (and theirs)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def wall_lines(log: str) -> list[str]:
    """The lines of the log that say where a run's wall time went (each run's, then the table's)."""
    return [line for line in log.splitlines() if re.search(r"(^|\] )wall time: ", line)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commit", default="HEAD", help="the commit of this repository to clone (default: HEAD)")
    parser.add_argument("--keep", type=Path, help="make the clone here and keep it (default: a temporary folder)")
    parser.add_argument("--reference", type=float, default=3.6, help="the yardstick the bar is stated at (passes/s)")
    parser.add_argument("--jobs", type=int, help="make quickstart's JOBS (default: the Makefile's, 2)")
    args = parser.parse_args()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.commit], check=True,
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    where = args.keep or Path(tempfile.mkdtemp(prefix="lq-quickstart-"))
    clone = where / "lq"
    if clone.exists():
        sys.exit(f"error: {clone} exists: --keep a folder without an lq/ in it")
    try:
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "--quiet", commit], check=True)
        before = yardstick()
        print(f"yardstick before: {before:.2f} passes/s", flush=True)
        log = clone / "quickstart.log"
        cpu, start = cpu_seconds(), time.perf_counter()
        with open(log, "w", encoding="utf-8") as out:
            target = ["make", "quickstart", *([f"JOBS={args.jobs}"] if args.jobs is not None else [])]
            status = subprocess.run(target, cwd=clone, stdout=out, stderr=subprocess.STDOUT).returncode
        wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
        after = yardstick()
        text = log.read_text(encoding="utf-8", errors="replace")
        print("\n".join(wall_lines(text)))
        if status != 0:
            print(f"make quickstart failed (exit status {status}); its log: {log}", file=sys.stderr)
            args.keep = args.keep or where  # kept, to read
            return 1
        rate = (before + after) / 2
        minutes, seconds = divmod(round(wall), 60)
        print(f"yardstick after: {after:.2f} passes/s (mean {rate:.2f})")
        print(
            f"{' '.join(target)} of {commit} from a fresh clone: {minutes} min {seconds:02d} s wall "
            f"({wall:.0f} s), CPU {cpu:.0f} s ({cpu / wall:.0%} of one core); at the reference {args.reference} "
            f"passes/s: {wall * rate / args.reference / 60:.1f} min"
        )
        return 0
    finally:
        if args.keep is None:
            shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
