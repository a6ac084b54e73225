import os
import subprocess
import sys


def _mkl_cbwr(env: dict[str, str]) -> str:
    code = "import lq, os; print(os.environ.get('MKL_CBWR'))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_importing_lq_fixes_mkls_branch_before_torch_calls_it_and_keeps_the_users():
    """MKL reads MKL_CBWR once, at its first call: ``import lq`` sets it (AUTO) unless the user set it, so a run's
    float32 products take the same kernels whatever the process's memory layout (the checkout's path moved a
    pretraining run's weights by up to 2e-5 without it: docs/agents.md)."""
    env = {k: v for k, v in os.environ.items() if k != "MKL_CBWR"}
    assert _mkl_cbwr(env) == "AUTO"
    assert _mkl_cbwr({**env, "MKL_CBWR": "COMPATIBLE"}) == "COMPATIBLE"
