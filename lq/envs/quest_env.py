"""``QuestEnv``: LIGHT-Quests as a batched text environment (paper 4.1, Figure 4), in the TextWorld style.

``reset() -> (obs, infos)`` and ``step(commands) -> (obs, rewards, dones, infos)`` over a batch of
slots, each playing one quest: the agent (the self character) speaks or acts, the engine applies
actions, the frozen partner answers, and the Dungeon Master ranks utterances.

Rewards, as paper 4.1 (:mod:`lq.envs.rewards`): act goal 1 when the goal state is reached, by the agent's
action (self act completion) or by the partner's (partner act completion); speech 1/(2n) for an utterance of
this quest's demonstration and 1/(2n) for an utterance in the DM's top k, each paid once per distinct
utterance (the literal paper reading, the top-k term on every repeat, is ``top_k_every_repeat=True``).

An episode ends when the act goal is reached or after its turn limit: ``max_steps`` agent turns, or by
default (``max_steps=None``) as many as the self character took in the quest's demonstration.

The paper calls the naturalness objective the speech goal but gives no cut for "reached". Here the
episode's *speech score* (the speech rewards, at most 1) reaches the speech goal at
``speech_goal_threshold`` (0.5: as much as saying the whole demonstration, or n distinct utterances the
DM ranks in its top k).

The Dungeon Master's ranking (the M valid utterances, whose top k earn the bonus) is only needed before
the agent speaks: it is asked for explicitly, ``valid_utterances(slots)``, as TextWorld asks for
admissible commands, and made in :meth:`QuestEnv.step` for any speech turn that was not ranked before.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lq.data.context import Context, swap_sides
from lq.data.demos import Demonstration
from lq.data.quests import Quest
from lq.envs.dungeon_master import DungeonMaster
from lq.envs.partner import Partner, Turn
from lq.envs.rewards import SpeechScore, act_reward, speech_reward
from lq.world import ActGoal, Node, World, step, valid_actions

Command = str | tuple[str, str]  # text (an action if the engine can parse it), or ("speech" | "action", text)


@dataclass
class QuestInstance:
    """A quest to play: its stem (with the world) and the demonstration its speech reward comes from."""

    quest: Quest
    demo: Demonstration | None
    self_id: str
    partner_id: str

    @property
    def demo_utterances(self) -> list[str]:
        return [a.text for a in self.demo.self_acts("speech")] if self.demo else []

    @property
    def turns(self) -> int | None:
        """The self character's turns in the demonstration: the episode length of zero-shot evaluation."""
        return len(self.demo.self_acts()) if self.demo else None


def instances_from_data(quests: Sequence[Quest], demos: Sequence[Demonstration]) -> list[QuestInstance]:
    """One instance per demonstration whose quest is known (generated data links them by ``quest_id``)."""
    by_id = {q.quest_id: q for q in quests}
    out = []
    for d in demos:
        q = by_id.get(d.conv_extra.get("quest_id", ""))
        if q is not None and q.graph is not None:
            out.append(QuestInstance(q, d, d.conv_extra["self_id"], d.conv_extra["partner_id"]))
    return out


@dataclass
class _Slot:
    instance: QuestInstance
    world: World
    me: Node
    partner: Node
    goal: ActGoal
    speech: SpeechScore
    index: int = -1  # of the instance in the environment's list
    history: list[tuple[str, str, str]] = field(default_factory=list)
    steps: int = 0
    act_goal: str | None = None  # "self" or "partner" once reached
    speech_reward: float = 0.0
    episode_return: float = 0.0
    valid_utterance_ids: list[int] | None = None  # the DM's ranking for the current context, once asked for
    transcript: list[str] = field(default_factory=list)
    reported: bool = False  # its episode summary has been given (the episode ended)

    @property
    def speech_score(self) -> float:
        return self.speech.score


def new_slot(instance: QuestInstance, index: int = -1) -> _Slot:
    world = World(instance.quest.graph)
    goal = ActGoal.parse(world, instance.quest.goal, instance.self_id, instance.partner_id)
    speech = SpeechScore(len(instance.demo_utterances))
    slot = _Slot(instance, world, world[instance.self_id], world[instance.partner_id], goal, speech, index)
    slot.transcript += transcript_header(slot)
    return slot


SELF_INDENT = " " * 24  # the agent's turns stand to the right of the partner's, as in the paper's appendix


