"""What building a ``QuestEnv`` reads from a dataset (:meth:`lq.envs.spec.EnvSpec.build` builds it): the action and
utterance spaces, and the instances of a split with those the partner's calibration reads."""

from __future__ import annotations

from lq.data.dataset import Dataset
from lq.data.demos import Demonstration
from lq.envs.calibration import CALIBRATIONS
from lq.envs.episode import instances_from_data


def demonstration_spaces(demos: list[Demonstration]) -> tuple[list[str], list[str]]:
    """The action space (every demonstration action) and the utterance space (every utterance), in first-seen
    order: 4710 and 22672 on the paper's data."""
    actions = list(dict.fromkeys(a.text for d in demos for a in d.acts if a.type == "action"))
    utterances = list(dict.fromkeys(a.text for d in demos for a in d.acts if a.type == "speech"))
    return actions, utterances


def split_instances(dataset: Dataset, split: str, partner_calibration: str):
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
