"""The switch A2C agent (paper 4.2): its final weights are the agent; under lq's objective it starts from the BC agent
of its configuration and seed, under another objective its agents go beside lq's (``rl-OBJECTIVE/``)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from lq.conf import path
from lq.conf.resolver import merged
from lq.stages.families import Agent, environment_of, flag_value
from lq.stages.run import Run


def starts_from_bc(config: dict[str, Any]) -> bool:
    """Whether an RL run of merged config ``config`` starts from the BC agent of its configuration and seed
    (``init_from: bc``, the lq objective's)."""
    return (config.get("model") or {}).get("init_from") == "bc"


def shared_with_bc(config: dict[str, Any]) -> list[str]:
    """The arguments an RL run's BC start takes from the RL run's merged configuration: its training pool and the
    worlds it plays (:func:`lq.stages.families.environment_of`)."""
    pool, worlds = environment_of(config)
    return [*(["--model.env.pool", pool] if pool else []), *(["--model.worlds", json.dumps(worlds)] if worlds else [])]


def bc_start(run: Run, shared: bool = True) -> Run:
    """The BC run an RL run of lq's objective starts from: of its configuration and seed, in its ``--bc_dir`` where its
    arguments name one (a variant's own BC agents: :data:`lq.experiments.specs.GENERALISATION_RUNS`), else the BC
    stage's folder; with its training pool and worlds (:func:`shared_with_bc`)."""
    folder = flag_value(run.extra, "--bc_dir") or ""
    extra = tuple(shared_with_bc(run.config)) if shared else ()
    return dataclasses.replace(run, stage="bc", folder=folder, extra=extra)


class ReinforcementLearning(Agent):
    name = "rl"
    summary = "train the switch A2C agent in QuestEnv"
    profile_file = "rl"
    checkpoint_name = "agent.ckpt"

    def fixed(self, run: Run) -> dict[str, Any]:
        return {}  # its objective is its own

    def folder_name(self, run: Run) -> str:
        return f"rl-{run.objective}" if run.objective != "lq" else "rl"

    def configs(self, run: Run) -> list[Path]:
        """The agents' files, then its objective's, last: it sets sizes of its own, such as the paper's 32
        environments."""
        return [*super().configs(run), path("objective", f"{run.objective}.yaml")]

    def needs(self, run: Run) -> list[Run]:
        """An agent's, and the BC agent of the same configuration and seed that it starts from (``init_from: bc``)."""
        needed = super().needs(run)
        if starts_from_bc(run.config):
            needed.append(bc_start(run))
        return needed

    def settings(self, run: Run) -> dict[str, Any]:
        """An agent's, and the BC agent of the same configuration and seed it starts from (``init_from: bc``, the lq
        objective's): :func:`bc_start`'s."""
        return merged(super().settings(run), {"model": {"bc_checkpoint": bc_start(run, shared=False).checkpoint}})

    def resolve(self, run: Run) -> dict[str, Any]:
        """An agent's, less ``bc_dir`` (a folder of BC agents that extra arguments may name in place of the BC stage's:
        read by :func:`bc_start`, not by the RL module)."""
        config = super().resolve(run)
        config.pop("bc_dir", None)
        return config