def transcript_header(slot: _Slot) -> list[str]:
    """The quest as the paper's appendix transcripts open: setting, partner, self and the agent's motivation."""
    quest = slot.instance.quest
    room = slot.me.container

    def carrying(node: Node) -> str:
        return ", ".join(n.name for n in node.contents.values()) or "Nothing."

    return [
        f"Quest {quest.quest_id} (goal: {quest.goal})",
        f"Setting     {room.name + '. ' + room.desc if room is not None else ''}".rstrip(),
        f"Partner:    {slot.partner.name}.",
        f"  Persona   {slot.partner.persona}",
        f"  Carrying  {carrying(slot.partner)}",
        f"Self:       {slot.me.name}.",
        f"  Persona   {slot.me.persona}",
        f"  Carrying  {carrying(slot.me)}",
        f"Motivation  {quest.motivation('short')}",
        "",
    ]


def slot_context(slot: _Slot, side: str, motivations: Sequence[str]) -> str:
    """What ``side`` ("self" or "partner") sees: setting, personas, what it carries, the dialogue and actions so far,
    and for the self character its motivations."""
    me, other = (slot.me, slot.partner) if side == "self" else (slot.partner, slot.me)
    room = me.container
    return Context(
        setting_name=slot.instance.demo.room_category if slot.instance.demo else "",
        setting_desc=room.desc if room is not None else "",
        self_name=me.name,
        self_persona=me.persona,
        partner_name=other.name,
        partner_persona=other.persona,
        carrying=[n.name for n in me.contents.values()],
        motivations={lvl: slot.instance.quest.motivation(lvl) for lvl in motivations} if side == "self" else {},
        history=slot.history if side == "self" else swap_sides(slot.history),
    ).serialise(motivations if side == "self" else ())


def play_turn(slot: _Slot, side: str, kind: str, text: str) -> float:
    """Play one turn of ``side``: an action goes through the engine, an utterance into the history. Returns the
    act reward (1 when this turn reaches the act goal)."""
    actor = slot.me if side == "self" else slot.partner
    indent = SELF_INDENT if side == "self" else ""
    slot.history.append((side, kind, text))
    if kind != "action":
        slot.transcript.append(f"{indent}{actor.name}: {text}")
        return act_reward(False)
    result = step(slot.world, actor, text)
    slot.transcript.append(f"{indent}{actor.name} > {text}    [{result.message.splitlines()[0]}]")
    who = slot.goal.reached_by(slot.world, actor, result.action) if result.success and slot.act_goal is None else None
    slot.act_goal = slot.act_goal or who
    return act_reward(who is not None)


@dataclass
class DemoTurn:
    """One self turn of a demonstration as the environment shows it: the context, what was done, the valid actions."""

    context: str
    kind: str  # "action" or "speech"
    text: str
    valid_actions: list[str]


