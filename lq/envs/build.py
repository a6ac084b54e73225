"""What building a ``QuestEnv`` reads from a dataset (:meth:`lq.envs.spec.EnvSpec.build` builds it): the instances of a
split with those the partner's calibration reads, and where a pretrained encoder's vectors of the spaces are kept."""

from __future__ import annotations

from pathlib import Path

from lq.data.dataset import Dataset
from lq.data.demos import Demonstration, demonstration_spaces
from lq.data.pools import load_pool
from lq.data.quests import Quest
from lq.envs.calibration import CALIBRATIONS
from lq.envs.episode import instances_from_data


def demonstrations_of(dataset: Dataset, split: str, pool: str | None = None) -> tuple[list[Quest], list[Demonstration]]:
    """The quests and the demonstrations of ``split``: the dataset's, and for ``train`` those of the training ``pool``
    (:mod:`lq.data.pools`) after them, where one is given."""
    quests, demos = dataset.quests.all(), list(dataset.demos[split])
    if pool is not None and split == "train":
        extra = load_pool(pool, dataset.root)
        quests, demos = quests + extra.quests, demos + extra.demos
    return quests, demos


def split_instances(dataset: Dataset, split: str, partner_calibration: str, pool: str | None = None):
    """The instances of ``split`` (training: with the ``pool``'s), and the training and held-out ones the partner's
    calibration reads (the dataset's own: the partner is the same whatever the pool)."""
    if partner_calibration not in CALIBRATIONS:
        raise ValueError(f"partner_calibration {partner_calibration!r}: choose {' or '.join(CALIBRATIONS)}")
    quests, demos = dataset.quests.all(), dataset.demos
    instances = instances_from_data(*demonstrations_of(dataset, split, pool))
    train = instances if split == "train" and pool is None else instances_from_data(quests, demos["train"])
    held_out: list = []
    if partner_calibration == "completions":
        held_out = instances if split == "valid" else instances_from_data(quests, demos["valid"])
    return instances, train, held_out


def space_stores(pretrained_checkpoint: str, tokenizer: str, context_length: int, data_dir: str) -> list[Path]:
    """The files a pretrained encoder's vectors of the agents' action and utterance spaces are kept in (beside its
    checkpoint: :class:`lq.models.poly_encoder.CandidateCache`) for an agent reading ``context_length`` word pieces of
    ``tokenizer`` on ``data_dir``, found without encoding anything: the encoder's weights are read and hashed. What an
    agent's build reads (:meth:`lq.lit.agent.AgentModule.space_stores`) and :func:`encode_spaces` writes."""
    from lq.models.poly_encoder import candidates_key, keyed, weights_digest

    pretrained, batcher, stores = _space_inputs(pretrained_checkpoint, tokenizer, context_length, data_dir)
    weights = weights_digest(pretrained)
    return [keyed(store, candidates_key(weights, batcher.candidate_length, texts)) for store, texts in stores]


def encode_spaces(pretrained_checkpoint: str, tokenizer: str, context_length: int, data_dir: str) -> list[Path]:
    """The pretrained encoder's vectors of the agents' action and utterance spaces, encoded and kept in
    :func:`space_stores`' files where they are missing, as an agent's build encodes them
    (:class:`lq.models.agent.CandidateEmbeddings`: the same files, bytes and key), from the encoder and the dataset
    alone: no agent. What the ``spaces`` stage computes; returns the files."""
    from lq.models.poly_encoder import CandidateCache

    pretrained, batcher, stores = _space_inputs(pretrained_checkpoint, tokenizer, context_length, data_dir)
    return [CandidateCache(pretrained, batcher, texts, store=store).store for store, texts in stores]


def _space_inputs(pretrained_checkpoint: str, tokenizer: str, context_length: int, data_dir: str):
    """The pretrained encoder, the agent's :class:`TextBatcher` and each space's store (unkeyed) and texts."""
    from lq.data.dataset import load_dataset
    from lq.envs.models import load_poly_encoder
    from lq.models.agent import SPACES, space_store
    from lq.models.poly_encoder import TextBatcher, stores_beside
    from lq.models.pretrained import load_tokenizer

    pretrained = load_poly_encoder(pretrained_checkpoint, dataset=data_dir)[0]
    batcher = TextBatcher(load_tokenizer(tokenizer), context_length)
    folder = stores_beside(pretrained_checkpoint)
    spaces = demonstration_spaces(load_dataset(data_dir).demos.all())
    stores = [space_store(folder, space) for space in SPACES]
    return pretrained, batcher, list(zip(stores, spaces, strict=True))
