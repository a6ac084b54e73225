"""A pretrained encoder's vectors of the agents' action and utterance spaces, kept beside its checkpoint: encoded once
for every agent on that encoder (each would otherwise encode them at its start)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
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
        from lq.models.encoder import encoder_tokenizer

        model = run.config["model"]
        checkpoint, data_dir = model["pretrained_checkpoint"], model["env"]["data_dir"]
        return space_stores(checkpoint, encoder_tokenizer(model["encoder"]), model["context_length"], data_dir)[-1]

    def compute(self, run: Run, module: Callable[[], Any]) -> None:
        """The encoder's vectors of the spaces, as an agent module's agent encodes and stores them where they are
        missing (a store with the same weights and texts is read, not encoded again)."""
        module().build_agent()

    def label(self, run: Run) -> str:
        return f"{run.encoder} vectors of the agents' spaces"
