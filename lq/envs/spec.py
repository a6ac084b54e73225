"""The environment an agent trains and is evaluated in, as one value: :class:`EnvSpec`.

Its fields are written once, here: the dataset, the partner's and the Dungeon Master's checkpoints, the protocol, the
word pieces those two read, the partner's calibration, what the agent's context lists, the rewards and the DM's ranking.
``spec.build(split, batch_size, seed, device)`` makes the batched :class:`lq.envs.quest_env.QuestEnv`; the agent modules
hold one (``model.env`` in their configs), and ``lq.api``, Gymnasium and the stages build environments through it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from lq.envs.protocol import Protocol, protocol_of

if TYPE_CHECKING:
    from lq.envs.quest_env import QuestEnv


@dataclass(frozen=True)
class EnvSpec:
    """``data_dir``: the dataset (its quests, demonstrations and action and utterance spaces); ``partner_checkpoint``,
    ``dm_checkpoint``: the frozen poly-encoders of the partner and the Dungeon Master; ``protocol``
    (:class:`lq.envs.protocol.Protocol`, or its name or dict): what the agent chooses among, when an episode ends, the
    speech goal; ``context_length``: the word pieces the partner and the DM read (the length they were trained at);
    ``partner_calibration``: how the partner chooses between acting and speaking (``share`` or ``completions``:
    :func:`lq.envs.calibration.calibrate_partner`); ``objects``: the agent's context lists the room's objects and what
    the partner carries; ``speech_rewards``: a reached speech goal is rewarded (Table 2's ``speech_no_speech_goals``
    turns it off); ``top_k``, ``num_valid_utterances``: the DM's rewarded and valid utterances (paper 4.2: k = 10, M =
    50); ``top_k_every_repeat``: the DM's top-k reward on every repeat of a line, not only its first;
    ``scene_filter``: the partner says, and the DM ranks first, only utterances naming no character or place absent
    from the scene (:class:`lq.envs.scene.SceneFilter`; an option, off by default: docs/agents.md); ``pool``: a
    training pool of the dataset (:mod:`lq.data.pools`) whose quests the training split plays beside the dataset's
    own (every other split, the spaces and the partner's calibration are the dataset's).

    The defaults are those of a spec that names nothing else: one built in code (``lq.api.build_env``) and a
    checkpoint saved before a field existed (:func:`nested`: its environment was built so). The agents are trained and
    evaluated in :data:`AGENTS_ENVIRONMENT` over them: ``conf/agent.yaml`` (the stage CLIs) states those values, and
    the Gymnasium entry (``lq/Quest-v0``) reads them from here."""

    data_dir: str
    partner_checkpoint: str
    dm_checkpoint: str
    protocol: Protocol = Protocol()  # noqa: RUF009 (frozen dataclass)
    context_length: int = 256
    partner_calibration: str = "share"
    objects: bool = False
    speech_rewards: bool = True
    top_k: int = 10
    num_valid_utterances: int = 50
    top_k_every_repeat: bool = False
    scene_filter: bool = False
    pool: str | None = None

    def __post_init__(self) -> None:
        for name in ("data_dir", "partner_checkpoint", "dm_checkpoint"):
            object.__setattr__(self, name, str(getattr(self, name)))
        object.__setattr__(self, "protocol", protocol_of(self.protocol))
        if self.pool is not None:
            object.__setattr__(self, "pool", str(self.pool))

    @classmethod
    def of(cls, value: EnvSpec | dict) -> EnvSpec:
        """An :class:`EnvSpec` from itself or from its dict (as a checkpoint's hyperparameters keep it), naming any
        unknown field and the known ones."""
        if isinstance(value, EnvSpec):
            return value
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise ValueError(f"model.env: unknown field {', '.join(unknown)}; the fields are {', '.join(known)}")
        missing = [k for k in ("data_dir", "partner_checkpoint", "dm_checkpoint") if value.get(k) is None]
        if missing:
            raise ValueError(f"model.env: {', '.join(missing)} missing; set model.env.{missing[0]}")
        return cls(**value)

    def as_dict(self) -> dict:
        """Plain values (the protocol as its dict): a checkpoint keeps it without lq's classes."""
        return asdict(self)

    def replace(self, **changes) -> EnvSpec:
        return replace(self, **changes)

    def check_lengths(self) -> None:
        """Refuse a ``context_length`` the partner or the DM has too few positions for, in one line, before anything
        loads (read late, it would fail deep in the model: an index error in its position embeddings)."""
        from lq.envs.models import too_long_for

        found = too_long_for(self.context_length, {"partner": self.partner_checkpoint, "dm": self.dm_checkpoint})
        if found is not None:
            limit, who = found
            raise ValueError(
                f"context_length {self.context_length} exceeds the {limit} positions of {who}: give context_length "
                f"{limit} or less (the length they were trained at, at most)"
            )

    def build(self, split: str = "test", batch_size: int = 32, seed: int = 0, device: str = "cpu", **play) -> QuestEnv:
        """The batched environment of ``split``'s quests: ``batch_size`` episodes at a time, seeded by ``seed``, its
        models on ``device``; ``play``: ``max_steps`` (agent turns per episode in place of the protocol's),
        ``auto_reset`` (a finished episode starts the next quest, as in training; False: its slot stays finished, as
        in evaluation), ``sampler`` (how the next quest is drawn; None: uniformly). The partner's choice between acting
        and speaking is calibrated on the demonstrations (:func:`lq.envs.calibration.calibrate_partner`, kept beside
        its checkpoint): ``partner_calibration="share"`` makes it act on the training demonstrations' share of partner
        turns, ``"completions"`` on the share at which it completes as many of the validation demonstrations' goals as
        their partners did."""
        # the models, the engine and the data load only when an environment is built (``import lq`` stays light)
        from lq.data.dataset import load_dataset
        from lq.data.demos import demonstration_spaces
        from lq.envs.build import split_instances
        from lq.envs.calibration import calibrate_partner
        from lq.envs.dungeon_master import DungeonMaster
        from lq.envs.models import load_poly_encoder
        from lq.envs.partner import PolyEncoderPartner
        from lq.envs.quest_env import QuestEnv
        from lq.models.poly_encoder import TextBatcher, stores_beside
        from lq.models.pretrained import load_tokenizer

        self.check_lengths()
        dataset = load_dataset(self.data_dir)
        actions, utterances = demonstration_spaces(dataset.demos.all())
        partner_model, partner_spec = load_poly_encoder(self.partner_checkpoint, device, self.data_dir)
        dm_model, dm_spec = load_poly_encoder(self.dm_checkpoint, device, self.data_dir)
        partner = PolyEncoderPartner(
            partner_model,
            TextBatcher(load_tokenizer(partner_spec.tokenizer), self.context_length),
            utterances,
            actions,
            store_dir=stores_beside(self.partner_checkpoint),
        )
        dm = DungeonMaster(
            dm_model,
            TextBatcher(load_tokenizer(dm_spec.tokenizer), self.context_length),
            utterances,
            top_k=self.top_k,
            num_valid=self.num_valid_utterances,
            store=stores_beside(self.dm_checkpoint) / "dm-utterances.pt",
        )
        instances, train, held_out = split_instances(dataset, split, self.partner_calibration, self.pool)
        calibrate_partner(partner, dm, train, actions, self.partner_checkpoint, held_out)
        if self.scene_filter:  # after the calibration, which is the unfiltered partner's (it decides acting alone)
            from lq.envs.scene import SceneFilter, names_of, rooms_by_desc

            quests = dataset.quests.all()
            partner.scene_filter = dm.scene_filter = SceneFilter(names_of(quests), utterances, rooms_by_desc(quests))
        return QuestEnv(
            instances,
            partner,
            dm,
            actions,
            batch_size=batch_size,
            protocol=self.protocol,
            seed=seed,
            top_k_every_repeat=self.top_k_every_repeat,
            speech_rewards=self.speech_rewards,
            objects=self.objects,
            **play,
        )

    def model_digests(self) -> dict[str, str]:
        """Which partner and DM this environment plays: their weights' digests
        (:func:`lq.envs.models.checkpoint_digest`, its first 16 hex digits),
        whatever the paths of their checkpoints. Two runs with the same digests played the same environment models."""
        from lq.envs.models import checkpoint_digest

        models = {"partner": self.partner_checkpoint, "dm": self.dm_checkpoint}
        return {name: checkpoint_digest(path)[:16] for name, path in models.items()}

    def calibration_file(self) -> Path:
        """The file :meth:`build` keeps the partner's calibration of these models, data and settings in (it exists
        once calibrated), found without encoding or fitting anything: the models' weights are read and hashed."""
        from lq.data.dataset import load_dataset
        from lq.data.demos import demonstration_spaces
        from lq.envs.build import split_instances
        from lq.envs.calibration import calibration_key, calibration_store
        from lq.envs.models import load_poly_encoder
        from lq.models.poly_encoder import TextBatcher, candidates_key, weights_digest
        from lq.models.pretrained import load_tokenizer

        dataset = load_dataset(self.data_dir)
        actions, utterances = demonstration_spaces(dataset.demos.all())
        keys = []
        for checkpoint, texts in (
            (self.partner_checkpoint, (utterances, actions)),
            (self.dm_checkpoint, (utterances,)),
        ):
            model, model_spec = load_poly_encoder(checkpoint, "cpu", self.data_dir)
            length = TextBatcher(load_tokenizer(model_spec.tokenizer), self.context_length).candidate_length
            keys += [candidates_key(weights_digest(model), length, t) for t in texts]
        _, train, held_out = split_instances(dataset, "valid", self.partner_calibration)
        key = calibration_key(self.context_length, keys, train, held_out)
        return calibration_store(self.partner_checkpoint, bool(held_out), key)


# the environment the agents are trained and evaluated in, over EnvSpec's defaults: the partner calibrated on the
# demonstrations' completions, the room's objects in the context. conf/agent.yaml states the same values (model.env:
# tests/envs/test_spec.py holds them equal); lq/Quest-v0 takes them where its caller sets none (lq.envs.gym).
AGENTS_ENVIRONMENT = {"partner_calibration": "completions", "objects": True}


# an agent's hyperparameters from before EnvSpec held these at the top level (``context_objects``: ``objects``;
# ``env_context_length``: ``context_length``, None meaning the agent's own)
FLAT = {
    "data_dir": "data_dir",
    "partner_checkpoint": "partner_checkpoint",
    "dm_checkpoint": "dm_checkpoint",
    "protocol": "protocol",
    "env_context_length": "context_length",
    "partner_calibration": "partner_calibration",
    "context_objects": "objects",
    "top_k_every_repeat": "top_k_every_repeat",
}


def nested(hparams: dict) -> dict:
    """An agent's saved hyperparameters with their environment as one ``env`` dict: those of checkpoints and bundles
    from before :class:`EnvSpec` kept its fields at the top level; returned as they are when already nested."""
    if "env" in hparams:
        return hparams
    out = {k: v for k, v in hparams.items() if k not in FLAT and k != "restrict"}  # restrict: now the protocol's
    env = {FLAT[k]: v for k, v in hparams.items() if k in FLAT}
    if env.get("context_length") is None:  # the agent's own length, as before env_context_length
        env["context_length"] = hparams.get("context_length", 256)
    env["protocol"] = protocol_of(env.get("protocol")).as_dict()  # none saved: from before protocols, restricted
    return {**out, "env": env}


def overridden(hparams: dict, overrides: dict) -> dict:
    """An agent's saved hyperparameters (nested: :func:`nested`) with ``overrides`` put in place, those of its
    environment given by their top-level names as before :class:`EnvSpec` (``protocol``, ``data_dir``,
    ``partner_checkpoint``, ``context_objects`` ...: :data:`FLAT`) into its ``env``."""
    h = nested(hparams)
    env = dict(h["env"])
    for key, value in overrides.items():
        if key in FLAT:
            env[FLAT[key]] = protocol_of(value).as_dict() if key == "protocol" else value
        else:
            h[key] = value
    return {**h, "env": env}
