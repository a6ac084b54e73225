"""What building a ``QuestEnv`` reads from a dataset (:meth:`lq.envs.spec.EnvSpec.build` builds it): the instances of a
split with those the partner's calibration reads, and where a pretrained encoder's vectors of the spaces are kept."""

from __future__ import annotations

from pathlib import Path

from lq.data.dataset import Dataset
from lq.data.demos import demonstration_spaces
from lq.envs.calibration import CALIBRATIONS
from lq.envs.episode import instances_from_data


def split_instances(dataset: Dataset, split: str, partner_calibration: str):
    """The instances of ``split``, and the training and held-out ones the partner's calibration reads (in a training
    pool the scale's own training demonstrations, :meth:`Dataset.reference`: the partner is the same whatever the
    pool)."""
    if partner_calibration not in CALIBRATIONS:
        raise ValueError(f"partner_calibration {partner_calibration!r}: choose {' or '.join(CALIBRATIONS)}")
    quests, demos = dataset.quests.all(), dataset.demos
    instances = instances_from_data(quests, demos[split])
    reference = dataset.reference("train")
    whole = split == "train" and len(reference) == len(demos["train"])
    train = instances if whole else instances_from_data(quests, reference)
    held_out: list = []
    if partner_calibration == "completions":
        held_out = instances if split == "valid" else instances_from_data(quests, demos["valid"])
    return instances, train, held_out


def space_stores(pretrained_checkpoint: str, tokenizer: str, context_length: int, data_dir: str) -> list[Path]:
    """The files a pretrained encoder's vectors of the agents' action and utterance spaces are kept in (beside its
    checkpoint: :class:`lq.models.poly_encoder.CandidateCache`) for an agent reading ``context_length`` word pieces of
    ``tokenizer`` on ``data_dir``, found without encoding anything: the encoder's weights are read and hashed. What an
    agent's build reads (:meth:`lq.lit.agent.AgentModule.space_stores`) and the ``spaces`` stage writes."""
    from lq.data.dataset import load_dataset
    from lq.envs.models import load_poly_encoder
    from lq.models.poly_encoder import TextBatcher, candidates_key, keyed, stores_beside, weights_digest
    from lq.models.pretrained import load_tokenizer

    pretrained = load_poly_encoder(pretrained_checkpoint, dataset=data_dir)[0]
    length = TextBatcher(load_tokenizer(tokenizer), context_length).candidate_length
    spaces = demonstration_spaces(load_dataset(data_dir).space_demonstrations())
    folder, weights = stores_beside(pretrained_checkpoint), weights_digest(pretrained)
    return [
        keyed(folder / f"agent-{name}.pt", candidates_key(weights, length, texts))
        for name, texts in zip(("actions", "utterances"), spaces, strict=True)
    ]
