"""How an experiment or a stage runs: :class:`Setup`, the resolver's profile, protocol, objective, data and outputs with
the seeds, the MLflow store, the job count and the launcher."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from lq.experiments.launchers import Launcher, Local
from lq.stages import Resolver
from lq.tracking import DEFAULT_TRACKING_URI


@dataclass
class Setup(Resolver):
    """How an experiment runs: the resolver's profile, protocol, data and outputs, and the seeds, the MLflow store,
    how many children run side by side and where (the launcher)."""

    seeds: Sequence[int] = (0, 1, 2)
    tracking_uri: str = DEFAULT_TRACKING_URI
    eval_seeds: int = 1
    jobs: int = 1  # agent children side by side under the local launcher, the cores shared among them
    extra_args: dict[str, Sequence[str]] = field(default_factory=dict)  # per stage ("rl", ...; "*": every stage)
    launcher: Launcher = field(default_factory=Local)

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.launcher, Local) and self.launcher.logs is None:  # each job's output, kept, per profile
            self.launcher.logs = f"{self.outputs}/logs/{self.profile}"
