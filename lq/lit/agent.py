"""What behaviour cloning and RL share: the switch agent, its actor and its evaluation environment.

:class:`AgentModule` builds the agent over the dataset's action and utterance spaces (every action and
utterance of the demonstrations), on a frozen pretrained encoder or from scratch; it is evaluated zero-shot by
:mod:`lq.eval.agents`, with the same code for both stages. :mod:`lq.lit.checkpoints` reopens either stage's
checkpoints (``lq eval``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.loggers import MLFlowLogger

from lq.data.context import HEADER_TAGS, HISTORY_TAGS
from lq.data.dataset import dataset_id, load_dataset
from lq.data.demos import demonstration_spaces
from lq.data.io import json_strings
from lq.data.outputs import DONE, TRAINED, trained
from lq.data.pools import load_pool
from lq.envs.build import demonstrations_of, space_stores
from lq.envs.episode import instances_from_data
from lq.envs.models import load_poly_encoder
from lq.envs.protocol import Protocol
from lq.envs.replay import demonstration_turns
from lq.envs.spec import EnvSpec, nested
from lq.eval import EvalResult, evaluate_agent
from lq.lit.places import recorded_places
from lq.models.agent import AgentConfig, SwitchAgent
from lq.models.encoder import EncoderConfig, EncoderSpec, Vocabulary, encoder_tokenizer
from lq.models.poly_encoder import TextBatcher, stores_beside
from lq.models.pretrained import load_tokenizer
from lq.rl.acting import ABILITIES, Actor, CandidateScorer, choice_mask, valid_mask
from lq.rl.losses import masked
from lq.rl.switch import SWITCHES, HardcodedSwitch, RatioSwitch
from lq.stages.configs import SAME_AGENT, differences

SCRATCH = EncoderConfig(name="scratch")


def agent_config(value: AgentConfig | dict) -> AgentConfig:
    """An :class:`AgentConfig` from itself or from its dict (as stored in a checkpoint's hyperparameters)."""
    if isinstance(value, AgentConfig):
        return value
    value = dict(value)
    if isinstance(value.get("scratch"), dict):
        value["scratch"] = EncoderSpec(**value["scratch"])
    return AgentConfig(**value)


def readable_texts(data_dir: str | Path, pool: str | None = None) -> set[str]:
    """Every text an agent can be shown on ``data_dir`` (and its training ``pool``, :mod:`lq.data.pools`): the strings
    of its quests (settings, characters, objects, motivations) and demonstrations (actions, utterances), and the
    context tags."""
    dataset = load_dataset(data_dir)
    quests, demos = dataset.quests.all(), dataset.demos.all()
    if pool is not None:
        extra = load_pool(pool, data_dir)
        quests, demos = quests + extra.quests, demos + extra.demos
    texts = {*HEADER_TAGS, *HISTORY_TAGS}
    for quest in quests:
        data = quest.to_json()["data"]
        if quest.graph is not None:  # its strings, not the JSON text a stem may hold it as
            data["graph"] = quest.graph.to_json()
        texts.update(json_strings(data))
    for demo in demos:
        texts.update(json_strings(demo.to_json()))
    return texts


def read_checkpoint(checkpoint: str | Path) -> dict:
    try:
        return torch.load(checkpoint, map_location="cpu", weights_only=False)
    except (FileNotFoundError, IsADirectoryError):
        raise FileNotFoundError(
            f"{checkpoint}: no such checkpoint or agent bundle; train one first (make bc, make rl)"
        ) from None


WORLDS = ("data_dir", "partner_checkpoint", "dm_checkpoint")  # model.worlds: the unseen worlds' dataset and models


def hparams_at(hparams: Mapping, keys: Sequence[str]) -> dict:
    """The values of ``keys`` in an agent's hyperparameters (``env.FIELD``: its environment's), those of checkpoints
    from before :class:`EnvSpec` read as if nested (:func:`lq.envs.spec.nested`), and an ``agent`` saved before a
    field of :class:`AgentConfig` was added read with that field's default (what it was built with)."""
    h = nested(dict(hparams))
    if isinstance(agent := h.get("agent"), Mapping):
        added = {f.name: f.default for f in fields(AgentConfig) if f.default is not MISSING and f.name not in agent}
        h["agent"] = {**agent, **added}
    env = h.get("env") or {}
    return {k: env.get(k.removeprefix("env.")) if k.startswith("env.") else h.get(k) for k in keys}


def start_differences(theirs: Mapping, ours: Mapping, keys: Sequence[str] = SAME_AGENT) -> dict[str, object]:
    """Where an agent's hyperparameters ``theirs`` differ from those of an agent ``ours`` that would start from it, at
    ``keys``: their values. An agent without head temperatures is the agent with both at 1, so one that learns them
    starts from it as it is."""
    return differences(hparams_at(theirs, keys), hparams_at(ours, keys), keys)


# a scratch encoder's embedding rows (the word-piece ids they stand for) in an agent module's state dict
VOCABULARY = "agent.encoder.vocabulary.ids"


# the demonstrations of each split an agent run reads teacher-forced when it is evaluated (the default data's
# validation split has 60): how much of what it imitates is memorised, at a fixed cost (demonstration_metrics)
TEMPERATURES = "agent.head_log_temperature"  # the state-dict key of the heads' temperatures
DEMONSTRATIONS_READ = 60


def start_checkpoint(init_from: str | None, bc_checkpoint: str | None) -> str | None:
    """The checkpoint RL's ``init_from`` names: ``bc`` stands for ``bc_checkpoint`` (the BC agent of the run's
    configuration and seed, which its resolved config names), which must have finished its training."""
    if init_from != "bc":
        return init_from
    if not bc_checkpoint:
        raise ValueError(
            "model.init_from: bc starts from the BC agent of this run's configuration and seed, but "
            "model.bc_checkpoint is not set: run it through `lq stage rl` or `make rl` (its resolved config "
            "names that agent), name it (--model.bc_checkpoint PATH) or another checkpoint (--model.init_from "
            "PATH), or start from the encoder (--model.init_from null, the paper's)"
        )
    if Path(bc_checkpoint).is_file() and not trained(bc_checkpoint):
        raise ValueError(
            f"model.init_from: bc: the BC agent {bc_checkpoint} is a run's that did not finish its training "
            f"(killed or interrupted: neither {DONE} nor {TRAINED} beside it); train it again (make bc, lq stage "
            "bc) before RL starts from it"
        )
    return bc_checkpoint


@dataclass
class Episode:
    """A demonstration's self turns as the agent is trained on them (behaviour cloning, RL's imitation term)."""

    contexts: list[str]
    acted: list[bool]
    targets: list[int]  # into the action space where acted, else into the utterance space
    valid_action_ids: list[list[int]]


class AgentModule(L.LightningModule):
    """Base of :class:`lq.lit.bc.BCModule` and :class:`lq.lit.rl.RLModule`, which add their own hyperparameters and
    pass these on (``**kwargs``; LightningCLI and ``save_hyperparameters`` see both).

    The hyperparameters every agent has: ``env`` (:class:`lq.envs.spec.EnvSpec`: the dataset, the partner and DM, the
    protocol the agent is trained and evaluated under, the partner's calibration, what the context lists; ``model.env``
    in the configs), ``encoder`` / ``pretrained_checkpoint`` (the frozen encoder; none for scratch), ``switch`` and
    ``switch_every``, ``ability``, ``lr`` (Adam's learning rate, no default here: conf/agent.yaml, the profiles and the
    objectives set it), ``context_length`` (the agent's word pieces), ``candidate_dim``, ``agent``
    (Table 6 sizes), ``eval_max_steps`` (None: the protocol's), ``eval_batch_size``, ``seed``; ``worlds``: another
    dataset whose test quests every zero-shot evaluation also plays (``data_dir``, ``partner_checkpoint``,
    ``dm_checkpoint``: :meth:`on_worlds`; e.g. quests generated from the LIGHT DB, worlds the agent never saw).
    """

    stage = "agent"

    def __init__(
        self,
        env: EnvSpec,
        lr: float,
        encoder: EncoderConfig = SCRATCH,
        pretrained_checkpoint: str | None = None,
        switch: str = "hardcoded",
        switch_every: int = 3,
        ability: str = "act_speech",
        context_length: int = 256,
        candidate_dim: int = 256,
        agent: AgentConfig = AgentConfig(),  # noqa: B008 (a dataclass default, never mutated)
        eval_max_steps: int | None = None,
        eval_batch_size: int = 32,
        seed: int = 0,
        worlds: dict[str, str] | None = None,
    ):
        super().__init__()
        if worlds is not None and set(worlds) != set(WORLDS):
            raise ValueError(f"model.worlds: give {', '.join(WORLDS)} (the dataset and its partner and DM), not "
                             f"{', '.join(sorted(worlds))}")  # fmt: skip
        self.check_choices(switch, ability)
        # the subclass's own arguments too: the frames of every __init__ on the way here are read
        self.save_hyperparameters(ignore=["encoder", "agent", "coefficients", "env"])
        self.store_configs(encoder, agent)
        self.env_spec = EnvSpec.of(env)
        self.hparams["env"] = self.env_spec.as_dict()
        self.agent = None

    @property
    def protocol(self) -> Protocol:
        """The protocol the agent is trained and evaluated under (its environment's)."""
        return self.env_spec.protocol

    @property
    def encoder_name(self) -> str:
        """What the agent reads with, as its rows and model card name it: its encoder config's name."""
        return self.hparams.encoder["name"]

    @property
    def data_dir(self) -> str:
        """The dataset the agent's spaces and its environment's quests come from."""
        return self.env_spec.data_dir

    def on_worlds(
        self, data_dir: str | Path, partner_checkpoint: str | Path, dm_checkpoint: str | Path, networks: bool = True
    ) -> AgentModule:
        """This agent playing another dataset's quests (e.g. quests generated from the LIGHT environment DB: worlds,
        characters and objects it never saw), against that dataset's action and utterance spaces, with that dataset's
        partner and Dungeon Master (trained on its own training split, as every dataset's environment is): the same
        learned weights and word pieces (a word it never read is the unknown piece), the spaces' own candidate rows
        (:meth:`lq.models.agent.SwitchAgent.space_state`). A copy in eval mode; this one is left as it is. Without
        ``networks``, the copy has only that dataset's spaces and the agent's switch (:meth:`build_spaces`: what the
        baselines play there), and neither agent builds its networks."""
        if networks:
            self.build_agent()
        h = {k: v for k, v in self.hparams.items() if not k.startswith("_")}  # LightningCLI's own
        env = {**self.env_spec.as_dict(), "data_dir": str(data_dir), "partner_checkpoint": str(partner_checkpoint),
               "dm_checkpoint": str(dm_checkpoint), "pool": None}  # fmt: skip
        other = type(self)(**{**h, "env": env, "worlds": None})
        other._trained_on = self.trained_on
        if not networks:
            other.build_spaces()
            return other.eval()
        vocabulary = getattr(self.agent.encoder, "vocabulary", None)
        other.build_agent(vocabulary.ids if vocabulary is not None else None, whole_vocabulary=vocabulary is None)
        own = {f"agent.{k}": v for k, v in other.agent.space_state().items()}
        other.load_state_dict({k: own.get(k, v) for k, v in self.state_dict().items()})
        return other.eval()

    def check_worlds(self) -> None:
        """Refuse, before training, ``worlds`` whose dataset or models are missing (found late, they would fail the
        first evaluation, after the training it follows)."""
        worlds = self.hparams.get("worlds") or {}
        missing = [f"{key} {value}" for key, value in worlds.items() if not Path(value).exists()]
        if missing:
            raise FileNotFoundError(
                f"model.worlds: {', '.join(missing)} not found; generate the worlds and train their partner and DM "
                "(lq stage or make ablations EXPERIMENTS=generalisation prepares them), or leave model.worlds out"
            )

    def worlds_agent(self, networks: bool = True) -> AgentModule | None:
        """:meth:`on_worlds` of ``worlds``, where set (what :func:`lq.eval.agents.zero_shot` plays as ``worlds``)."""
        return self.on_worlds(**self.hparams.worlds, networks=networks) if self.hparams.get("worlds") else None

    @property
    def trained_on(self) -> str:
        """The dataset the agent was trained on: its encoder's, where it plays another's quests
        (:meth:`on_worlds`); else :attr:`data_dir`."""
        return getattr(self, "_trained_on", None) or self.data_dir

    @property
    def run_device(self) -> torch.device:
        """Where the module runs: its trainer's device (Lightning moves the module there only after ``setup``, so
        what ``setup`` builds outside the parameters, the environment's partner and DM, goes there at once), else
        where it is."""
        return self.trainer.strategy.root_device if self._trainer is not None else self.device

    def check_choices(self, switch: str, ability: str) -> None:
        if ability not in ABILITIES:
            raise ValueError(f"unknown ability '{ability}': choose from {', '.join(ABILITIES)}")
        if switch not in SWITCHES:
            raise ValueError(f"unknown switch '{switch}': choose {' or '.join(SWITCHES)}")

    def store_configs(self, encoder: EncoderConfig | dict, agent: AgentConfig | dict) -> None:
        """Keep the nested configs as plain dicts in the hyperparameters (checkpoints load without lq's classes)."""
        self.hparams["encoder"] = asdict(encoder) if not isinstance(encoder, dict) else encoder
        self.agent_config = agent_config(agent)
        self.hparams["agent"] = asdict(self.agent_config)

    def build_agent(self, vocabulary: torch.Tensor | None = None, whole_vocabulary: bool = False) -> None:
        """The agent, its tokenizer and its actor over the dataset's spaces (idempotent). A scratch encoder has
        embedding rows for the word pieces of :func:`readable_texts`, or for ``vocabulary`` (the ids a checkpoint
        saved), or with ``whole_vocabulary`` for the whole tokenizer's (checkpoints from before the compact one)."""
        if getattr(self, "agent", None) is not None:
            return
        h = self.hparams
        self.build_spaces()
        pretrained = (
            load_poly_encoder(h.pretrained_checkpoint, dataset=self.trained_on)[0] if h.pretrained_checkpoint else None
        )
        tokenizer = self.batcher.tokenizer
        pieces = None
        if pretrained is None and not whole_vocabulary:
            pieces = (
                Vocabulary(vocabulary, tokenizer.unk_token_id)
                if vocabulary is not None
                else Vocabulary.of_texts(readable_texts(self.data_dir, self.env_spec.pool), tokenizer)
            )
        self.agent = SwitchAgent.build(
            self.action_space,
            self.utterance_space,
            self.batcher,
            pretrained,
            self.agent_config,
            dim=h.candidate_dim,
            vocabulary=pieces,
            store_dir=stores_beside(h.pretrained_checkpoint) if pretrained is not None else None,
        )
        self.actor = self.make_actor()

    def start_from(self, checkpoint: str) -> None:
        """RL's ``init_from``: build the agent with ``checkpoint``'s weights (its critic too, where that agent trained
        one). ``{seed}`` in the path stands for this run's seed, so that one argument starts every seed of ``make rl``
        from the BC agent of the same seed (``outputs/bc/scratch/act_speech-hardcoded/seed-{seed}/best.ckpt``)."""
        checkpoint = str(checkpoint).replace("{seed}", str(self.hparams.seed))
        try:
            saved = read_checkpoint(checkpoint)
        except FileNotFoundError as e:
            raise FileNotFoundError(f"model.init_from: {e}") from None
        theirs = saved.get("hyper_parameters", {})
        if saved.get("lq_stage") not in ("bc", "rl"):
            raise ValueError(f"model.init_from: {checkpoint} is not an lq agent checkpoint (from lq bc or lq rl)")
        differ = start_differences(theirs, self.hparams)
        if differ:
            raise ValueError(
                f"model.init_from: {checkpoint} is an agent of another {', '.join(differ)} "
                f"({', '.join(f'{k}={v!r}' for k, v in differ.items())}); start from one trained with this run's"
            )
        state = saved["state_dict"]
        self.build_agent(state.get(VOCABULARY))
        if self.agent_config.head_temperature and TEMPERATURES not in state:  # at the agent's start: the agent it was
            state = {**state, TEMPERATURES: self.state_dict()[TEMPERATURES]}
        self.load_state_dict(state)

    def gains(self) -> dict[str, float]:
        """The agent's scalar gains as they stand: the exact-match weight and, where learned, each head's
        temperature (their curves say whether their own learning rate lets them move)."""
        out = {}
        if (weight := getattr(self.agent, "speech_match_weight", None)) is not None:
            out["speech_match_weight"] = weight.item()
        if (log_t := getattr(self.agent, "head_log_temperature", None)) is not None:
            out["action_temperature"], out["speech_temperature"] = log_t.exp().tolist()
        return out

    def build_spaces(self) -> None:
        """What the agent plays through besides its networks (idempotent): the dataset's demonstrations, its action
        and utterance spaces, the agent's tokenizer and context length (:class:`TextBatcher`) and its switch. All the
        baselines' rules need (:meth:`make_actor` with a ``policy``)."""
        if getattr(self, "switch", None) is not None:
            return
        h = self.hparams
        self.demos = load_dataset(self.data_dir).demos
        self.action_space, self.utterance_space = demonstration_spaces(self.demos.all())
        self.batcher = TextBatcher(load_tokenizer(encoder_tokenizer(h.encoder)), h.context_length)
        self.switch = HardcodedSwitch(h.switch_every) if h.switch == "hardcoded" else RatioSwitch(self.demos.train)

    def space_stores(self) -> list[Path]:
        """The files :meth:`build_agent` keeps a pretrained encoder's vectors of the action and utterance spaces in
        (:func:`lq.envs.build.space_stores`), found without encoding anything; none for scratch."""
        h = self.hparams
        if not h.pretrained_checkpoint:
            return []
        return space_stores(h.pretrained_checkpoint, encoder_tokenizer(h.encoder), h.context_length, self.data_dir)

    def make_actor(
        self, temperature: float = 1.0, policy: str | CandidateScorer | None = None, restrict: bool | None = None
    ) -> Actor:
        """The agent's actor, or with ``policy`` (a rule, "random" or "overlap", or a language model:
        :class:`lq.rl.acting.CandidateScorer`) another policy with the same switch and spaces; ``restrict`` overrides
        the protocol's choice among the valid candidates. Another policy's actor needs no network
        (:meth:`build_spaces`); the agent's builds the agent (:meth:`build_agent`)."""
        if policy:
            self.build_spaces()
        else:
            self.build_agent()
        h = self.hparams
        return Actor(
            policy or self.agent,
            self.batcher,
            self.action_space,
            self.utterance_space,
            self.switch,
            h.ability,
            temperature,
            restrict=self.protocol.restrict if restrict is None else restrict,
        )

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint["lq_stage"] = self.stage
        checkpoint["lq_dataset"] = dataset_id(self.data_dir)
        # where the run was: its data and models are found again from any folder (lq.lit.places.located)
        checkpoint["lq_places"] = recorded_places(self.hparams)
        if self._trainer is not None:  # how long the run meant to train (``epoch``: how far it was when saved)
            checkpoint["lq_max_epochs"] = self.trainer.max_epochs
        for logger in self.loggers:  # where its training curves are (lq eval draws them beside its table)
            if isinstance(logger, MLFlowLogger):
                checkpoint["lq_mlflow"] = {"tracking_uri": logger._tracking_uri, "run_id": logger.run_id}

    def eval_env(self, split: str = "test", seed: int = 0):
        """The zero-shot environment: every quest of ``split`` once, under the agent's protocol (``eval_max_steps``
        turns in place of the protocol's, if set)."""
        self.build_spaces()
        h = self.hparams
        return self.env_spec.build(
            split, h.eval_batch_size, seed, self.device, max_steps=h.eval_max_steps, auto_reset=False
        )

    def evaluate(self, split: str = "test", seed: int = 0, **options) -> EvalResult:
        """Zero-shot on the quests of ``split``: :func:`lq.eval.agents.evaluate_agent` of this agent (``options``:
        ``policy``, ``restrict``, ``greedy``, ``env``)."""
        return evaluate_agent(self, split, seed, **options)

    def demonstration_episodes(self, split: str, needed_by: str | None = None) -> list[Episode]:
        """The supervised episodes of ``split``'s demonstrations (:meth:`cloning_episodes`): what BC trains and
        validates on, and RL's imitation term imitates (``train``). ``needed_by``: what needs them (the setting, for
        the error), where none is a ``ValueError``."""
        dataset = load_dataset(self.data_dir)
        episodes = self.cloning_episodes(instances_from_data(*demonstrations_of(dataset, split, self.env_spec.pool)))
        if needed_by and not episodes:
            raise ValueError(
                f"{needed_by}: {self.data_dir} has no {split} demonstration linked to a quest whose goal can be "
                "played; `lq data stats` on this folder says what became of each demonstration"
            )
        return episodes

    def demonstration_figures(self, split: str, limit: int | None = None, batch_size: int = 16) -> dict[str, float]:
        """Teacher-forced figures on ``split``'s demonstrations (the first ``limit`` the agent can follow): their
        number, the cloning loss per demonstrated turn and each head's accuracy over its turns (the demonstrated
        choice ranked first). Between the training demonstrations and held-out ones, how much of what is imitated is
        memorised (``lq eval --demonstrations``)."""
        episodes = self.demonstration_episodes(split)[:limit]
        sums = {"loss": 0.0, "action_accuracy": 0.0, "speech_accuracy": 0.0}
        turns = dict.fromkeys(sums, 0)
        was_training = self.agent.training
        self.agent.eval()  # no dropout; no random draw, so a run's training goes on as without it
        try:
            with torch.no_grad():
                for start in range(0, len(episodes), batch_size):
                    batch = episodes[start : start + batch_size]
                    acted = sum(sum(e.acted) for e in batch)
                    total = sum(len(e.contexts) for e in batch)
                    weights = {"loss": total, "action_accuracy": acted, "speech_accuracy": total - acted}
                    for key, value in self.cloning_loss(batch).items():
                        sums[key] += value.item() * weights[key]
                        turns[key] += weights[key]
        finally:
            self.agent.train(was_training)
        return {"demonstrations": len(episodes), **{k: sums[k] / turns[k] for k in sums if turns[k]}}

    def demonstration_metrics(self, prefix: str = "") -> dict[str, float]:
        """:meth:`demonstration_figures` on the first :data:`DEMONSTRATIONS_READ` training and validation
        demonstrations, as an agent run logs them beside its zero-shot figures (``demos/train/loss``,
        ``demos/val/speech_accuracy``, ...; a budget's under ``budget/N/``; none under ``--zero_shot reported``)."""
        metrics = {}
        for split, name in (("train", "train"), ("valid", "val")):
            figures = self.demonstration_figures(split, DEMONSTRATIONS_READ)
            metrics |= {f"{prefix}demos/{name}/{k}": v for k, v in figures.items() if k != "demonstrations"}
        return metrics

    def cloning_episodes(self, instances) -> list[Episode]:
        """The supervised episodes: each demonstration's self turns that fall in the agent's spaces."""
        a_index = {a: i for i, a in enumerate(self.action_space)}
        u_index = {u: i for i, u in enumerate(self.utterance_space)}
        out = []
        for inst in instances:
            episode = Episode([], [], [], [])
            for turn in demonstration_turns(inst, objects=self.env_spec.objects):
                index = a_index if turn.kind == "action" else u_index
                if turn.text not in index:  # an emote, or a text outside the spaces
                    continue
                episode.contexts.append(turn.context)
                episode.acted.append(turn.kind == "action")
                episode.targets.append(index[turn.text])
                episode.valid_action_ids.append([a_index[a] for a in turn.valid_actions if a in a_index])
            if episode.contexts:
                out.append(episode)
        return out

    def cloning_loss(self, episodes: list[Episode]) -> dict[str, torch.Tensor]:
        """Cross-entropy of the demonstrated turns, summed over turns and averaged; accuracies per head."""
        hidden = self.agent.initial_state(len(episodes))
        candidates = self.agent.candidate_vectors()  # once for every turn (the weights do not change within them)
        losses, correct = [], {"action": [], "speech": []}
        for t in range(max(len(e.contexts) for e in episodes)):
            live = [i for i, e in enumerate(episodes) if t < len(e.contexts)]
            ids, mask, lines = self.batcher.contexts_with_lines([episodes[i].contexts[t] for i in live])
            acted = torch.tensor([episodes[i].acted[t] for i in live], device=self.device)
            hidden_live = (hidden[0][live], hidden[1][live])
            out = self.agent(ids.to(self.device), mask.to(self.device), hidden_live, acted, candidates, lines)
            (ha, hu), u_logits = out.hidden, out.speech_logits
            rows = torch.tensor(live, device=self.device)
            # CUDA's autocast runs GRUCell in bf16: the new states take the kept ones' dtype (index_copy asks it)
            hidden = (
                hidden[0].index_copy(0, rows, ha.to(hidden[0].dtype)),
                hidden[1].index_copy(0, rows, hu.to(hidden[1].dtype)),
            )
            valid = valid_mask([episodes[i].valid_action_ids[t] for i in live], out.action_logits.shape[1])
            a_logits = masked(out.action_logits, choice_mask(valid, self.protocol.restrict).to(self.device))
            targets = torch.tensor([episodes[i].targets[t] for i in live], device=self.device)
            for head, logits, which in (("action", a_logits, acted), ("speech", u_logits, ~acted)):
                if which.any():
                    losses.append(F.cross_entropy(logits[which], targets[which], reduction="sum"))
                    correct[head].append(logits[which].argmax(-1) == targets[which])
        turns = sum(len(e.contexts) for e in episodes)
        out = {"loss": torch.stack(losses).sum() / turns}
        for head, hits in correct.items():
            if hits:
                out[f"{head}_accuracy"] = torch.cat(hits).float().mean()
        return out
