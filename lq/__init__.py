"""lq: goal-driven agents that act and speak in LIGHT fantasy text worlds.

``lq.load_agent(PATH)`` and the rest of the Python API (:mod:`lq.api`) load on first use: ``import lq`` itself is
cheap; it registers the Gymnasium environment ``lq/Quest-v0`` (by name: nothing of it is imported until
``gymnasium.make``)."""

from __future__ import annotations

import os
from typing import Any

# Intel MKL's conditional numerical reproducibility, set before torch first calls MKL (it reads this once). Without it
# MKL picks among its kernels by the memory layout of the process, and a float32 product's last bits follow: the same
# pretraining run (quick profile, same code, data and config) gave weights differing by up to 2e-5 when only the
# checkout's path differed (/tmp/qs/fresh against a symlink /tmp/qs/fr to it), so General+Light's quickstart figures
# depended on where the repository was cloned. ``AUTO`` keeps the CPU's fastest branch and the same one in every
# process (both paths then gave the same weights, at the same speed; docs/results/CHANGELOG.md). A value the user set
# is kept.
os.environ.setdefault("MKL_CBWR", "AUTO")

__version__ = "0.1.0"
ENV_ID = "lq/Quest-v0"


def _register() -> None:
    """``lq/Quest-v0`` in Gymnasium's registry, by name (the environment's module loads at ``gymnasium.make``)."""
    try:
        import gymnasium
    except ImportError:  # lq's dependencies include it; a partial install registers nothing
        return
    if ENV_ID not in gymnasium.registry:
        # no passive checker: it keeps the first reset's output to compare with the first step's, so after a first
        # reset that raised (a bad option, told as such) the first step fails in it with an unpacking TypeError
        # (gymnasium 1.x); Gymnasium's full check_env passes on the environment (tests/envs/test_gym.py)
        gymnasium.register(
            id=ENV_ID,
            entry_point="lq.envs.gym:QuestGymEnv",
            vector_entry_point="lq.envs.gym:QuestVectorEnv",
            disable_env_checker=True,
        )


_register()


def __getattr__(name: str) -> Any:
    if name in ("api", "load_agent"):
        import lq.api

        return lq.api if name == "api" else lq.api.load_agent
    raise AttributeError(f"module 'lq' has no attribute {name!r}")
