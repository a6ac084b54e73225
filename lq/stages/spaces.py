"""A pretrained encoder's vectors of the agents' action and utterance spaces, kept beside its checkpoint: encoded once
for every agent on that encoder (each would otherwise encode them at its start)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from lq.stages.families import NO_CHOICES, Keyed
from lq.stages.run import Run


class Spaces(Keyed):
    name = "spaces"

    def fixed(self, run: Run) -> dict[str, Any]:
        return {"objective": "lq", **NO_CHOICES}

    def needs(self, run: Run) -> list[Run]:
        needed = [run.another("data")]
        return needed + ([run.another("pretrain", run.encoder)] if run.encoder != "scratch" else [])

    def candidates(self, run: Run) -> str:
        return dataclasses.replace(run, stage="pretrain").outputs["candidates"]

    def file(self, run: Run) -> Path:
        """The last of the encoder's stores of its module's agent (:func:`lq.envs.build.space_stores`): its pretrained
        encoder (its resolved config's), its tokenizer, context length and data."""
        from lq.envs.build import space_stores  # torch and transformers: not for lq.stages' readers (lq's parser)

        return space_stores(*self.inputs(run))[-1]

    def compute(self, run: Run) -> None:
        """The encoder's vectors of the spaces, encoded and stored where they are missing as an agent's build would
        (:func:`lq.envs.build.encode_spaces`: a store with the same weights and texts is read, not encoded again), from
        the encoder and the data alone: no agent module."""
        from lq.envs.build import encode_spaces

        encode_spaces(*self.inputs(run))

    @staticmethod
    def inputs(run: Run) -> tuple[str, str, int, str]:
        """What its vectors are computed from, in its module's resolved config: the pretrained encoder's checkpoint,
        the agent's tokenizer, its context length and the data."""
        from lq.models.encoder import encoder_tokenizer

        model = run.config["model"]
        tokenizer = encoder_tokenizer(model["encoder"])
        return model["pretrained_checkpoint"], tokenizer, model["context_length"], model["env"]["data_dir"]

    def label(self, run: Run) -> str:
        return f"{run.encoder} vectors of the agents' spaces"
