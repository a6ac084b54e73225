"""LIGHT-Quests as Gymnasium environments: ``gymnasium.make("lq/Quest-v0", ...)`` (one quest per episode) and
:class:`QuestVectorEnv` (a batch, one batched partner and DM forward per step), over :class:`QuestEnv`.

``import lq`` registers ``lq/Quest-v0`` (``gymnasium.make("lq:lq/Quest-v0")`` imports it for you); with no arguments
it plays the default data with the newest trained partner and DM (:func:`environment_arguments`). The observation is
the agent's context (setting, personas, what it carries, its motivations, the dialogue so far); the action is a
string, an engine command (``"get golden egg"``, ``"Take the golden egg"``) or an utterance, told apart as the
environment does (:meth:`QuestEnv._kind_of`: a text the engine's parser reads as a possible action now is that action,
played as its canonical command; one of the action space is an action; anything else is said; a ``("speech", text)``
pair is said whatever it reads as). ``info``
carries what an agent chooses among and what it reached:

- ``valid_actions``: the engine's valid actions for the self character now;
- ``valid_utterances``: the Dungeon Master's valid utterances for this context, most likely first;
- ``act_goal``, ``act_goal_by`` ("self", "partner" or None), ``speech_goal``, ``quest_id``, ``steps``;
- after a step: ``act_reward`` and ``speech_reward`` (the parts of the reward), and ``refusal``: why the engine did
  not do a text meant as a command (:func:`refusal_of`), else None.

An episode is *terminated* when the protocol ends it on its goals (both goals reached, a partner act completion, or
under ``restricted`` the act goal) and *truncated* at the protocol's turn limit.
"""

from __future__ import annotations

import difflib
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode, VectorEnv

from lq.envs.calibration import CALIBRATIONS
from lq.envs.episode import Slot
from lq.envs.protocol import Protocol, protocol_of
from lq.envs.quest_env import QuestEnv
from lq.envs.spec import AGENTS_ENVIRONMENT, EnvSpec
from lq.world.actions import parse, split_verb

ENV_ID = "lq/Quest-v0"  # registered by ``import lq`` (lq/__init__.py), under this name


class FreeText(gymnasium.spaces.Space[str]):
    """Any string of at most ``max_length`` characters (``gymnasium.spaces.Text`` admits only a fixed character set,
    which utterances leave at their first apostrophe). ``sample`` draws one of ``texts`` (the action and utterance
    spaces), so a random agent says things the environment knows."""

    def __init__(self, texts: Sequence[str] = (), max_length: int = 100_000, seed: int | None = None):
        super().__init__(shape=None, dtype=None, seed=seed)
        self.texts, self.max_length = list(texts), max_length

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if not self.texts:
            return ""
        return self.texts[int(self.np_random.integers(len(self.texts)))]

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"FreeText(max_length={self.max_length}, {len(self.texts)} texts to sample)"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, FreeText) and other.max_length == self.max_length and other.texts == self.texts


def goal_info(env: QuestEnv, slot: Slot, info: dict, utterances: list[int] | None) -> dict:
    """A QuestEnv info as the Gymnasium environments give it (texts rather than ids)."""
    out = {
        "valid_actions": list(info["valid_actions"]),
        "valid_utterances": [env.utterance_space[i] for i in utterances] if utterances is not None else [],
        "act_goal": slot.act_goal is not None,
        "act_goal_by": slot.act_goal,
        "speech_goal": env.speech_goal(slot),
        "quest_id": slot.instance.quest.quest_id,
        "steps": slot.steps,
    }
    for key in ("act_reward", "speech_reward"):
        if key in info:
            out[key] = info[key]
    return out


def refusal_of(env: QuestEnv, slot: Slot, action: str | tuple[str, str]) -> str | None:
    """Why the engine will not do ``action`` now (:func:`lq.world.refusals.refusal`'s reason), where it is meant as a
    command: one of the action space, a text that starts with a verb and is not one of the utterance space (said
    instead, as the rule above has it), or an ``("action", text)`` pair; ``None`` for a possible action and for
    speech."""
    kind, text = action if isinstance(action, tuple) else (None, action)
    if kind == "speech" or not isinstance(text, str) or not text.split():
        return None
    if kind is None and text not in env.action_index:
        if text in env.utterance_index or split_verb(text.split())[0] is None:  # an utterance of the space, or talk
            return None
    found, why = parse(slot.world, slot.me, text)
    return None if found is not None else why


