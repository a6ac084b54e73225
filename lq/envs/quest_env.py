"""``QuestEnv``: LIGHT-Quests as a batched text environment (paper 4.1, Figure 4), in the TextWorld style.

``reset() -> (obs, infos)`` and ``step(commands) -> (obs, rewards, dones, infos)`` over a batch of
slots, each playing one quest: the agent (the self character) speaks or acts, the engine applies
actions, the frozen partner answers, and the Dungeon Master ranks utterances.

Rewards, as paper 4.1 (:mod:`lq.envs.rewards`): act goal 1 when the goal state is reached, by the agent's
action (self act completion) or by the partner's (partner act completion); speech 1/(2n) for an utterance of
this quest's demonstration and 1/(2n) for an utterance in the DM's top k, each paid once per distinct
utterance (the literal paper reading, the top-k term on every repeat, is ``top_k_every_repeat=True``), and only for
an utterance the partner is in the room to hear.

What each side reads after a turn is the world's state after it (:func:`lq.envs.episode.slot_context`): the room it
is in, the other character only when in the same room, and the turns it saw or heard.

When an episode ends and what reaches the speech goal is the :class:`lq.envs.protocol.Protocol`'s
(docs/deviations.md).

The Dungeon Master's ranking (the M valid utterances, whose top k earn the bonus) is only needed before
the agent speaks: it is asked for explicitly, ``valid_utterances(slots)``, as TextWorld asks for
admissible commands, and made in :meth:`QuestEnv.step` for any speech turn that was not ranked before.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from lq.envs.dungeon_master import DungeonMaster
from lq.envs.episode import (
    PLAYERS,
    QuestInstance,
    Slot,
    new_slot,
    play_turn,
    slot_context,
    slot_valid_actions,
    together,
)
from lq.envs.partner import Partner, Turn
from lq.envs.protocol import PROTOCOLS, Protocol
from lq.envs.rewards import speech_reward
from lq.world import parse

Command = str | tuple[str, str]  # text (an action if the engine can parse it), or ("speech" | "action", text)


class QuestEnv:
    def __init__(
        self,
        instances: Sequence[QuestInstance],
        partner: Partner,
        dm: DungeonMaster,
        action_space: Sequence[str],
        batch_size: int = 32,
        max_steps: int | None = None,
        motivations: Sequence[str] = ("short", "mid", "long"),
        protocol: Protocol = PROTOCOLS["paper"],
        auto_reset: bool = True,
        sampler: Callable[[random.Random], int] | None = None,
        seed: int = 0,
        top_k_every_repeat: bool = False,
        speech_rewards: bool = True,
        default_turns: int = 20,
        objects: bool = False,
        rank_utterances: bool = True,
    ):
        """``max_steps``: agent turns per episode, in place of the protocol's (whose ``None`` is the demonstration's
        own number of self turns, ``default_turns`` for a quest without one). ``top_k_every_repeat``: pay the DM's
        top-k bonus on every repeat of an utterance (the paper's literal reading; farmable, see
        :mod:`lq.envs.rewards`). ``objects``: the agent's context lists the room's objects and what the partner carries
        (:func:`lq.envs.episode.slot_context`). ``speech_rewards=False``: the reward is the act reward alone (Table
        2's "speech only without speech goals"); the infos still say what speech earned. ``rank_utterances=False``:
        the DM ranks nothing (no valid utterances, no top-k bonus), for plays that read only act goals under a
        protocol whose speech goal is the demonstration's utterances (the partner's calibration, whose replays spent
        a third of their time in the DM)."""
        if not rank_utterances and protocol.speech_goal != "demonstration":
            raise ValueError(f"protocol {protocol.name!r}: its speech goal needs the DM's ranking (rank_utterances)")
        if not instances:
            raise ValueError("no quests to play: QuestEnv needs quest instances with worlds")
        self.instances = list(instances)
        self.partner, self.dm = partner, dm
        self.utterance_space = dm.utterances.texts
        self.utterance_index = dm.utterances.index
        self.action_space = list(action_space)
        self.action_index = {a: i for i, a in enumerate(self.action_space)}
        self.protocol = protocol
        self.max_steps = max_steps if max_steps is not None else protocol.max_turns
        self.batch_size, self.default_turns = batch_size, default_turns
        self.motivations, self.objects = tuple(motivations), objects
        self.top_k_every_repeat, self.speech_rewards = top_k_every_repeat, speech_rewards
        self.rank_utterances = rank_utterances
        self._targets: dict[int, tuple[list[int], list[int]]] = {}
        self.auto_reset = auto_reset
        self.rng = random.Random(seed)
        self.sampler = sampler or (lambda rng: rng.randrange(len(self.instances)))
        self.slots: list[Slot] = []
        self.started = 0  # episodes started so far: the next one's serial (Slot.serial)
        self.players = dict(PLAYERS)  # who plays each side, as transcripts credit them (lq play: a person on one)

    # -- episodes ------------------------------------------------------------------------------------

    def reset(self, indices: Sequence[int] | None = None) -> tuple[list[str], list[dict]]:
        """Start a batch of episodes (on ``indices`` of the instances, or sampled)."""
        if indices is None:
            indices = [self.sampler(self.rng) for _ in range(self.batch_size)]
        self.slots = [self._start(i) for i in indices]
        self._partner_turns(list(range(len(self.slots))))  # the partner speaks first, as in the demonstrations
        return self._observe([{} for _ in self.slots])

    def _start(self, index: int) -> Slot:
        slot = new_slot(self.instances[index], index)
        slot.serial, self.started = self.started, self.started + 1
        slot.players = dict(self.players)
        return slot

    def context(self, slot: Slot, side: str = "self") -> str:
        return slot_context(slot, side, self.motivations, self.objects)

    def turn_limit(self, slot: Slot) -> int:
        if self.max_steps is not None:
            return self.max_steps
        return slot.instance.turns or self.default_turns

    # -- the Dungeon Master's valid utterances -------------------------------------------------------

    def valid_utterances(self, which: Sequence[int]) -> list[list[int]]:
        """The DM's M valid utterances (ids into the utterance space, most likely first) for the current context of
        each slot in ``which``; its first k earn the top-k bonus. Ranked once per context."""
        todo = [i for i in which if self.slots[i].valid_utterance_ids is None]
        if todo:
            contexts = [self.context(self.slots[i]) for i in todo]
            ranked = self.dm.rank(contexts).tolist() if self.rank_utterances else [[] for _ in todo]
            for i, ids in zip(todo, ranked, strict=True):
                self.slots[i].valid_utterance_ids = ids
        return [self.slots[i].valid_utterance_ids for i in which]

    # -- turns ---------------------------------------------------------------------------------------

    def _agent_turn(self, slot: Slot, kind: str, text: str) -> tuple[float, float]:
        """Play the agent's turn (its utterance already ranked by the DM); returns its act and speech rewards. An
        utterance the partner is not in the room to hear earns no speech reward and does not count as said."""
        speech = 0.0
        if kind != "action" and together(slot):
            top_k = slot.valid_utterance_ids[: self.dm.top_k]
            in_top_k = self.utterance_index.get(text, -1) in top_k
            demo = set(slot.instance.demo_utterances)
            speech = speech_reward(slot.speech, text, demo, in_top_k, self.top_k_every_repeat)
        return play_turn(slot, "self", kind, text), speech

    def _kind_of(self, slot: Slot, text: str) -> Turn:
        """A text command as a turn: an action where the engine's parser reads it as a possible action of the self
        character now (``"Drop the sturdy tunic"``, ``"take golden scarf"``: played as its canonical command, ``drop
        sturdy tunic``, ``get golden scarf``) or where it is one of the action space (played, and refused by the engine
        if not possible now); speech otherwise. A text meant as speech that would parse is sent as
        ``("speech", text)``."""
        valid = slot_valid_actions(slot, "self")
        if text in self.action_index or text in valid:
            return ("action", text)
        action, _ = parse(slot.world, slot.me, text)
        if action is None:
            return ("speech", text)
        # the listed text of that very action (two things of one name are listed apart: "get sword 2")
        return ("action", next((t for t, a in valid.items() if a == action), action.text))

    def _partner_turns(self, which: list[int]) -> list[float]:
        """The partner's turn in each of ``which``; returns the act reward each earned (partner completion)."""
        if not which:
            return []
        slots = [self.slots[i] for i in which]
        if hasattr(self.partner, "slot_order"):
            self.partner.slot_order = which
        turns = self.partner.act(
            [self.context(s, "partner") for s in slots], [list(slot_valid_actions(s, "partner")) for s in slots]
        )
        return [play_turn(slot, "partner", kind, text) for slot, (kind, text) in zip(slots, turns, strict=True)]

    def step(self, commands: Sequence[Command]) -> tuple[list[str], list[float], list[bool], list[dict]]:
        if len(commands) != len(self.slots):
            raise ValueError(f"{len(commands)} commands for {len(self.slots)} environments")
        turns = [
            command if isinstance(command, tuple) else self._kind_of(slot, command)
            for slot, command in zip(self.slots, commands, strict=True)
        ]
        live = [i for i, s in enumerate(self.slots) if not self._over(s)]
        self.valid_utterances([i for i in live if turns[i][0] != "action"])  # the contexts the agent speaks in
        rewards = [0.0] * len(self.slots)
        infos = [{"act_reward": 0.0, "speech_reward": 0.0} for _ in self.slots]  # an ended episode ignores its command
        for i in live:
            slot = self.slots[i]
            if slot.goal_open:
                slot.goal_open_turns += 1
                slot.goal_open_acts += turns[i][0] == "action"
            act, speech = self._agent_turn(slot, *turns[i])
            slot.steps += 1
            slot.speech_reward += speech
            rewards[i] = act + speech if self.speech_rewards else act
            infos[i] = {"act_reward": act, "speech_reward": speech}
        playing = [i for i in live if not self._over(self.slots[i])]
        for i, partner_reward in zip(playing, self._partner_turns(playing), strict=True):
            rewards[i] += partner_reward
            infos[i]["act_reward"] += partner_reward
        dones = []
        for i, slot in enumerate(self.slots):
            slot.episode_return += rewards[i]
            slot.valid_utterance_ids = None if i in live else slot.valid_utterance_ids  # a new context
            dones.append(self._over(slot))
            if dones[-1] and not slot.reported:
                infos[i]["episode"] = self.episode_summary(slot)
                slot.reported = True
        if self.auto_reset:
            finished = [i for i, d in enumerate(dones) if d]
            for i in finished:
                self.slots[i] = self._start(self.sampler(self.rng))
            self._partner_turns(finished)
        obs, infos = self._observe(infos)
        return obs, rewards, dones, infos

    def _over(self, slot: Slot) -> bool:
        """The protocol's end: on its goals (:meth:`ended_on_goals`) or at the turn limit."""
        return self.ended_on_goals(slot) or slot.steps >= self.turn_limit(slot)

    def ended_on_goals(self, slot: Slot) -> bool:
        """Whether the protocol ends the episode on its goals: a partner act completion; a self act completion where
        the protocol ends there, or else once the speech goal is reached too (Gymnasium's ``terminated``)."""
        if slot.act_goal == "partner":
            return True
        return slot.act_goal == "self" and (self.protocol.end_at_act_goal or self.speech_goal(slot))

    def only(self, quest_ids: Sequence[str], where: str) -> None:
        """Play only the instances of ``quest_ids``, in that order; an id that is not one of the environment's quests
        is named (``where``: what its quests are, e.g. "a test quest of data/default") with one that is."""
        by_id = {inst.quest.quest_id: inst for inst in self.instances}
        for quest in quest_ids:
            if quest not in by_id:
                raise ValueError(f"quest {quest!r} is not {where}; e.g. {next(iter(by_id))}")
        self.instances = [by_id[q] for q in quest_ids]

    def speech_goal(self, slot: Slot) -> bool:
        if self.protocol.speech_goal == "demonstration":
            return bool(slot.speech.said)
        return slot.speech_score >= self.protocol.speech_goal_threshold - 1e-9

    def demonstration_targets(self, slot: Slot) -> tuple[list[int], list[int]]:
        """Ids of the quest's goal action (in the action space) and of its demonstration's self utterances: the
        positive targets the released code adds to the valid-output losses' (``generate_valid_masks``); empty where
        the protocol does not."""
        if not self.protocol.demonstration_targets:
            return [], []
        if slot.index not in self._targets or slot.index < 0:
            goal = slot.instance.quest.goal
            actions = [self.action_index[goal]] if goal in self.action_index else []
            said = [self.utterance_index[u] for u in slot.instance.demo_utterances if u in self.utterance_index]
            self._targets[slot.index] = (actions, list(dict.fromkeys(said)))
        return self._targets[slot.index]

    def episode_summary(self, slot: Slot) -> dict:
        return {
            "quest_id": slot.instance.quest.quest_id,
            "instance": slot.index,
            "serial": slot.serial,
            "act_goal": slot.act_goal is not None,
            "act_goal_by": slot.act_goal,
            "speech_goal": self.speech_goal(slot),
            "speech_reward": slot.speech_reward,
            "speech_score": slot.speech_score,
            "return": slot.episode_return,
            "steps": slot.steps,
            "goal_open_turns": slot.goal_open_turns,
            "goal_open_acts": slot.goal_open_acts,
            "left_start": slot.left_start,
            "transcript": "\n".join(slot.transcript),
            "card": slot.card,
            "turns": list(slot.turns),
            "players": dict(slot.players),
        }

    def _observe(self, infos: list[dict]) -> tuple[list[str], list[dict]]:
        """Observations and infos of every slot: the quest (``instance``, its index), the engine's valid actions (as
        text and as ids into the action space), the goals reached so far; each slot notes whether its goal action is
        valid now and in the action space (``Slot.goal_open``). An ended episode (without auto-reset) keeps its last
        observation."""
        obs = [self.context(s) for s in self.slots]
        for slot, info in zip(self.slots, infos, strict=True):
            engine_valid = list(slot_valid_actions(slot, "self"))
            goal = slot.instance.quest.goal
            slot.goal_open = goal in self.action_index and goal in engine_valid  # the agent could take it now
            info.update(
                instance=slot.index,
                valid_actions=engine_valid,
                valid_action_ids=[self.action_index[a] for a in engine_valid if a in self.action_index],
                target_action_ids=self.demonstration_targets(slot)[0],
                target_utterance_ids=self.demonstration_targets(slot)[1],
                act_goal=slot.act_goal is not None,
                speech_goal=self.speech_goal(slot),
                quest_id=slot.instance.quest.quest_id,
                steps=slot.steps,
            )
        return obs, infos