def demonstration_turns(
    instance: QuestInstance, motivations: Sequence[str] = ("short", "mid", "long")
) -> list[DemoTurn]:
    """Replay a demonstration through the engine exactly as :class:`QuestEnv` plays (the partner's turns, then the
    self's): the supervised examples of behaviour cloning. Stops where the act goal is reached, as an episode does."""
    if instance.demo is None:
        return []
    slot = new_slot(instance)
    turns = []
    for i, act in enumerate(instance.demo.acts):
        kind = "action" if act.type == "action" else "speech"
        if i % 2 == 0:
            play_turn(slot, "partner", kind, act.text)
        else:
            turns.append(
                DemoTurn(
                    slot_context(slot, "self", motivations), kind, act.text, list(valid_actions(slot.world, slot.me))
                )
            )
            play_turn(slot, "self", kind, act.text)
        if slot.act_goal is not None:
            break
    return turns


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
        speech_goal_threshold: float = 0.5,
        auto_reset: bool = True,
        sampler: Callable[[random.Random], int] | None = None,
        seed: int = 0,
        top_k_every_repeat: bool = False,
        default_turns: int = 20,
    ):
        """``max_steps``: agent turns per episode, or ``None`` for the demonstration's own number of self turns
        (``default_turns`` for a quest without one). ``top_k_every_repeat``: pay the DM's top-k bonus on every
        repeat of an utterance (the paper's literal reading; farmable, see :mod:`lq.envs.rewards`)."""
        if not instances:
            raise ValueError("no quests to play: QuestEnv needs quest instances with worlds")
        self.instances = list(instances)
        self.partner, self.dm = partner, dm
        self.utterance_space = dm.utterances.texts
        self.utterance_index = dm.utterances.index
        self.action_space = list(action_space)
        self.action_index = {a: i for i, a in enumerate(self.action_space)}
        self.batch_size, self.max_steps, self.default_turns = batch_size, max_steps, default_turns
        self.motivations = tuple(motivations)
        self.speech_goal_threshold = speech_goal_threshold
        self.top_k_every_repeat = top_k_every_repeat
        self.auto_reset = auto_reset
        self.rng = random.Random(seed)
        self.sampler = sampler or (lambda rng: rng.randrange(len(self.instances)))
        self.slots: list[_Slot] = []

    # -- episodes ------------------------------------------------------------------------------------

    def reset(self, indices: Sequence[int] | None = None) -> tuple[list[str], list[dict]]:
        """Start a batch of episodes (on ``indices`` of the instances, or sampled)."""
        if indices is None:
            indices = [self.sampler(self.rng) for _ in range(self.batch_size)]
        self.slots = [new_slot(self.instances[i], i) for i in indices]
        self._partner_turns(list(range(len(self.slots))))  # the partner speaks first, as in the demonstrations
        return self._observe([{} for _ in self.slots])

    def context(self, slot: _Slot, side: str = "self") -> str:
        return slot_context(slot, side, self.motivations)

    def turn_limit(self, slot: _Slot) -> int:
        if self.max_steps is not None:
            return self.max_steps
        return slot.instance.turns or self.default_turns

    # -- the Dungeon Master's valid utterances -------------------------------------------------------

    def valid_utterances(self, which: Sequence[int]) -> list[list[int]]:
        """The DM's M valid utterances (ids into the utterance space, most likely first) for the current context of
        each slot in ``which``; its first k earn the top-k bonus. Ranked once per context."""
        todo = [i for i in which if self.slots[i].valid_utterance_ids is None]
        if todo:
            ranked = self.dm.rank([self.context(self.slots[i]) for i in todo])
            for i, ids in zip(todo, ranked.tolist(), strict=True):
                self.slots[i].valid_utterance_ids = ids
        return [self.slots[i].valid_utterance_ids for i in which]

    # -- turns ---------------------------------------------------------------------------------------

    def _agent_turn(self, slot: _Slot, kind: str, text: str) -> tuple[float, float]:
        """Play the agent's turn (its utterance already ranked by the DM); returns its act and speech rewards."""
        speech = 0.0
        if kind != "action":
            top_k = slot.valid_utterance_ids[: self.dm.top_k]
            in_top_k = self.utterance_index.get(text, -1) in top_k
            demo = set(slot.instance.demo_utterances)
            speech = speech_reward(slot.speech, text, demo, in_top_k, self.top_k_every_repeat)
        return play_turn(slot, "self", kind, text), speech

    def _kind_of(self, slot: _Slot, text: str) -> Turn:
        return (
            ("action", text)
            if text in valid_actions(slot.world, slot.me) or text in self.action_index
            else ("speech", text)
        )

    def _partner_turns(self, which: list[int]) -> list[float]:
        """The partner's turn in each of ``which``; returns the act reward each earned (partner completion)."""
        if not which:
            return []
        slots = [self.slots[i] for i in which]
        if hasattr(self.partner, "slot_order"):
            self.partner.slot_order = which
        turns = self.partner.act(
            [self.context(s, "partner") for s in slots], [list(valid_actions(s.world, s.partner)) for s in slots]
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
            act, speech = self._agent_turn(slot, *turns[i])
            slot.steps += 1
            slot.speech_reward += speech
            rewards[i] = act + speech
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
                index = self.sampler(self.rng)
                self.slots[i] = new_slot(self.instances[index], index)
            self._partner_turns(finished)
        obs, infos = self._observe(infos)
        return obs, rewards, dones, infos

    def _over(self, slot: _Slot) -> bool:
        return slot.act_goal is not None or slot.steps >= self.turn_limit(slot)

    def speech_goal(self, slot: _Slot) -> bool:
        return slot.speech_score >= self.speech_goal_threshold - 1e-9

    def episode_summary(self, slot: _Slot) -> dict:
        return {
            "quest_id": slot.instance.quest.quest_id,
            "instance": slot.index,
            "act_goal": slot.act_goal is not None,
            "act_goal_by": slot.act_goal,
            "speech_goal": self.speech_goal(slot),
            "speech_reward": slot.speech_reward,
            "speech_score": slot.speech_score,
            "return": slot.episode_return,
            "steps": slot.steps,
            "transcript": "\n".join(slot.transcript),
        }

    def _observe(self, infos: list[dict]) -> tuple[list[str], list[dict]]:
        """Observations and infos of every slot: the quest (``instance``, its index), the engine's valid actions (as
        text and as ids into the action space), the goals reached so far. An ended episode (without auto-reset)
        keeps its last observation."""
        obs = [self.context(s) for s in self.slots]
        for slot, info in zip(self.slots, infos, strict=True):
            engine_valid = list(valid_actions(slot.world, slot.me))
            info.update(
                instance=slot.index,
                valid_actions=engine_valid,
                valid_action_ids=[self.action_index[a] for a in engine_valid if a in self.action_index],
                act_goal=slot.act_goal is not None,
                speech_goal=self.speech_goal(slot),
                quest_id=slot.instance.quest.quest_id,
                steps=slot.steps,
            )
        return obs, infos
