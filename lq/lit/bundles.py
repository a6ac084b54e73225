"""Agent bundles: a trained agent as a self-contained folder (``lq export CKPT DIR``) that builds in any working
directory, on any machine with lq installed (``lq.load_agent(DIR)``, ``lq eval DIR``, ``lq play --agent DIR``).

A bundle holds everything the agent and its environment read, with no path outside it::

    README.md                      the model card (data, protocol, profile, seed, zero-shot figures with baselines)
    bundle.json                    format, stage, hyperparameters (paths relative to the bundle), dataset fingerprint
    agent.safetensors              the agent's weights (the frozen pretrained encoder's included)
    data/<name>/                   the dataset's files (quests, demonstrations: the spaces and the quests to play)
    partner.safetensors, .json     the environment's partner; dm.safetensors, .json the Dungeon Master
    pretrained.safetensors, .json  the pretrained poly-encoder of a non-scratch agent (its candidate vectors)
    candidates/                    the encoded candidate sets and the partner's calibration, reused as they are

Checkpoints trained elsewhere keep working: a bundle is a copy, never a replacement.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import safetensors
import safetensors.torch
import torch

from lq.data.dataset import dataset_id
from lq.envs.models import load_poly_encoder, save_poly_encoder
from lq.envs.spec import nested, overridden
from lq.lit.agent import VOCABULARY, AgentModule
from lq.lit.bc import BCModule
from lq.lit.llm_bc import LanguageModelBCModule
from lq.lit.rl import RLModule
from lq.models.poly_encoder import stores_beside

FORMAT = "lq-agent-bundle/1"
AGENT_MODULES = {"bc": BCModule, "rl": RLModule, "llm_bc": LanguageModelBCModule}
DATA_SUFFIXES = (".json", ".jsonl", ".csv")  # the files a dataset's fingerprint covers (lq.data.dataset)
# the files a bundle copies, by where its hyperparameters name them ("env.": in the environment's, EnvSpec) and the
# name of the copy (the poly-encoders as NAME.safetensors, the dataset under data/)
PATHS = {"env.partner_checkpoint": "partner", "env.dm_checkpoint": "dm", "pretrained_checkpoint": "pretrained"}


def _at(hparams: dict, key: str) -> tuple[dict, str]:
    """The dict of ``hparams`` that holds ``key`` (``env.FIELD``: its ``env``), and the key within it."""
    return (hparams["env"], key[4:]) if key.startswith("env.") else (hparams, key)


def is_bundle(path: str | Path) -> bool:
    return (Path(path) / "bundle.json").is_file()


def built_module(stage: str, hparams: dict, vocabulary: torch.Tensor | None, where: str | Path) -> AgentModule:
    """An agent module of ``stage`` with ``hparams`` and its agent built (the weights still to load): a scratch
    encoder's rows are ``vocabulary``'s (what the checkpoint saved), or the whole tokenizer's where it saved none."""
    if stage not in AGENT_MODULES:
        raise ValueError(f"{where}: not an lq agent checkpoint (from lq bc or lq rl); lq_stage={stage!r}")
    module = AGENT_MODULES[stage](**hparams)
    module.build_agent(vocabulary, whole_vocabulary=vocabulary is None)
    return module


def load_bundle(path: str | Path, **overrides) -> AgentModule:
    """The agent of the bundle at ``path``; ``overrides`` replace hyperparameters (e.g. ``eval_max_steps``)."""
    root = Path(path).resolve()
    try:
        meta = json.loads((root / "bundle.json").read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"{root}: no bundle.json; make a bundle with lq export CHECKPOINT DIR") from None
    if meta.get("format") != FORMAT:
        raise ValueError(f"{root}/bundle.json: format {meta.get('format')!r}, this lq reads {FORMAT!r}")
    hparams = nested(dict(meta["hyper_parameters"]))  # a bundle from before EnvSpec: its environment made one dict
    hparams["env"] = dict(hparams["env"])
    places = [_at(hparams, key) for key in ("env.data_dir", *PATHS)]
    needed = ["agent.safetensors", *(d[k] for d, k in places if d.get(k) is not None)]
    missing = [name for name in needed if not (root / name).exists()]
    if missing:  # found now, not when the environment is first built
        raise FileNotFoundError(
            f"{root}: incomplete bundle, {', '.join(missing)} missing: re-export it with "
            f"`lq export CHECKPOINT {path} --overwrite`"
        )
    for d, k in places:
        if d.get(k) is not None:
            d[k] = str(root / d[k])
    hparams = overridden(hparams, overrides)
    weights = root / "agent.safetensors"
    with safetensors.safe_open(str(weights), "pt") as f:
        vocabulary = f.get_tensor(VOCABULARY) if VOCABULARY in f.keys() else None
    module = built_module(meta["stage"], hparams, vocabulary, root)
    safetensors.torch.load_model(module, str(weights))
    return module.eval()


def _copy_poly_encoder(checkpoint: str | Path, data_dir: str | Path, out: Path, name: str) -> None:
    """A poly-encoder checkpoint as ``out/name.safetensors`` and ``.json`` (its candidate stores: the caller)."""
    model, spec = load_poly_encoder(checkpoint, dataset=data_dir)
    save_poly_encoder(model, spec, out / f"{name}.safetensors", dataset_id(data_dir))


def export_bundle(module: AgentModule, checkpoint: str | Path, out: Path) -> None:
    """Write ``module`` (loaded from ``checkpoint``) and what it needs into the folder ``out`` (which must be a new,
    empty one: :func:`lq.data.io.atomic_dir` makes it). The model card is written by the caller."""
    if module.stage == "llm_bc":
        raise ValueError(f"{checkpoint}: a language model's LoRA adapters have no bundle yet (it would copy the whole "
                         "base model); lq eval plays the checkpoint itself, its base read from model.llm")  # fmt: skip
    h = {k: v for k, v in module.hparams.items() if not k.startswith("_")}
    h["env"] = dict(h["env"])
    data_dir = Path(module.data_dir)
    data_out = Path("data") / data_dir.resolve().name
    for file in sorted(data_dir.rglob("*")):
        if file.is_file() and file.suffix in DATA_SUFFIXES:
            target = out / data_out / file.relative_to(data_dir)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, target)
    if dataset_id(out / data_out) != dataset_id(data_dir):
        raise RuntimeError(f"the copy of {data_dir} in {out} has another fingerprint: was the dataset written to?")
    candidates = out / "candidates"
    candidates.mkdir()
    h["env"]["data_dir"] = str(data_out)
    for key, name in PATHS.items():
        d, k = _at(h, key)
        if d.get(k) is None:
            continue
        _copy_poly_encoder(d[k], data_dir, out, name)
        for store in stores_beside(d[k]).glob("*.pt"):
            if store.name.startswith(("partner-", "dm-", "agent-")):
                shutil.copy2(store, candidates / store.name)
        d[k] = f"{name}.safetensors"
    safetensors.torch.save_model(module, str(out / "agent.safetensors"))
    # where its training started is history, not something the bundle reads: no path outside the bundle
    if h.get("bc_checkpoint") is not None:
        h["bc_checkpoint"] = None
    if h.get("init_from") not in (None, "bc"):
        h["init_from"] = Path(str(h["init_from"])).name
    meta = {
        "format": FORMAT,
        "stage": module.stage,
        "hyper_parameters": h,
        "lq_dataset": dataset_id(data_dir),
        "exported_from": Path(checkpoint).name,
    }
    (out / "bundle.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")
