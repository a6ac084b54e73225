"""The benchmarks still run against the code they time: a benchmark that patches a renamed function fails only when
someone next runs it (``benchmarks/rl.py`` did, from 6bd1a3c to 26cae73). Figures are not checked here, only that each
timed part was reached."""

import json
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


@pytest.mark.slow
def test_the_llm_benchmark_times_each_head_and_its_arithmetic_under_both_protocols(tmp_path):
    from tests.samples import tiny_causal_lm

    data = tmp_path / "data"
    generate_dataset(data, scale="tiny", seed=7, log=lambda _: None)
    model = tiny_causal_lm(tmp_path / "lm")
    args = ["--llm", str(model), "--data", str(data), "--turns", "4", "--paper-candidates", "40"]
    args += ["--json", str(tmp_path / "llm.json")]
    run = subprocess.run(
        [sys.executable, ROOT / "benchmarks/llm.py", *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=900,  # outputs/: a checkout's checkpoints are not read
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    for protocol in ("restricted", "paper"):
        section = run.stdout.split(f"{protocol} protocol", 1)[1]
        for head in ("act", "speak"):
            assert re.search(rf"^  {head} turn: \d+\.\d+ s \(mean of \d", section, flags=re.M), section[:3000]
            assert re.search(rf"^  {head} turn's arithmetic: \d+\.\d GFLOP .* \d+% of it$", section, flags=re.M)
    paper = json.loads((tmp_path / "llm.json").read_text())["protocols"]["paper"]["heads"]
    assert paper["speak"]["scaled"] and paper["speak"]["scored"] == 40 < paper["speak"]["candidates"]
