"""Where an agent checkpoint's dataset and environment models are, from whatever folder it is read.

An agent's hyperparameters name the files it reads when it is built (:data:`PLACES`) as its run was given them,
often relative to the folder it was trained in (``data/default``, ``outputs/quick/partner/small/best.ckpt``). They stay
as given (they are what a resumed run and an RL agent's BC start are compared by); beside them a checkpoint records
where its run was (``lq_places``: the working folder and each file's absolute path, :func:`recorded_places`) and its
dataset's fingerprint (``lq_dataset``, :func:`lq.data.dataset.dataset_id`). :func:`located` finds each file again at
load, so that ``lq eval`` and ``lq export`` work from any folder, and after the training folder was moved."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from lq.data.dataset import dataset_id
from lq.envs.spec import FLAT

# the hyperparameters naming a file or folder an agent reads when it is built (``env.``: its environment's, EnvSpec)
PLACES = ("env.data_dir", "env.partner_checkpoint", "env.dm_checkpoint", "pretrained_checkpoint")
# what each is to a reader, and the override that names it instead: lq.load_agent's keyword, lq eval's and lq
# export's option
NAMES = {
    "env.data_dir": ("dataset", "data_dir", "--data DIR"),
    "env.partner_checkpoint": ("partner", "partner_checkpoint", "--partner CKPT"),
    "env.dm_checkpoint": ("Dungeon Master", "dm_checkpoint", "--dm CKPT"),
    "pretrained_checkpoint": ("pretrained encoder", "pretrained_checkpoint", "--pretrained CKPT"),
}


def _value(hparams: Mapping, key: str):
    """The value of a place in nested hyperparameters (``env.FIELD``: in ``env``)."""
    return (hparams.get("env") or {}).get(key[4:]) if key.startswith("env.") else hparams.get(key)


def recorded_places(hparams: Mapping) -> dict:
    """What a checkpoint records of where its run was (``lq_places``): the working folder (``root``) and the absolute
    path of each place (``paths``), so that it is found again from any folder (:func:`located`)."""
    paths = {key: str(Path(value).resolve()) for key in PLACES if (value := _value(hparams, key))}
    return {"root": os.getcwd(), "paths": paths}


def overridden_places(overrides: Iterable[str]) -> set[str]:
    """The places that overrides of :func:`lq.envs.spec.overridden` (``data_dir``, ``partner_checkpoint`` ...) name:
    those are taken as the caller gives them, not looked for."""
    return {f"env.{FLAT[k]}" if k in FLAT else k for k in overrides} & set(PLACES)


def located(hparams: dict, saved: Mapping, checkpoint: str | Path, given: Iterable[str] = ()) -> dict:
    """``hparams`` (nested: :func:`lq.envs.spec.nested`) with each place found where it is now (:func:`find`), but
    those in ``given`` (overridden by the caller); ``saved``: the checkpoint's dict, read from ``checkpoint``."""
    out = {**hparams, "env": dict(hparams["env"])}
    recorded = saved.get("lq_places") or {}
    roots = training_roots(recorded.get("root"), checkpoint)
    for key in PLACES:
        value = _value(out, key)
        if not value or key in given:
            continue
        holder, field = (out["env"], key[4:]) if key.startswith("env.") else (out, key)
        holder[field] = find(key, str(value), recorded, roots, saved.get("lq_dataset"), checkpoint)
    return out


def training_roots(root: str | None, checkpoint: str | Path) -> list[Path]:
    """The folders a relative place may be relative to, most likely first: the working folder the run recorded,
    then every folder above the checkpoint, nearest first (a training folder moved, or a checkpoint from before lq
    recorded its folder, holds its ``data/`` and ``outputs/`` above its checkpoints)."""
    above = Path(checkpoint).resolve().parents
    return list(dict.fromkeys([*([Path(root)] if root else []), *above]))


def candidates(key: str, value: str, recorded: Mapping, roots: list[Path]) -> list[Path]:
    """Where a place may be, in order: the absolute path its run recorded; relative to the training folders
    (:func:`training_roots`: the recorded path rebased where the folder moved); as given, from the working folder
    last, where another training folder's files of the same names may be."""
    absolute = (recorded.get("paths") or {}).get(key)
    relative = _within_run(value, absolute, recorded.get("root"))
    found = [Path(absolute)] if absolute else []
    found += [root / relative for root in roots] if not relative.is_absolute() else []
    return list(dict.fromkeys([*found, Path(value).absolute()]))


def _within_run(value: str, absolute: str | None, root: str | None) -> Path:
    """``value`` relative to its run's folder: as given where relative; an absolute one inside that folder, from it
    (the folder may have moved); else as given."""
    if Path(value).is_absolute() and absolute and root and Path(absolute).is_relative_to(root):
        return Path(absolute).relative_to(root)
    return Path(value)


def find(key: str, value: str, recorded: Mapping, roots: list[Path], fingerprint: str | None, checkpoint) -> str:
    """The first of :func:`candidates` that is there: for the dataset, a folder of the checkpoint's fingerprint (a
    folder of the same name holding another dataset is passed over), for a model a file. Else one error naming
    what was looked for and how to name it instead."""
    is_data = key == "env.data_dir"
    others = []
    for path in candidates(key, value, recorded, roots):
        if not (path.is_dir() if is_data else path.is_file()):
            continue
        if not is_data or fingerprint is None or dataset_id(path) == fingerprint:
            return str(path)
        others.append(f"{path} (fingerprint {dataset_id(path)}: another dataset)")
    raise FileNotFoundError(not_found(key, value, recorded, fingerprint, checkpoint, others))


def not_found(key: str, value: str, recorded: Mapping, fingerprint: str | None, checkpoint, others: list[str]) -> str:
    """The error of a place not found: the checkpoint, the field, the dataset's fingerprint, where it was looked for
    and the fix."""
    what, keyword, option = NAMES[key]
    where = [f"at {recorded['paths'][key]}"] if key in (recorded.get("paths") or {}) else []
    where += [f"in the folder it was trained in ({recorded['root']})"] if recorded.get("root") else []
    where += [f"in every folder above {checkpoint}", f"in the working folder ({os.getcwd()})"]
    which = f"its dataset {fingerprint}" if key == "env.data_dir" and fingerprint else f"its {what}"
    seen = f"; found only {'; '.join(others)}" if others else ""
    same = " (of the same fingerprint: the very files it was trained on)" if key == "env.data_dir" else ""
    return (
        f"{checkpoint}: {which} (model.{key} {value!r}) is not found: looked for it {', '.join(where)}{seen}. Fix: "
        f"run from the folder it was trained in, or name the {what}{same}: {option} (lq eval, lq export), "
        f"lq.load_agent(CHECKPOINT, {keyword}=...)"
    )
