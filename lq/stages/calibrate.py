"""The partner's calibration in the agents' environment (:func:`lq.envs.calibration.calibrate_partner`): one per
environment models, data and settings, kept beside the partner's checkpoint, computed once for every agent that shares
them (agents side by side would each fit it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lq.envs.spec import EnvSpec
from lq.stages.families import NO_CHOICES, Keyed
from lq.stages.run import Run


def env_spec(config: dict[str, Any]) -> EnvSpec:
    """The environment of an agent run whose merged config is ``config`` (``model.env``, :class:`EnvSpec`'s defaults
    where the configs set nothing), as its module is built with it."""
    return EnvSpec.of((config.get("model") or {}).get("env") or {})


class Calibrate(Keyed):
    name = "calibrate"

    def fixed(self, run: Run) -> dict[str, Any]:
        return {"objective": "lq", **NO_CHOICES, "encoder": "scratch"}  # any encoder's module: scratch's

    def needs(self, run: Run) -> list[Run]:
        return [run.another("data"), run.env_run("partner"), run.env_run("dm")]

    def candidates(self, run: Run) -> str:
        return run.env_run("partner").outputs["candidates"]

    def file(self, run: Run) -> Path:
        """:meth:`lq.envs.spec.EnvSpec.calibration_file` of its module's environment."""
        return env_spec(run.config).calibration_file()

    def label(self, run: Run) -> str:
        return "the partner's calibration"

    def compute(self, run: Run) -> None:
        """The environment's partner calibrated on the demonstrations (:mod:`lq.envs.calibration`), as building the
        agents' environment (its :class:`EnvSpec`, from the run's config) fits it where it is missing: no agent
        module."""
        env_spec(run.config).build("valid")

    def graph_label(self, run: Run) -> str:
        return self.name  # one per environment, whatever module computes it
