"""The Python API from outside the repository: docs/interfaces.md's Gymnasium script runs from another folder, evaluate
returns the tables' rows, and importing lq changes nothing in the process."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lq.cli import main

ROOT = Path(__file__).resolve().parents[1]


def docs_script(heading: str) -> str:
    """The first Python block under ``heading`` in docs/interfaces.md."""
    text = (ROOT / "docs" / "interfaces.md").read_text()
    section = text[text.index(heading) :]
    start = section.index("```python\n") + len("```python\n")
    return section[start : section.index("```", start)]


@pytest.fixture(scope="module")
def bundle(trained_agent, tmp_path_factory):
    out = tmp_path_factory.mktemp("api") / "bundle"
    assert main(["export", str(trained_agent), str(out), "--no-eval"]) == 0
    return out


@pytest.mark.slow
def test_the_docs_gymnasium_script_runs_from_another_folder(bundle, tmp_path):
    script = docs_script("## Python, Gymnasium, bundles and play")
    assert len(script.strip().splitlines()) <= 22
    (tmp_path / "gym_loop.py").write_text(script)
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "PYTHONPATH")}
    done = subprocess.run(
        [sys.executable, "gym_loop.py", str(bundle)], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == ["random valid candidate", "trained agent"]
    assert all(re.fullmatch(r".*: act goal in \d+, speech goal in \d+ of 20 episodes", line) for line in lines)


@pytest.mark.slow
def test_evaluate_gives_the_tables_rows_as_a_dataframe(bundle):
    import lq

    frame = lq.api.evaluate([bundle], baselines=1)
    assert list(frame.index[:2]) == [
        "BC scratch act_speech hardcoded (greedy)",
        "BC scratch act_speech hardcoded (sampled)",
    ]
    assert "Random (whole spaces)" in frame.index and "Demonstrations replayed" in frame.index
    assert {"runs", "act_goal_rate_mean", "act_goal_rate_std", "speech_goal_rate_mean"} <= set(frame.columns)
    assert (
        frame.loc["Demonstrations replayed", "act_goal_rate_mean"]
        > frame.loc["Random (whole spaces)", "act_goal_rate_mean"]
    )


def test_importing_lq_sets_no_environment_variables_and_configs_ship_inside():
    import lq.conf

    code = (
        "import os; before = dict(os.environ); import lq, lq.api, lq.envs.gym; "
        "changed = {k for k in set(os.environ) | set(before) if os.environ.get(k) != before.get(k)}; "
        "print(sorted(changed)); print(lq.conf.path('protocol', 'paper.yaml'))"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    done = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    changed, path = done.stdout.strip().splitlines()[-2:]
    assert not any(k.startswith(("HF_", "TRANSFORMERS")) for k in eval(changed)), changed
    assert Path(path).is_file() and Path(path).parent.parent == ROOT / "lq" / "conf"
    with pytest.raises(FileNotFoundError, match="no such lq config; .* has paper.yaml, restricted.yaml"):
        lq.conf.path("protocol", "strict.yaml")


REUSE = """
import sys, torch
torch.set_num_threads(int(sys.argv[1]))
import lq.envs.calibration as calibration
import lq.models.poly_encoder as poly_encoder

def refuse(*args, **kwargs):
    raise AssertionError("computed again: " + sys.argv[3])

calibration.fit_action_bias = refuse
poly_encoder.CandidateCache.refresh = refuse
if sys.argv[3] == "stage":
    from lq.lit.checkpoints import load_agent
    load_agent(sys.argv[2]).eval_env("valid")
else:
    import lq
    lq.api.gym_env(sys.argv[2]).reset(seed=0)
print("reused")
"""


@pytest.mark.slow
def test_the_calibration_and_candidates_are_computed_once_and_read_by_every_process(trained_agent, bundle):
    """The partner's calibration and the encoded candidates depend on the environment's models, data and settings,
    not on the agent or the process: another agent stage, a process with another thread count and ``lq.api.gym_env``
    on a bundle read them, computing and writing nothing (in the bundle least of all)."""
    from lq.lit.checkpoints import load_agent

    load_agent(trained_agent).eval_env("valid")  # this process's threads: computed here if not yet
    stores = Path(load_agent(trained_agent).env_spec.partner_checkpoint).parent / "candidates"

    def files() -> dict:
        return {p: p.stat().st_mtime_ns for root in (stores, bundle) for p in Path(root).rglob("*") if p.is_file()}

    before = files()
    for threads, agent, how in ((1, trained_agent, "stage"), (2, bundle, "stage"), (1, bundle, "gym")):
        env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
        done = subprocess.run(
            [sys.executable, "-c", REUSE, str(threads), str(agent), how],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0 and done.stdout.strip().endswith("reused"), done.stderr[-2000:]
    assert files() == before
