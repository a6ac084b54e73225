"""The benchmarks still run against the code they time: a benchmark that patches a renamed function fails only when
someone next runs it (``benchmarks/rl.py`` did, from 6bd1a3c to 26cae73). Figures are not checked here, only that each
timed part was reached."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from lq.generate import generate_dataset

ROOT = Path(__file__).parents[1]


@pytest.mark.slow
def test_the_rl_benchmark_times_every_part_of_one_update(tmp_path):
    data = tmp_path / "data"
    generate_dataset(data, scale="tiny", seed=7, log=lambda _: None)
    args = ["--data", str(data), "--encoders", "scratch", "--protocols", "paper", "--warmup", "0", "--updates", "1"]
    args += ["--partner-calibration", "share", "--stand-ins", "stand-ins"]
    run = subprocess.run(
        [sys.executable, ROOT / "benchmarks/rl.py", *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=900,  # outputs/: a checkout's checkpoints are not read
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    shares = dict(re.findall(r"^  (\w[\w ]*?) +(\d+\.\d)%$", run.stdout, flags=re.M))
    for part in ("agent backward and step", "agent forward", "partner", "DM", "imitation term", "engine"):
        assert float(shares.get(part, 0)) > 0, f"{part!r} was never timed:\n{run.stdout[-3000:]}"
    assert re.search(r"products and attention kernels \d+% of the wall time", run.stdout), run.stdout[-3000:]
    assert re.search(r"the other operators of most time: \w+ \d", run.stdout), run.stdout[-3000:]
    assert re.search(r"^scratch, paper: \d+\.\d transitions/s", run.stdout, flags=re.M), run.stdout[-3000:]
