"""The baselines and the ceiling played in the environment of an agent of an ability and switch (Tables 1, 2 and 7):
an experiment's child run, whose figures MLflow holds."""

from __future__ import annotations

from typing import Any

from lq.stages.families import Prepared, environment_needs
from lq.stages.run import Run


class Baselines(Prepared):
    """Never done: it writes no file (its figures are its child run's in MLflow, and a parent's finished children are
    not asked again), so a child always runs."""

    name = "baselines"
    wave, at_once = 3, None  # beside the agents

    def fixed(self, run: Run) -> dict[str, Any]:
        return {"encoder": "scratch"}  # its objective is its module's: the RL agents' it is played beside

    def graph_label(self, run: Run) -> str:
        return f"{self.name} {run.ability}-{run.switch} s{run.seed}"

    def child(self, run: Run, experiment: str, parent: str, tags: dict[str, str], tracking_uri: str) -> Run:
        return run

    def child_args(self, run: Run, experiment: str, parent: str, tags: dict[str, str], tracking_uri: str) -> list[str]:
        """``lq experiment baselines EXPERIMENT`` and its identity, a child of ``parent`` in ``tracking_uri`` (it
        tags itself as ``tags`` say: :func:`lq.experiments.running.run_baselines`)."""
        command, name, *identity = run.args
        return [command, name, experiment, *identity, "--parent", parent, "--tracking-uri", tracking_uri]

    def needs(self, run: Run) -> list[Run]:
        """The partner and the DM, and the partner's calibration, as an agent's; the worlds it plays too, where its
        arguments name some."""
        needed = [run.another("data"), run.env_run("partner"), run.env_run("dm")]
        return [*needed, run.another("calibrate", protocol=run.protocol), *environment_needs(run)]
