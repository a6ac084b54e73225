"""One quest being played, the part of :class:`lq.envs.quest_env.QuestEnv` that holds no batch: which quest and
demonstration an episode plays (:func:`instances_from_data`), its state (:class:`Slot`: the world, the two characters,
the goal, the speech score, the history), the transcript it writes (as the paper's appendix lays transcripts out),
the context each side reads (:func:`slot_context`), and one turn through the engine (:func:`play_turn`)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

from lq.data.context import Context, swap_sides
from lq.data.demos import Demonstration
from lq.data.quests import Quest
from lq.envs.rewards import SpeechScore, act_reward
from lq.world import ActGoal, Action, GoalError, Node, World, step, valid_actions


@dataclass
class DemoTurn:
    """One turn of a demonstration as the environment shows it to the side that took it: the context, what was done,
    the valid actions (:func:`lq.envs.replay.demonstration_turns` makes them; the partner's calibration reads them)."""

    context: str
    kind: str  # "action" or "speech"
    text: str
    valid_actions: list[str]


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
    """One instance per demonstration linked to its quest (``conv_info.quest_id``, ``self_id``, ``partner_id``: see
    :func:`lq.data.dataset.load_dataset`) whose goal the engine can play in the quest's graph. Demonstrations whose
    goal it cannot are left out with one warning that counts them and names the first quest file and goal."""
    out, bad = playable_instances(quests, demos)
    if bad:
        warnings.warn(f"left out {len(bad)} demonstrations whose goal cannot be played; first: {bad[0]}", stacklevel=2)
    return out


def playable_instances(
    quests: Sequence[Quest], demos: Sequence[Demonstration]
) -> tuple[list[QuestInstance], list[str]]:
    """The instances of the linked demonstrations whose goal can be played, and why each other one cannot."""
    by_id = {q.quest_id: q for q in quests}
    out, bad = [], []
    for d in demos:
        q = by_id.get(d.conv_extra.get("quest_id", ""))
        if q is None or q.graph is None:
            continue
        inst = QuestInstance(q, d, d.conv_extra["self_id"], d.conv_extra["partner_id"])
        problem = goal_problem(inst)
        if problem is None:
            out.append(inst)
        else:
            bad.append(problem)
    return out, bad


# the affordance a goal's object needs for its verb to be played at all
GOAL_NEEDS = {"get": "gettable", "steal": "gettable", "give": "gettable", "put": "gettable", "drop": "gettable",
              "wear": "wearable", "wield": "wieldable"}  # fmt: skip


def goal_problem(instance: QuestInstance) -> str | None:
    """Why the quest's goal is not executable in its graph for these two characters (None when it is)."""
    q = instance.quest
    where = f"{q.source or q.quest_id}: goal {q.goal!r}"
    world = World(q.graph)
    for side, node_id in (("self", instance.self_id), ("partner", instance.partner_id)):
        if node_id not in world.nodes or world.nodes[node_id].kind != "agent":
            return f"{where}: the {side} character {node_id!r} is not an agent of its graph"
    try:
        goal = ActGoal.parse(world, q.goal, instance.self_id, instance.partner_id)
    except GoalError as err:  # it names the goal itself
        return f"{q.source or q.quest_id}: {err}"
    if goal.satisfied(world):
        return f"{where}: it holds before any turn (nothing to play: a goal is credited on the turn that makes it true)"
    obj, needs = world.nodes[goal.obj_id], GOAL_NEEDS.get(goal.verb)
    if needs is not None and not getattr(obj, needs):
        return f"{where}: {obj.name!r} is not {needs} in its graph, so no turn can reach it"
    return None


# who plays each side unless told otherwise (``lq play --agent`` puts "a person" on the side a person plays)
PLAYERS = {"self": "the agent", "partner": "the environment's partner"}
ROLES = {"self": "the self character", "partner": "the partner"}


def credit(name: str, side: str, players: dict[str, str] | None = None) -> str:
    """A character with its side and who played it: "young jester (the self character, played by a person)"."""
    return f"{name} ({ROLES[side]}, played by {(players or PLAYERS)[side]})"


def goal_line(goal: str, name: str, side: str, players: dict[str, str] | None = None) -> str:
    """The transcript's line at the turn that reached the act goal, crediting who reached it."""
    return f"*** Act goal reached: {goal}, by {credit(name, side, players)} ***"


def outcome_line(summary: dict) -> str:
    """An episode's outcome from its summary (:meth:`lq.envs.quest_env.QuestEnv.episode_summary`): who reached the act
    goal (credited as :func:`credit` does), the speech goal, the agent turns; the last line of a transcript."""
    by, card = summary.get("act_goal_by"), summary.get("card", {})
    act = "act goal not reached"
    if by:
        act = f"act goal reached by {credit(card.get(by, {}).get('name', by), by, summary.get('players'))}"
    speech = "speech goal reached" if summary.get("speech_goal") else "speech goal not reached"
    return f"Outcome: {act}; {speech}; {summary.get('steps', 0)} agent turns"


@dataclass
class Slot:
    instance: QuestInstance
    world: World
    me: Node
    partner: Node
    goal: ActGoal
    speech: SpeechScore
    index: int = -1  # of the instance in the environment's list
    history: list[tuple[str, str, str]] = field(default_factory=list)
    witnessed: list[bool] = field(default_factory=list)  # per history turn: the other side saw or heard it
    start_room: Node | None = None  # where the self character stood when the quest opened
    left_start: bool = False  # a character has stood outside the starting room (only then does what each sees differ
    # from the quest's opening scene: the observation fix of 15af5d9 changed nothing else)
    steps: int = 0
    act_goal: str | None = None  # "self" or "partner" once reached
    speech_reward: float = 0.0
    episode_return: float = 0.0
    valid_utterance_ids: list[int] | None = None  # the DM's ranking for the current context, once asked for
    transcript: list[str] = field(default_factory=list)
    card: dict = field(default_factory=dict)  # the quest as it opened (:func:`quest_card`)
    turns: list[dict] = field(default_factory=list)  # each turn: side, name, kind, text, and an action's result
    reported: bool = False  # its episode summary has been given (the episode ended)
    goal_open: bool = False  # the goal action is in the action space and valid for the agent now
    goal_open_turns: int = 0  # agent turns played while it was (where the act goals are lost, lq.eval.LOST)
    goal_open_acts: int = 0  # of those, the turns the agent acted
    serial: int = -1  # the episode's place in the order its environment started episodes (QuestEnv.started)
    players: dict[str, str] = field(default_factory=lambda: dict(PLAYERS))  # who plays each side (transcripts credit)
    # what a side sees and may do, kept until the next turn is played (:func:`play_turn` is all that changes the
    # world; an ended episode is observed every step until its batch ends): key -> (turns played, value)
    seen: dict[tuple, tuple[int, object]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def speech_score(self) -> float:
        return self.speech.score

    def __getstate__(self) -> dict:
        """Pickled (an RL checkpoint's rollout) without what :func:`kept` holds: made again where it is read."""
        return {k: v for k, v in self.__dict__.items() if k != "seen"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.seen = {}  # a slot pickled before the cache existed has none either


def new_slot(instance: QuestInstance, index: int = -1) -> Slot:
    world = World(instance.quest.graph)
    goal = ActGoal.parse(world, instance.quest.goal, instance.self_id, instance.partner_id)
    speech = SpeechScore(len(instance.demo_utterances))
    slot = Slot(instance, world, world[instance.self_id], world[instance.partner_id], goal, speech, index)
    slot.start_room = slot.me.room
    slot.card = quest_card(slot)
    slot.transcript += transcript_header(slot.card)
    return slot


SELF_INDENT = " " * 24  # the agent's turns stand to the right of the partner's, as in the paper's appendix


def carrying(node: Node) -> str:
    """What a character carries, as the quest card lists it."""
    return ", ".join(n.name for n in node.contents.values()) or "Nothing."


def quest_card(slot: Slot) -> dict:
    """The quest as the paper's appendix transcripts open: setting, partner, self (each with persona and what it
    carries), the agent's motivation and goal."""
    quest = slot.instance.quest
    room = slot.me.container
    return {
        "quest_id": quest.quest_id,
        "goal": quest.goal,
        "setting": room.name + ". " + room.desc if room is not None else "",
        "partner": {"name": slot.partner.name, "persona": slot.partner.persona, "carrying": carrying(slot.partner)},
        "self": {"name": slot.me.name, "persona": slot.me.persona, "carrying": carrying(slot.me)},
        "motivation": quest.motivation("short"),
    }


def transcript_header(card: dict) -> list[str]:
    """:func:`quest_card` as the text transcript's first lines."""
    return [
        f"Quest {card['quest_id']} (goal: {card['goal']})",
        f"Setting     {card['setting']}".rstrip(),
        f"Partner:    {card['partner']['name']}.",
        f"  Persona   {card['partner']['persona']}",
        f"  Carrying  {card['partner']['carrying']}",
        f"Self:       {card['self']['name']}.",
        f"  Persona   {card['self']['persona']}",
        f"  Carrying  {card['self']['carrying']}",
        f"Motivation  {card['motivation']}",
        "",
    ]


def together(slot: Slot) -> bool:
    """Whether the two characters are in the same room now: only then does one see or hear the other (LIGHT's own
    engine: speech reaches those in the room, the room a character is in names its setting)."""
    return slot.me.room is not None and slot.me.room is slot.partner.room


def scene(slot: Slot, side: str) -> list[str]:
    """Where ``side``'s character is now, as a player's ``look`` shows it: the room, who is there and what each
    carries, from the world's state after the last turn (the quest card is only how the quest opened)."""
    me, other = (slot.me, slot.partner) if side == "self" else (slot.partner, slot.me)
    room = me.room
    lines = [f"Setting     {room.name}. {room.desc}".rstrip() if room is not None else "Setting     (nowhere)"]
    lines.append(f"You:        {me.name}, carrying {carrying(me)}")
    if together(slot):
        lines.append(f"Here:       {other.name}, carrying {carrying(other)}")
    else:
        lines.append(f"Not here:   {other.name}" + (f" (in {other.room.name})" if other.room is not None else ""))
    things = [n.name for n in room.contents.values() if n.kind == "object"] if room is not None else []
    lines.append(f"Objects     {', '.join(things) or 'none'}")
    return lines


def setting_name(slot: Slot, room: Node | None) -> str:
    """The setting's name as a character in ``room`` reads it: the demonstration's room category where the quest
    opened (what its human players read), elsewhere the room's own category, or its name where it has none."""
    if room is None:
        return ""
    if room is slot.start_room and slot.instance.demo:
        return slot.instance.demo.room_category
    return room.raw.get("category") or room.name


def seen_history(slot: Slot, side: str) -> list[tuple[str, str, str]]:
    """The turns ``side`` saw or heard: its own, and the other side's where it was there to see or hear them."""
    return [turn for turn, seen in zip(slot.history, slot.witnessed, strict=True) if seen or turn[0] == side]


def kept(slot: Slot, key: tuple, make):
    """``make()``, made once per turn of ``slot``: kept under ``key`` until the next turn is played (by
    :func:`play_turn`, which adds to the history: the number of turns played is the key's age)."""
    turn = len(slot.history)
    held = slot.seen.get(key)
    if held is None or held[0] != turn:
        held = slot.seen[key] = (turn, make())
    return held[1]


def slot_valid_actions(slot: Slot, side: str) -> dict[str, Action]:
    """:func:`lq.world.valid_actions` of ``side``'s character ("self" or "partner") now, by canonical text; made once
    per turn (the caller must not change it)."""
    actor = slot.me if side == "self" else slot.partner
    return kept(slot, ("valid", side), lambda: valid_actions(slot.world, actor))


def slot_context(slot: Slot, side: str, motivations: Sequence[str], objects: bool = False) -> str:
    """What ``side`` ("self" or "partner") sees now, from the world's state after the last turn: its room's setting,
    its persona and what it carries, the other character only when it is in the same room, the dialogue and actions
    it saw or heard, and for the self character its motivations; with ``objects``, the self character also sees the
    room's objects and what the partner carries (the partner's and the DM's models are trained without them). Made
    once per turn."""
    key = ("context", side, tuple(motivations), objects)
    return kept(slot, key, lambda: _context(slot, side, motivations, objects))


def _context(slot: Slot, side: str, motivations: Sequence[str], objects: bool) -> str:
    me, other = (slot.me, slot.partner) if side == "self" else (slot.partner, slot.me)
    room = me.room
    present = together(slot)
    seen = objects and side == "self" and room is not None
    history = seen_history(slot, side)
    return Context(
        setting_name=setting_name(slot, room),
        setting_desc=room.desc if room is not None else "",
        self_name=me.name,
        self_persona=me.persona,
        partner_name=other.name if present else "",
        partner_persona=other.persona if present else "",
        carrying=[n.name for n in me.contents.values()],
        objects=[n.name for n in room.contents.values() if n.kind == "object"] if seen else [],
        partner_carrying=[n.name for n in other.contents.values() if n.kind == "object"] if seen and present else [],
        motivations={lvl: slot.instance.quest.motivation(lvl) for lvl in motivations} if side == "self" else {},
        history=history if side == "self" else swap_sides(history),
    ).serialise(motivations if side == "self" else ())


def play_turn(slot: Slot, side: str, kind: str, text: str) -> float:
    """Play one turn of ``side``: an action goes through the engine, an utterance into the history. Returns the
    act reward (1 when this turn reaches the act goal). The only change to a slot's world and history: what
    :func:`kept` holds is made again after it (a world changed elsewhere would be seen stale)."""
    actor = slot.me if side == "self" else slot.partner
    indent = SELF_INDENT if side == "self" else ""
    slot.history.append((side, kind, text))
    slot.witnessed.append(together(slot))  # an utterance is heard, an action seen, by one in the room
    turn = {"side": side, "name": actor.name, "kind": kind, "text": text}
    slot.turns.append(turn)
    if kind != "action":
        slot.transcript.append(f"{indent}{actor.name}: {text}" + ("" if slot.witnessed[-1] else "    [no one hears]"))
        return act_reward(False)
    held = slot.act_goal is None and slot.goal.satisfied(slot.world)  # a goal is credited on the turn making it true
    result = step(slot.world, actor, text)
    slot.witnessed[-1] = slot.witnessed[-1] or together(slot)  # one who arrives is seen arriving
    slot.left_start = slot.left_start or any(c.room is not slot.start_room for c in (slot.me, slot.partner))
    turn["result"] = result.message.splitlines()[0] if result.message else ""
    slot.transcript.append(f"{indent}{actor.name} > {text}    [{turn['result']}]")
    reached = result.success and slot.act_goal is None
    who = slot.goal.reached_by(slot.world, actor, result.action, held) if reached else None
    slot.act_goal = slot.act_goal or who
    if who is not None:
        turn["reached_goal"] = True
        reacher = slot.me if who == "self" else slot.partner
        slot.transcript.append(goal_line(slot.goal.text, reacher.name, who, slot.players))
    return act_reward(who is not None)
