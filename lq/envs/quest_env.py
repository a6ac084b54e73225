"""``QuestEnv``: LIGHT-Quests as a batched text environment (paper 4.1, Figure 4), in the TextWorld style.

``reset() -> (obs, infos)`` and ``step(commands) -> (obs, rewards, dones, infos)`` over a batch of
slots, each playing one quest: the agent (the self character) speaks or acts, the engine applies
actions, the frozen partner answers, and the Dungeon Master ranks utterances.

Rewards, as paper 4.1:

* act goal: 1 when the goal state is reached, by the agent's action (self act completion) or by
  the partner's (partner act completion), and 0 otherwise;
* speech: with n the number of the self character's utterances in this quest's demonstration,
  1/(2n) for an utterance of that demonstration (once per utterance per episode), plus 1/(2n) each
  time the utterance is among the DM's top-k for the context it was said in.

An episode ends when the act goal is reached or after ``max_steps`` agent turns.

The paper calls this naturalness objective the speech goal but gives no cut for "reached". Here the
episode's *speech score* counts both terms once per distinct utterance (the top-k term, unlike the
reward, cannot be earned again by repeating one highly ranked utterance), so it lies in [0, 1], and
the speech goal is reached when the score comes to ``speech_goal_threshold`` (0.5: as much as saying
the whole demonstration, or n distinct utterances the DM ranks in its top k).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lq.data.context import Context
from lq.data.demos import Demonstration
from lq.data.quests import Quest
from lq.envs.dungeon_master import DungeonMaster
from lq.envs.partner import Partner, Turn
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
    history: list[tuple[str, str, str]] = field(default_factory=list)
    steps: int = 0
    said: set[str] = field(default_factory=set)  # demonstration utterances said
    natural: set[str] = field(default_factory=set)  # distinct utterances said while in the DM's top k
    act_goal: str | None = None  # "self" or "partner" once reached
    speech_reward: float = 0.0
    speech_score: float = 0.0
    episode_return: float = 0.0
    dm_top_k: set[int] = field(default_factory=set)
    valid_utterance_ids: list[int] = field(default_factory=list)
    transcript: list[str] = field(default_factory=list)
    reported: bool = False  # its episode summary has been given (the episode ended)


def new_slot(instance: QuestInstance) -> _Slot:
    world = World(instance.quest.graph)
    goal = ActGoal.parse(world, instance.quest.goal, instance.self_id, instance.partner_id)
    slot = _Slot(instance, world, world[instance.self_id], world[instance.partner_id], goal)
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
    swap = {"self": "partner", "partner": "self"}
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
        history=slot.history if side == "self" else [(swap[w], k, t) for w, k, t in slot.history],
    ).serialise(motivations if side == "self" else ())


def play_turn(slot: _Slot, side: str, kind: str, text: str) -> float:
    """Play one turn of ``side``: an action goes through the engine, an utterance into the history. Returns the
    act reward (1 when this turn reaches the act goal)."""
    actor = slot.me if side == "self" else slot.partner
    indent = SELF_INDENT if side == "self" else ""
    slot.history.append((side, kind, text))
    if kind != "action":
        slot.transcript.append(f"{indent}{actor.name}: {text}")
        return 0.0
    result = step(slot.world, actor, text)
    slot.transcript.append(f"{indent}{actor.name} > {text}    [{result.message.splitlines()[0]}]")
    if result.success and slot.act_goal is None:
        who = slot.goal.reached_by(slot.world, actor, result.action)
        if who is not None:
            slot.act_goal = who
            return 1.0
    return 0.0


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
        max_steps: int = 100,
        motivations: Sequence[str] = ("short", "mid", "long"),
        speech_goal_threshold: float = 0.5,
        auto_reset: bool = True,
        sampler: Callable[[random.Random], int] | None = None,
        seed: int = 0,
    ):
        if not instances:
            raise ValueError("no quests to play: QuestEnv needs quest instances with worlds")
        self.instances = list(instances)
        self.partner, self.dm = partner, dm
        self.utterance_space = dm.utterances.texts
        self.utterance_index = dm.utterances.index
        self.action_space = list(action_space)
        self.action_index = {a: i for i, a in enumerate(self.action_space)}
        self.batch_size, self.max_steps = batch_size, max_steps
        self.motivations = tuple(motivations)
        self.speech_goal_threshold = speech_goal_threshold
        self.auto_reset = auto_reset
        self.rng = random.Random(seed)
        self.sampler = sampler or (lambda rng: rng.randrange(len(self.instances)))
        self.slots: list[_Slot] = []

    # -- episodes ------------------------------------------------------------------------------------

    def reset(self, indices: Sequence[int] | None = None) -> tuple[list[str], list[dict]]:
        """Start a batch of episodes (on ``indices`` of the instances, or sampled)."""
        if indices is None:
            indices = [self.sampler(self.rng) for _ in range(self.batch_size)]
        self.slots = [new_slot(self.instances[i]) for i in indices]
        self._partner_turns(list(range(len(self.slots))))  # the partner speaks first, as in the demonstrations
        return self._observe([{} for _ in self.slots])

    def context(self, slot: _Slot, side: str = "self") -> str:
        return slot_context(slot, side, self.motivations)

    # -- turns ---------------------------------------------------------------------------------------

    def _agent_turn(self, slot: _Slot, command: Command) -> tuple[float, float]:
        kind, text = command if isinstance(command, tuple) else self._kind_of(slot, command)
        act_reward = play_turn(slot, "self", kind, text)
        speech_reward = 0.0
        n = len(slot.instance.demo_utterances)
        if kind != "action" and n:
            if text in slot.instance.demo_utterances and text not in slot.said:
                speech_reward += 1 / (2 * n)
                slot.speech_score += 1 / (2 * n)
                slot.said.add(text)
            if self.utterance_index.get(text, -1) in slot.dm_top_k:
                speech_reward += 1 / (2 * n)
                if text not in slot.natural:
                    slot.speech_score += 1 / (2 * n)
                    slot.natural.add(text)
        return act_reward, speech_reward

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
        rewards, infos = [], []
        for slot, command in zip(self.slots, commands, strict=True):
            if self._over(slot):  # an episode that ended (no auto-reset): the command is ignored
                rewards.append(0.0)
                infos.append({"act_reward": 0.0, "speech_reward": 0.0})
                continue
            act, speech = self._agent_turn(slot, command)
            slot.steps += 1
            slot.speech_reward += speech
            rewards.append(act + speech)
            infos.append({"act_reward": act, "speech_reward": speech})
        playing = [i for i, s in enumerate(self.slots) if not self._over(s)]
        for i, partner_reward in zip(playing, self._partner_turns(playing), strict=True):
            rewards[i] += partner_reward
            infos[i]["act_reward"] += partner_reward
        dones = []
        for i, slot in enumerate(self.slots):
            slot.episode_return += rewards[i]
            dones.append(self._over(slot))
            if dones[-1] and not slot.reported:
                infos[i]["episode"] = self.episode_summary(slot)
                slot.reported = True
        if self.auto_reset:
            finished = [i for i, d in enumerate(dones) if d]
            for i in finished:
                self.slots[i] = new_slot(self.instances[self.sampler(self.rng)])
            self._partner_turns(finished)
        obs, infos = self._observe(infos)
        return obs, rewards, dones, infos

    def _over(self, slot: _Slot) -> bool:
        return slot.act_goal is not None or slot.steps >= self.max_steps

    def speech_goal(self, slot: _Slot) -> bool:
        return slot.speech_score >= self.speech_goal_threshold - 1e-9

    def episode_summary(self, slot: _Slot) -> dict:
        speech_goal = self.speech_goal(slot)
        return {
            "quest_id": slot.instance.quest.quest_id,
            "act_goal": slot.act_goal is not None,
            "act_goal_by": slot.act_goal,
            "speech_goal": speech_goal,
            "speech_reward": slot.speech_reward,
            "speech_score": slot.speech_score,
            "return": slot.episode_return,
            "steps": slot.steps,
            "transcript": "\n".join(slot.transcript),
        }

    def _observe(self, infos: list[dict]) -> tuple[list[str], list[dict]]:
        """Observations and infos of every slot; the DM ranks only for episodes still playing (an ended one, without
        auto-reset, keeps its last observation and valid sets)."""
        obs = [self.context(s) for s in self.slots]
        live = [i for i, s in enumerate(self.slots) if not s.reported]
        ranked = dict(zip(live, self.dm.rank([obs[i] for i in live]), strict=True))
        for i, (slot, info) in enumerate(zip(self.slots, infos, strict=True)):
            ids = ranked[i].tolist() if i in ranked else slot.valid_utterance_ids
            slot.valid_utterance_ids = ids
            slot.dm_top_k = set(ids[: self.dm.top_k])
            engine_valid = list(valid_actions(slot.world, slot.me))
            info.update(
                valid_actions=engine_valid,
                valid_action_ids=[self.action_index[a] for a in engine_valid if a in self.action_index],
                valid_utterance_ids=ids,
                act_goal=slot.act_goal is not None,
                speech_goal=self.speech_goal(slot),
                quest_id=slot.instance.quest.quest_id,
                steps=slot.steps,
            )
        return obs, infos
