"""Loading the environment's frozen poly-encoders from their training checkpoints."""

from __future__ import annotations

from pathlib import Path

import torch

from lq.data.dataset import check_dataset
from lq.models.encoder import EncoderSpec
from lq.models.poly_encoder import PolyEncoder


def load_poly_encoder(
    checkpoint: str | Path, device: str | torch.device = "cpu", dataset: str | Path | None = None
) -> tuple[PolyEncoder, EncoderSpec]:
    """A trained poly-encoder (from ``lq pretrain``, ``lq partner`` or ``lq dm``), in eval mode, frozen. With
    ``dataset``, one trained on another dataset is refused (:func:`lq.data.dataset.check_dataset`)."""
    try:
        state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise FileNotFoundError(f"{checkpoint}: no such checkpoint; train it first (make partner, make dm)") from None
    if dataset is not None:
        check_dataset(state, checkpoint, dataset)
    hparams = state.get("hyper_parameters", {})
    encoder = hparams.get("encoder")
    if not isinstance(encoder, dict):
        raise ValueError(f"{checkpoint}: not an lq poly-encoder checkpoint (no encoder in its hyperparameters)")
    spec = EncoderSpec(**encoder.get("spec", {}))  # builds the right shape; the weights come from the checkpoint
    model = PolyEncoder.from_spec(spec, int(hparams.get("n_codes", 64)))
    model.load_state_dict(
        {k.removeprefix("model."): v for k, v in state["state_dict"].items() if k.startswith("model.")}
    )
    model.to(device).eval()
    for p in model.parameters():
        p.requires_grad = False
    return model, spec
