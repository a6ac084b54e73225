import os
import subprocess
import sys


def _mkl_cbwr(env: dict[str, str]) -> str:
    """MKL_CBWR in a new process just after ``import lq``, which must not have loaded torch (nor so MKL) yet."""
    code = "import lq, os, sys; assert 'torch' not in sys.modules; print(os.environ.get('MKL_CBWR'))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_importing_lq_sets_mkls_branch_before_torch_is_loaded_and_keeps_the_users():
    """MKL reads MKL_CBWR once, at its first call: ``import lq`` sets it (AUTO) unless the user set it, so a run's
    float32 products take the same kernels whatever the process's memory layout (the checkout's path moved a
    pretraining run's weights by up to 2e-5 without it: docs/agents.md)."""
    env = {k: v for k, v in os.environ.items() if k != "MKL_CBWR"}
    assert _mkl_cbwr(env) == "AUTO"
    assert _mkl_cbwr({**env, "MKL_CBWR": "COMPATIBLE"}) == "COMPATIBLE"
