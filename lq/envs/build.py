"""Building the ``QuestEnv`` an :class:`lq.envs.spec.EnvSpec` describes: its dataset folder, the partner's and DM's
checkpoints and the rest of its settings."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from lq.data.dataset import Dataset, load_dataset
from lq.data.demos import Demonstration
from lq.envs.calibration import CALIBRATIONS, calibrate_partner, calibration_key, calibration_store
from lq.envs.dungeon_master import DungeonMaster
from lq.envs.episode import instances_from_data
from lq.envs.models import load_poly_encoder
from lq.envs.partner import PolyEncoderPartner
from lq.envs.quest_env import QuestEnv
from lq.envs.spec import EnvSpec
from lq.models.poly_encoder import TextBatcher, candidates_key, stores_beside, weights_digest
from lq.models.pretrained import load_tokenizer


def demonstration_spaces(demos: list[Demonstration]) -> tuple[list[str], list[str]]:
    """The action space (every demonstration action) and the utterance space (every utterance), in first-seen
    order: 4710 and 22672 on the paper's data."""
    actions = list(dict.fromkeys(a.text for d in demos for a in d.acts if a.type == "action"))
    utterances = list(dict.fromkeys(a.text for d in demos for a in d.acts if a.type == "speech"))
    return actions, utterances


def _demonstrations(dataset: Dataset, split: str, partner_calibration: str):
    """The instances of ``split``, and the training and held-out ones the partner's calibration reads."""
    if partner_calibration not in CALIBRATIONS:
        raise ValueError(f"partner_calibration {partner_calibration!r}: choose {' or '.join(CALIBRATIONS)}")
    quests, demos = dataset.quests.all(), dataset.demos
    instances = instances_from_data(quests, demos[split])
    train = instances if split == "train" else instances_from_data(quests, demos["train"])
    held_out: list = []
    if partner_calibration == "completions":
        held_out = instances if split == "valid" else instances_from_data(quests, demos["valid"])
    return instances, train, held_out


def calibration_file(spec: EnvSpec) -> Path:
    """The file :func:`build_env` keeps the partner's calibration of ``spec``'s models, data and settings in (it
    exists once calibrated), found without encoding or fitting anything: the models' weights are read and hashed."""
    dataset = load_dataset(spec.data_dir)
    actions, utterances = demonstration_spaces(dataset.demos.all())
    keys = []
    for checkpoint, texts in ((spec.partner_checkpoint, (utterances, actions)), (spec.dm_checkpoint, (utterances,))):
        model, model_spec = load_poly_encoder(checkpoint, "cpu", spec.data_dir)
        length = TextBatcher(load_tokenizer(model_spec.tokenizer), spec.context_length).candidate_length
        weights = weights_digest(model)
        keys += [candidates_key(weights, length, t) for t in texts]
    _, train, held_out = _demonstrations(dataset, "valid", spec.partner_calibration)
    key = calibration_key(spec.context_length, keys, train, held_out)
    return calibration_store(spec.partner_checkpoint, bool(held_out), key)


def build_env(
    spec: EnvSpec,
    split: str = "test",
    batch_size: int = 32,
    seed: int = 0,
    device: str = "cpu",
    *,
    max_steps: int | None = None,
    auto_reset: bool = True,
    sampler: Callable[[random.Random], int] | None = None,
) -> QuestEnv:
    """The environment ``spec`` describes, over ``split``'s quests (:meth:`EnvSpec.build`, which calls this). The
    partner's choice between acting and speaking is calibrated on the demonstrations
    (:func:`lq.envs.calibration.calibrate_partner`, kept beside its checkpoint): ``spec.partner_calibration="share"``
    makes it act on the training demonstrations' share of partner turns, ``"completions"`` on the share at which it
    completes as many of the validation demonstrations' goals as their partners did."""
    dataset = load_dataset(spec.data_dir)
    actions, utterances = demonstration_spaces(dataset.demos.all())
    partner_model, partner_spec = load_poly_encoder(spec.partner_checkpoint, device, spec.data_dir)
    dm_model, dm_spec = load_poly_encoder(spec.dm_checkpoint, device, spec.data_dir)
    partner = PolyEncoderPartner(
        partner_model,
        TextBatcher(load_tokenizer(partner_spec.tokenizer), spec.context_length),
        utterances,
        actions,
        store_dir=stores_beside(spec.partner_checkpoint),
    )
    dm = DungeonMaster(
        dm_model,
        TextBatcher(load_tokenizer(dm_spec.tokenizer), spec.context_length),
        utterances,
        top_k=spec.top_k,
        num_valid=spec.num_valid_utterances,
        store=stores_beside(spec.dm_checkpoint) / "dm-utterances.pt",
    )
    instances, train, held_out = _demonstrations(dataset, split, spec.partner_calibration)
    calibrate_partner(partner, dm, train, actions, spec.partner_checkpoint, held_out)
    return QuestEnv(
        instances,
        partner,
        dm,
        actions,
        batch_size=batch_size,
        max_steps=max_steps,
        protocol=spec.protocol,
        sampler=sampler,
        auto_reset=auto_reset,
        seed=seed,
        top_k_every_repeat=spec.top_k_every_repeat,
        speech_rewards=spec.speech_rewards,
        objects=spec.objects,
    )
