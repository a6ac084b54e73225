"""Behaviour cloning of a language model itself (issue 111): LoRA adapters on a local causal LM, trained on the
demonstrations (:class:`lq.lit.llm_bc.LanguageModelBCModule`, ``lq llm_bc fit``), its best validation epoch kept and
played zero-shot as every BC agent is. Its ``encoder`` names the model (``smollm2``, a Hugging Face causal LM folder or
a GGUF file: :func:`lq.llm.model.model_file`), as the zero-shot ``llm`` job's does; its agent has no encoder of its
own (no pretraining, no space vectors), so it needs only the data, the environment's partner and DM and the partner's
calibration."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from lq.conf import path
from lq.conf.resolver import Profile, merged
from lq.stages.bc import CHECKPOINT
from lq.stages.families import Agent, agent_dir, environment_needs
from lq.stages.llm import model_name
from lq.stages.run import Run


def model_folder_name(model: str) -> str:
    """The folder name of a model's runs: ``smollm2`` as it is; a path its last part and a digest of the whole
    (two models of one name in two folders never share a folder)."""
    if "/" not in model and not model.endswith(".gguf"):
        return model
    return f"{model_name(model)}-{hashlib.sha256(model.encode()).hexdigest()[:8]}"


class LanguageModelBehaviourCloning(Agent):
    name = "llm_bc"
    summary = "behaviour cloning of a language model (LoRA adapters) on demonstrations"
    profile_file = "llm_bc"
    checkpoint_name = CHECKPOINT
    names_model = True

    def dir(self, run: Run) -> str:
        return agent_dir(run.stage_dir(), model_folder_name(run.encoder), run.ability, run.switch, run.seed)

    def configs(self, run: Run) -> list[Path]:
        """agent.yaml (what every agent shares), llm_bc.yaml, the profile's llm_bc.yaml, the protocol's: no encoder's
        file (the model is the run's ``encoder``, set as ``model.llm``)."""
        files = [path(self.base_file), path(f"{self.name}.yaml"), *Profile(run.profile).files(self.profile_file)]
        return [*files, path("protocol", f"{run.protocol}.yaml")]

    def needs(self, run: Run) -> list[Run]:
        """The dataset, the partner and the DM, and the partner's calibration."""
        needed = [run.another("data"), run.env_run("partner"), run.env_run("dm")]
        return [*needed, run.another("calibrate", protocol=run.protocol), *environment_needs(run)]

    def settings(self, run: Run) -> dict[str, Any]:
        """An agent's (its data, ability, switch, seed, partner and DM), with the model as ``model.llm`` and no
        pretrained encoder."""
        return merged(super().settings(run), {"model": {"llm": run.encoder, "pretrained_checkpoint": None}})

    def check(self, run: Run) -> None:
        """A model name that cannot be a model is refused before anything trains (:class:`lq.llm.model.ModelError`)."""
        from lq.llm.model import model_file  # torch: only where such a run is planned

        model_file(run.encoder)

    def label(self, run: Run) -> str:
        return f"{self.name} {run.encoder}-{run.ability}-{run.switch} s{run.seed}"
