"""Loading the environment's frozen poly-encoders from their training checkpoints, or from the safetensors files of an
agent bundle (:func:`save_poly_encoder`: the weights and a ``.json`` beside them with the encoder and dataset)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import safetensors.torch
import torch

from lq.data.dataset import check_dataset
from lq.models.encoder import EncoderSpec
from lq.models.poly_encoder import PolyEncoder, state_digest, weights_digest


def load_poly_encoder(
    checkpoint: str | Path, device: str | torch.device = "cpu", dataset: str | Path | None = None
) -> tuple[PolyEncoder, EncoderSpec]:
    """A trained poly-encoder (from ``lq pretrain``, ``lq partner`` or ``lq dm``), in eval mode, frozen. With
    ``dataset``, one trained on another dataset is refused (:func:`lq.data.dataset.check_dataset`)."""
    if Path(checkpoint).suffix == ".safetensors":
        return _load_safetensors(Path(checkpoint), device, dataset)
    state = _read(checkpoint)
    if dataset is not None:
        check_dataset(state, checkpoint, dataset)
    hparams = state.get("hyper_parameters", {})
    encoder = hparams.get("encoder")
    if not isinstance(encoder, dict):
        raise ValueError(f"{checkpoint}: not an lq poly-encoder checkpoint (no encoder in its hyperparameters)")
    spec = EncoderSpec(**encoder.get("spec", {}))  # builds the right shape; the weights come from the checkpoint
    model = PolyEncoder.from_spec(spec, int(hparams.get("n_codes", 64)))
    model.load_state_dict(dict(_weights(state)))
    return _frozen(model, device), spec


def checkpoint_digest(checkpoint: str | Path) -> str:
    """:func:`lq.models.poly_encoder.weights_digest` of the poly-encoder in ``checkpoint``, read from the checkpoint's
    state (memory-mapped) without building the model: what :func:`load_poly_encoder` would load. A bundle's
    ``.safetensors`` is loaded (its file need not keep the model's order)."""
    if Path(checkpoint).suffix == ".safetensors":
        return weights_digest(load_poly_encoder(checkpoint)[0])
    return state_digest(_weights(_read(checkpoint, mmap=True)))


def _read(checkpoint: str | Path, mmap: bool = False) -> dict:
    """A poly-encoder's Lightning checkpoint as plain values (``mmap``: its tensors read only when used)."""
    try:
        return torch.load(checkpoint, map_location="cpu", weights_only=True, mmap=mmap)
    except FileNotFoundError:
        raise FileNotFoundError(f"{checkpoint}: no such checkpoint; train it first (make partner, make dm)") from None


def _weights(state: dict) -> Iterator[tuple[str, torch.Tensor]]:
    """The poly-encoder's own weights in a Lightning checkpoint's ``state``, under its module's names, in order."""
    return ((k.removeprefix("model."), v) for k, v in state["state_dict"].items() if k.startswith("model."))


def checkpoint_spec(checkpoint: str | Path) -> EncoderSpec | None:
    """The encoder spec a poly-encoder checkpoint (or a bundle's ``.safetensors``) was trained with, read without
    building its model or loading its weights; None where there is no such file (yet)."""
    path = Path(checkpoint)
    if not path.is_file():
        return None
    if path.suffix == ".safetensors":
        config = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    else:
        config = torch.load(path, map_location="cpu", weights_only=True, mmap=True).get("hyper_parameters", {})
    encoder = config.get("encoder")
    return EncoderSpec(**encoder.get("spec", {})) if isinstance(encoder, dict) else None


ROLES = {"partner": "the partner", "dm": "the Dungeon Master"}


def too_long_for(length: int | None, checkpoints: dict[str, str | Path | None]) -> tuple[int, str] | None:
    """Whether environment models read contexts of ``length`` word pieces: None where every one of ``checkpoints``
    (by role, ``partner`` and ``dm``; a missing file is not checked) has the positions for them, else the fewest
    positions among those that have too few and who they are (``the partner (PATH)``)."""
    from lq.models.encoder import spec_positions

    if length is None:
        return None
    short = {}
    for role, checkpoint in checkpoints.items():
        spec = checkpoint_spec(checkpoint) if checkpoint else None
        if spec is not None and length > spec_positions(spec):
            short[role] = spec_positions(spec)
    if not short:
        return None
    return min(short.values()), " and ".join(f"{ROLES[role]} ({checkpoints[role]})" for role in short)


def _frozen(model: PolyEncoder, device: str | torch.device) -> PolyEncoder:
    model.to(device).eval()
    for p in model.parameters():
        p.requires_grad = False
    return model


def save_poly_encoder(model: PolyEncoder, spec: EncoderSpec, path: str | Path, dataset: str | None) -> None:
    """``path`` (``.safetensors``): the weights, and ``path`` with ``.json``: the encoder, the codes and the dataset id
    (what :func:`load_poly_encoder` needs)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    safetensors.torch.save_model(model, str(path))
    config = {"encoder": {"spec": vars(spec)}, "n_codes": model.codes.shape[0], "lq_dataset": dataset}
    path.with_suffix(".json").write_text(json.dumps(config, indent=1) + "\n")


def _load_safetensors(
    path: Path, device: str | torch.device, dataset: str | Path | None
) -> tuple[PolyEncoder, EncoderSpec]:
    config_path = path.with_suffix(".json")
    try:
        config = json.loads(config_path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{config_path}: missing; a poly-encoder's .safetensors needs its .json beside it"
        ) from None
    if dataset is not None:
        check_dataset(config, path, dataset)
    spec = EncoderSpec(**config["encoder"]["spec"])
    model = PolyEncoder.from_spec(spec, int(config["n_codes"]))
    safetensors.torch.load_model(model, str(path))
    return _frozen(model, device), spec