def quest_env(
    data_dir: str | Path | None,
    partner_checkpoint: str | Path | None,
    dm_checkpoint: str | Path | None,
    split: str,
    quests: Sequence[str] | None,
    protocol: Protocol | str,
    batch: int,
    resets: bool,
    **kwargs: Any,
) -> QuestEnv:
    """The batched environment under a Gymnasium one: a split's quests, or those of ``quests`` (quest ids). Every
    argument is checked before anything loads (:func:`environment_arguments`: the defaults come from there)."""
    quests = checked_selection(split, quests, batch)
    data_dir, partner_checkpoint, dm_checkpoint, kwargs = environment_arguments(
        data_dir, partner_checkpoint, dm_checkpoint, protocol, kwargs
    )
    build = {k: kwargs.pop(k) for k in BUILD_SETTINGS if k in kwargs}
    spec = EnvSpec(data_dir, partner_checkpoint, dm_checkpoint, protocol_of(protocol), **kwargs)
    env = spec.build(split, batch, auto_reset=resets, **build)
    if quests is not None:
        env.only(quests, f"a playable {split} quest of {data_dir}")
    return env


def whole(value: Any) -> bool:
    """An integer (numpy's too), and not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def checked_selection(split: Any, quests: Any, batch: Any) -> list[str] | None:
    """``split``, ``quests`` and the batch (``num_envs``) checked, each bad one named with its fix (a misspelt split
    would otherwise fail as a KeyError after the models load; one quest id as a string would be read letter by
    letter); ``quests`` as a list."""
    from lq.data.splits import SPLITS

    if split not in SPLITS:
        near = difflib.get_close_matches(str(split), SPLITS, n=1)
        hint = f" (did you mean {near[0]}?)" if near else ""
        raise ValueError(f"{ENV_ID}: split={split!r}{hint}: choose from {', '.join(SPLITS)}")
    if not whole(batch) or batch < 1:
        raise ValueError(f"{ENV_ID}: num_envs={batch!r}: a positive number of environments, e.g. num_envs=16")
    if quests is None:
        return None
    if isinstance(quests, str) or not isinstance(quests, Iterable):
        raise ValueError(f"{ENV_ID}: quests={quests!r}: a list of quest ids, e.g. quests=[{str(quests)!r}]")
    quests = list(quests)
    if not quests or not all(isinstance(q, str) for q in quests):
        raise ValueError(
            f"{ENV_ID}: quests={quests!r}: a non-empty list of quest ids (strings, e.g. 'test_00003'), or leave it out "
            f"for every quest of the split"
        )
    return quests


# what a Gymnasium environment sets itself: the rest of EnvSpec's fields and of its build() are settings it passes on
OWN = ("data_dir", "split", "partner_checkpoint", "dm_checkpoint", "batch_size", "auto_reset", "protocol")
BUILD_SETTINGS = ("seed", "device", "max_steps", "sampler")
SETTINGS = (*(f.name for f in fields(EnvSpec) if f.name not in OWN), *BUILD_SETTINGS)


def environment_arguments(
    data_dir: str | Path | None,
    partner_checkpoint: str | Path | None,
    dm_checkpoint: str | Path | None,
    protocol: Protocol | str,
    kwargs: dict[str, Any],
) -> tuple[Path, Path, Path, dict[str, Any]]:
    """``lq/Quest-v0``'s arguments checked, each bad one named with its fix, before any model loads; the defaults
    filled in: the default data (``data/default``), the newest partner trained on it whose run finished and the newest
    DM beside it (``make quickstart``'s or ``make partner dm``'s), the word pieces the partner was trained to read, and
    the environment the agents are evaluated in (:data:`lq.envs.spec.AGENTS_ENVIRONMENT`)."""
    from lq.data.outputs import finished, outputs_for
    from lq.envs.protocol import PROTOCOLS

    if "batch_size" in kwargs or "num_envs" in kwargs:
        raise ValueError(
            f"{ENV_ID} plays one quest at a time; for a batch: gymnasium.make_vec({ENV_ID!r}, num_envs=N) "
            "(its environments share one partner and DM forward per step)"
        )
    unknown = [k for k in kwargs if k not in SETTINGS]
    if unknown:
        known = ["data_dir", "partner_checkpoint", "dm_checkpoint", "split", "quests", "protocol", *SETTINGS]
        near = difflib.get_close_matches(unknown[0], known, n=1)
        raise ValueError(
            f"{ENV_ID}: unknown argument {unknown[0]!r}" + (f" (did you mean {near[0]}?)" if near else "")
            + f"; it takes {', '.join(known)}"
        )  # fmt: skip
    if isinstance(protocol, str) and protocol not in PROTOCOLS:
        raise ValueError(f"{ENV_ID}: protocol={protocol!r}: choose from {', '.join(PROTOCOLS)}")
    check_settings(kwargs)
    data = Path(data_dir if data_dir is not None else "data/default")
    if not (data / "manifest.json").is_file() and not (data / "quests").is_dir():
        fix = "make data (lq data generate data/default)" if data_dir is None else "generate or download one there"
        raise FileNotFoundError(f"{ENV_ID}: data_dir={str(data)!r} holds no dataset: {fix}, or pass data_dir=")
    models = {"partner_checkpoint": partner_checkpoint, "dm_checkpoint": dm_checkpoint}
    outputs = Path(outputs_for(data))
    for name, given in models.items():
        stage = name.removesuffix("_checkpoint")
        if given is None:
            found = [c for c in outputs.glob(f"**/{stage}/*/best.ckpt") if finished(c)]
            trained = [c for c in found if trained_on(c, data)]  # not another dataset's (outputs/<dataset>/...)
            if stage == "dm" and trained:  # the DM trained beside the partner (one profile's), when there is one
                partner = Path(models["partner_checkpoint"]).resolve()
                trained = [c for c in trained if c.resolve().parents[2] == partner.parents[2]] or trained
            if not trained:
                others = f" (those there were trained on other data: {found[0]}, ...)" if found else ""
                target = "make partner dm" + ("" if data == Path("data/default") else f" DATA={data}")
                raise FileNotFoundError(
                    f"{ENV_ID}: no {stage} trained on {data} under {outputs}/{others}: {target} (or make quickstart), "
                    f"or pass {name}="
                )
            models[name] = max(trained, key=lambda c: c.stat().st_mtime)
        elif Path(given).is_dir():
            raise IsADirectoryError(
                f"{ENV_ID}: {name}={str(given)!r} is a folder: name the checkpoint in it ({Path(given) / 'best.ckpt'})"
            )
        elif not Path(given).is_file():
            raise FileNotFoundError(f"{ENV_ID}: {name}={str(given)!r}: no such file (make partner dm trains them)")
    settings = {**AGENTS_ENVIRONMENT, **kwargs}
    if "context_length" not in settings:
        trained_length = _trained_length(models["partner_checkpoint"])
        if trained_length is not None:
            settings["context_length"] = trained_length
    return data, Path(models["partner_checkpoint"]), Path(models["dm_checkpoint"]), settings


def _positive(value: Any) -> bool:
    return whole(value) and value > 0


def _flag(value: Any) -> bool:
    return isinstance(value, bool | np.bool_)


def _device(value: Any) -> bool:
    import torch

    return isinstance(value, str | torch.device)


# what each setting passed on must be, as a test and in words: checked before anything loads, since a wrong type
# would otherwise fail deep inside the build (context_length="long": a TypeError from the tokenizer's batcher)
SETTING_CHECKS = {
    "context_length": (_positive, "a positive number of word pieces, e.g. 256 (leave it out: the partner's own)"),
    "top_k": (_positive, "a positive number of utterances (the paper's 10)"),
    "num_valid_utterances": (_positive, "a positive number of utterances (the paper's 50)"),
    "max_steps": (lambda v: v is None or _positive(v), "a positive number of agent turns, or None (the protocol's)"),
    "seed": (whole, "an integer"),
    "objects": (_flag, "True or False"),
    "speech_rewards": (_flag, "True or False"),
    "top_k_every_repeat": (_flag, "True or False"),
    "scene_filter": (_flag, "True or False"),
    "partner_calibration": (lambda v: v in CALIBRATIONS, f"one of {', '.join(map(repr, CALIBRATIONS))}"),
    "device": (_device, "a device, e.g. 'cpu' or 'cuda'"),
    "sampler": (lambda v: v is None or callable(v), "a function of a random.Random giving a quest's index, or None"),
    "pool": (lambda v: v is None or isinstance(v, str | Path), "a training pool's folder (lq data pool), or None"),
}


def check_settings(settings: dict[str, Any]) -> None:
    """Each setting of :data:`SETTING_CHECKS` given, checked: a bad one named with what it must be."""
    for name, value in settings.items():
        test, what = SETTING_CHECKS.get(name, (lambda _: True, ""))
        if not test(value):
            raise ValueError(f"{ENV_ID}: {name}={value!r}: must be {what}")


def trained_on(checkpoint: str | Path, data: str | Path) -> bool:
    """Whether ``checkpoint`` was trained on the dataset at ``data`` (the ``lq_dataset`` it records:
    :func:`lq.data.dataset.dataset_id`; one from before lq recorded it counts)."""
    from lq.data.dataset import dataset_id

    saved = _recorded(checkpoint, "lq_dataset")
    return saved is None or saved == dataset_id(data)


def _trained_length(checkpoint: str | Path) -> int | None:
    """The word pieces a poly-encoder was trained to read (``lq_context_length``; None in checkpoints before it)."""
    return _recorded(checkpoint, "lq_context_length")


def _recorded(checkpoint: str | Path, key: str) -> Any:
    """What a Lightning checkpoint records under ``key`` (None where it records nothing, or is no ``.ckpt``), read
    without loading its weights (memory-mapped)."""
    import torch

    if Path(checkpoint).suffix != ".ckpt":
        return None
    return torch.load(checkpoint, map_location="cpu", weights_only=True, mmap=True).get(key)


class QuestGymEnv(gymnasium.Env[str, str]):
    """One quest per episode (``lq/Quest-v0``). ``reset(seed=...)`` draws the quest from the split (or from
    ``quests``) with the seeded generator; ``options={"quest": ID}`` plays that quest. ``env``: a built
    :class:`QuestEnv` to play in instead of building one (its batch is used one slot at a time)."""

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        data_dir: str | Path | None = None,
        partner_checkpoint: str | Path | None = None,
        dm_checkpoint: str | Path | None = None,
        split: str = "test",
        quests: Sequence[str] | None = None,
        protocol: Protocol | str = "paper",
        render_mode: str | None = None,
        env: QuestEnv | None = None,
        **kwargs: Any,
    ):
        """``kwargs``: :class:`lq.envs.spec.EnvSpec`'s fields and its ``build``'s (``context_length``, ``max_steps``,
        ...). With no arguments: the default data and the newest trained partner and DM (:func:`environment_arguments`).
        """
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r}: {ENV_ID} renders 'ansi' (the transcript) or nothing")
        if env is None:
            env = quest_env(data_dir, partner_checkpoint, dm_checkpoint, split, quests, protocol, 1, False, **kwargs)
        env.auto_reset = False
        self.env, self.render_mode = env, render_mode
        self.observation_space = FreeText()
        self.action_space = FreeText(env.action_space + env.utterance_space)
        self._slot: Slot | None = None
        self._ended = False

    @property
    def quest_ids(self) -> list[str]:
        return [inst.quest.quest_id for inst in self.env.instances]

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, dict]:
        self._slot = None  # a reset that fails leaves no episode to step in
        super().reset(seed=seed)
        if seed is not None:
            self.action_space.seed(seed)
        index = self.quest_index(options or {})
        obs, infos = self.env.reset([index])
        self._slot, self._ended = self.env.slots[0], False
        return obs[0], goal_info(self.env, self._slot, infos[0], self.env.valid_utterances([0])[0])

    def quest_index(self, options: dict) -> int:
        """The instance to play: ``options["quest"]`` (an index, numpy's integers too, or a quest id), else drawn with
        the seeded generator; a bad option named with the range or ids it takes."""
        unknown = [k for k in options if k != "quest"]
        if unknown:
            raise ValueError(f"{ENV_ID}: options[{unknown[0]!r}]: reset takes options={{'quest': INDEX_OR_ID}} only")
        quest, n = options.get("quest"), len(self.env.instances)
        if quest is None:
            return int(self.np_random.integers(n))
        if whole(quest):
            if not 0 <= quest < n:
                raise ValueError(
                    f"options['quest'] = {quest}: this environment has quests 0 to {n - 1} "
                    f"(or name one: {self.quest_ids[0]!r}, ...)"
                )
            return int(quest)
        if isinstance(quest, str) and quest in self.quest_ids:
            return self.quest_ids.index(quest)
        raise ValueError(
            f"options['quest'] = {quest!r} is not one of this environment's quests: an index 0 to {n - 1} or a "
            f"quest id ({self.quest_ids[:3]}, ...)"
        )

    def step(self, action: str | tuple[str, str]) -> tuple[str, float, bool, bool, dict]:
        """One turn of the self character, then the partner's. Raises ``gymnasium.error.ResetNeeded`` where there is
        no episode to step in: before the first ``reset``, after one that failed, and once the episode has
        terminated or been truncated (Gymnasium leaves stepping an ended episode undefined; here it is an error, not
        a silent repeat of the last step)."""
        if self._slot is None:
            raise ResetNeeded(f"{ENV_ID}: no episode to step in: call reset() first (none was made, or it failed)")
        if self._ended:
            raise ResetNeeded(f"{ENV_ID}: this episode has ended (terminated or truncated): call reset() for the next")
        if not isinstance(action, str | tuple):
            raise TypeError(f"an action is a string (a command or an utterance), not {type(action).__name__}")
        refused = refusal_of(self.env, self._slot, action)
        obs, rewards, dones, infos = self.env.step([action])
        slot = self._slot
        terminated = dones[0] and self.env.ended_on_goals(slot)
        truncated = dones[0] and not terminated
        self._ended = dones[0]
        utterances = None if dones[0] else self.env.valid_utterances([0])[0]
        info = goal_info(self.env, slot, infos[0], utterances) | {"refusal": refused}
        return obs[0], float(rewards[0]), terminated, truncated, info

    def render(self) -> str | None:
        if self.render_mode == "ansi" and self._slot is not None:
            return "\n".join(self._slot.transcript)
        return None


class QuestVectorEnv(VectorEnv):
    """``num_envs`` quests at once over one batched :class:`QuestEnv`: the partner and the Dungeon Master answer every
    environment in one forward each per step. Episodes reset in the step that ends them (``AutoresetMode.SAME_STEP``:
    the observation is the new episode's, ``info["final_obs"]`` and ``info["final_info"]`` the ended one's). Infos are
    Gymnasium's dict of arrays, each key with its ``_key`` mask."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(
        self,
        num_envs: int,
        data_dir: str | Path | None = None,
        partner_checkpoint: str | Path | None = None,
        dm_checkpoint: str | Path | None = None,
        split: str = "test",
        quests: Sequence[str] | None = None,
        protocol: Protocol | str = "paper",
        **kwargs: Any,
    ):
        self.num_envs = num_envs
        self.env = quest_env(
            data_dir, partner_checkpoint, dm_checkpoint, split, quests, protocol, num_envs, True, **kwargs
        )
        self.single_observation_space = FreeText()
        self.single_action_space = FreeText(self.env.action_space + self.env.utterance_space)
        self.observation_space = gymnasium.spaces.Tuple([self.single_observation_space] * num_envs)
        self.action_space = gymnasium.spaces.Tuple([self.single_action_space] * num_envs)

    def _infos(self, infos: list[dict]) -> dict:
        utterances = self.env.valid_utterances(list(range(self.num_envs)))
        out: dict = {}
        for i, (slot, info) in enumerate(zip(self.env.slots, infos, strict=True)):
            out = self._add_info(out, goal_info(self.env, slot, info, utterances[i]), i)
        return out

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[tuple[str, ...], dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.env.rng.seed(seed)
            self.action_space.seed(seed)
        obs, infos = self.env.reset()
        return tuple(obs), self._infos(infos)

    def step(self, actions: Sequence[str]) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, dict]:
        before = list(self.env.slots)
        obs, rewards, dones, infos = self.env.step(list(actions))
        terminated = np.array([d and self.env.ended_on_goals(s) for d, s in zip(dones, before, strict=True)])
        truncated = np.array(dones) & ~terminated
        out = self._infos(infos)
        for i, done in enumerate(dones):
            if done:
                final = goal_info(self.env, before[i], infos[i] | {"valid_actions": []}, None)
                final["episode"] = infos[i]["episode"]
                out = self._add_info(out, {"final_obs": self.env.context(before[i]), "final_info": final}, i)
        return tuple(obs), np.array(rewards, dtype=np.float64), terminated, truncated, out
