"""A language model played zero-shot in the environment of an agent of an ability and switch (issue 111): an
experiment's child run, like the baselines', whose figures MLflow holds. Its ``encoder`` names the model (``smollm2``,
a Hugging Face causal LM folder or a GGUF file: :func:`lq.llm.model.model_file`); its module is the scratch RL run of
its identity, whose environment, spaces, switch and evaluation it plays through."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from lq.stages.baselines import Baselines
from lq.stages.run import Run


def model_name(llm: str) -> str:
    """A language model's short name in row, run and file names: ``smollm2`` as it is, a folder's or a GGUF file's
    last part without ``.gguf``."""
    return Path(llm).name.removesuffix(".gguf")


class ZeroShotLanguageModel(Baselines):
    """Never done, as the baselines: its figures are its child run's."""

    name = "llm"
    after_first_seed = True  # its greedy plays, kept by the first seed's child, are read by the others'
    names_model = True

    def fixed(self, run: Run) -> dict[str, Any]:
        return {}  # its encoder is its model's name

    def module(self, run: Run) -> Run:
        return dataclasses.replace(run, stage="rl", encoder="scratch")

    def check(self, run: Run) -> None:
        """A model name that cannot be a model is refused before anything trains (:class:`lq.llm.model.ModelError`,
        a ValueError naming it and the fix)."""
        from lq.llm.model import model_file  # torch: only where an llm run is planned

        model_file(run.encoder)

    def graph_label(self, run: Run) -> str:
        return f"{self.name} {run.encoder} {run.ability}-{run.switch} s{run.seed}"
