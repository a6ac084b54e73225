"""Demonstrations of quests and goal-free episodes, played through the engine.

A demonstration alternates partner (even turns) and self (odd turns), about 13 turns with about
2 actions, as in the human ones (paper 3.1: 12.92 turns, 2.18 actions). The self character reaches
its goal itself, or persuades the partner to reach it (partner act completion), or, in a share of
them, does not reach it. Every action is one the engine lists as valid at that turn, and every
turn records the actor's valid actions in ``task_data.actions``.
"""

from __future__ import annotations

import random

from lq.data.demos import DemoAct, DemoCharacter, Demonstration
from lq.data.quests import Quest
from lq.data.world_graph import WorldGraph
from lq.generate.dialogue import PARTNER, SELF, Speaker, realise
from lq.generate.quests import phrase, quest_ids
from lq.generate.worlds import Pools, build_quest_world
from lq.world import ActGoal, Action, Node, World, step, valid_actions

TURNS = [9, 10, 11, 12, 12, 13, 13, 13, 13, 14, 14, 14, 15, 15, 16]  # mean 12.93, as in the human demonstrations
COMPLETION_SHARES = {"self": 0.62, "partner": 0.26, None: 0.12}
PARTNER_SIDE_VERBS = ("hug", "hit", "wear", "wield", "remove", "follow")


def _request(goal: Action, fix: Action | None) -> str:
    """What self asks of the partner: the partner's completing action, or to be let do the goal."""
    if fix is None:
        return f"let me {phrase(goal)}"
    if fix.verb == "give":
        return f"give me the {fix.obj.name}"
    if fix.verb == "steal":
        return f"take the {fix.obj.name} from me"
    if fix.verb == "hug":
        return "give me a hug"
    return phrase(fix)


def _partner_fix(world: World, goal: ActGoal, partner: Node) -> Action | None:
    """An action of the partner that reaches the goal for self (partner act completion), if any."""
    for text in valid_actions(world, partner):
        trial = world.copy()
        result = step(trial, trial[partner.id], text)
        if result.success and goal.reached_by(trial, trial[partner.id], result.action) == "partner":
            return result.action
    return None


class _Episode:
    """Turn bookkeeping: the acts so far, with each actor's valid actions recorded."""

    def __init__(self, world: World, partner: Node, me: Node):
        self.world, self.partner, self.me = world, partner, me
        self.acts: list[DemoAct] = []

    @property
    def actor(self) -> Node:
        return self.partner if len(self.acts) % 2 == 0 else self.me

    def say(self, text: str) -> None:
        self.acts.append(DemoAct("speech", text, actions=list(valid_actions(self.world, self.actor))))

    def act(self, text: str) -> Action:
        actor = self.actor
        listed = valid_actions(self.world, actor)
        result = step(self.world, actor, text)
        if not result.success:  # the plans below only choose listed actions
            raise RuntimeError(f"generated action '{text}' failed: {result.message}")
        # as listed: one of two things of one name has its own text ("get sword 2"), which the canonical one is not
        said = next((t for t, a in listed.items() if a == result.action), result.action.text)
        self.acts.append(DemoAct("action", said, actions=list(listed)))
        return result.action


def generate_demo(quest: Quest, rng: random.Random) -> Demonstration | None:
    """A demonstration of ``quest``; None when this quest cannot be played in the chosen way."""
    world = World(quest.graph)
    me_id, partner_id = quest_ids(quest)
    me, partner = world[me_id], world[partner_id]
    goal = ActGoal.parse(world, quest.goal, me_id, partner_id)
    goal_action = valid_actions(world, me).get(quest.goal)
    if goal_action is None:
        return None
    fix = _partner_fix(world, goal, partner)
    mode = rng.choices(list(COMPLETION_SHARES), weights=list(COMPLETION_SHARES.values()))[0]
    if mode == "partner" and fix is None:
        mode = "self"
    level = rng.choice(["short", "mid", "long"])
    motivation = quest.motivation(level)
    me_sp = Speaker(me.name, quest.persona, quest.short_motivation, quest.mid_motivation, quest.long_motivation)
    partner_sp = Speaker(partner.name, partner.persona)
    room = me.container.name
    request = _request(goal_action, fix if mode == "partner" else None)
    n = rng.choice(TURNS)
    ep = _Episode(world, partner, me)
    # where the actions go: self's goal action on an odd turn, the partner's fix on an even one
    act_turn = rng.choice(range(5 if mode == "partner" else 3, n - 1))
    if (act_turn % 2 == 1) != (mode != "partner"):
        act_turn += 1
    extra_self = rng.random() < 0.6
    partner_side = rng.random() < 0.7
    reached: str | None = None
    plan_self = [
        "greet",
        "motive_" + level,
        "introduce",
        "ask",
        rng.choice(["offer", "flatter", "threaten"]),
        "room",
        "motive_" + rng.choice(["short", "mid", "long"]),
        rng.choice(["offer", "flatter", "threaten"]),
        "ask",
        "room",
    ]
    plan_partner = [
        "greet",
        "ask_who",
        "ask_why",
        rng.choice(["hesitate", "refuse"]),
        "chat",
        rng.choice(["hesitate", "warn"]),
        "chat",
        "refuse",
        "warn",
        "chat",
    ]
    last_action_turn = -10
    # side actions must leave the completing action possible: (that action, who will take it)
    needed = (goal_action, me) if mode == "self" else (fix, partner) if mode == "partner" else None
    for turn in range(n):
        self_turn = turn % 2 == 1
        if turn == act_turn and mode is not None and reached is None:
            action = ep.act(goal_action.text if mode == "self" else fix.text)
            reached = goal.reached_by(world, ep.world[me_id if mode == "self" else partner_id], action)
            last_action_turn = turn
            continue
        if self_turn and extra_self and turn > 1 and turn != act_turn and turn - last_action_turn > 2 and turn < n - 1:
            side = _side_action(world, me, PARTNER_SIDE_VERBS + ("get",), needed, reached, rng, goal)
            if side is not None:
                ep.act(side.text)
                extra_self, last_action_turn = False, turn
                continue
        if not self_turn and partner_side and turn > 2 and turn - last_action_turn > 2 and turn != act_turn:
            side = _side_action(world, partner, PARTNER_SIDE_VERBS, needed, reached, rng, goal, untargeted=True)
            if side is not None:
                ep.act(side.text)
                partner_side, last_action_turn = False, turn
                continue
        if self_turn:
            if turn == last_action_turn + 1 and last_action_turn >= 0 and ep.acts[-1].type == "action":
                intent = "thank" if reached == "partner" else "after_act"
            elif turn >= n - 2 and reached is not None:
                intent = rng.choice(["thank", "farewell"]) if reached == "partner" else "farewell"
            else:
                intent = plan_self.pop(0) if plan_self else rng.choice(["ask", "room", "offer"])
            ep.say(realise(SELF, intent, me_sp, partner_sp, room, request, rng, _things(me)))
        else:
            if turn == last_action_turn + 1 and last_action_turn >= 0:
                intent = "react"
            elif mode == "partner" and reached is None and act_turn - turn <= 2 and turn > 0:
                intent = "agree"
            else:
                intent = plan_partner.pop(0) if plan_partner else "chat"
            ep.say(realise(PARTNER, intent, partner_sp, me_sp, room, request, rng, _things(partner)))
    if (mode is not None) != (reached is not None):
        return None
    category = quest.graph.nodes[me.container.id].raw.get("category", "") if quest.graph else ""
    return Demonstration(
        room_category=category or room,
        room_description=me.container.desc,
        partner=DemoCharacter(
            quest.graph.nodes[partner_id].raw.get("db_id", partner_id), partner.name, [partner.persona], ""
        ),
        self_character=DemoCharacter(
            quest.graph.nodes[me_id].raw.get("db_id", me_id), me.name, [quest.persona], motivation
        ),
        acts=ep.acts,
        conv_extra={
            "quest_id": quest.quest_id,
            "goal": quest.goal,
            "completion": reached,
            "self_id": me_id,
            "partner_id": partner_id,
            "motivation_level": level,
        },
    )


def _things(actor: Node) -> list[str]:
    """Names of the objects the actor can see: on the floor and carried."""
    room = actor.container
    seen = list(room.contents.values()) + list(actor.contents.values()) if room is not None else []
    return [n.name for n in seen if n.kind == "object"]


def _side_action(
    world: World,
    actor: Node,
    verbs: tuple[str, ...],
    needed: tuple[Action, Node] | None,
    reached: str | None,
    rng: random.Random,
    goal: ActGoal,
    untargeted: bool = False,
) -> Action | None:
    """A random action beside the plan: of these verbs, and until the goal is reached, one that neither
    reaches it (only the planned turn may) nor spoils the completing action."""
    options = [
        a
        for a in valid_actions(world, actor).values()
        if a.verb in verbs
        and not (untargeted and a.target is not None)
        and (reached is not None or _side_effect_free(world, actor, a, goal, needed))
    ]
    return rng.choice(options) if options else None


def _side_effect_free(world: World, actor: Node, a: Action, goal: ActGoal, needed: tuple[Action, Node] | None) -> bool:
    trial = world.copy()
    result = step(trial, trial[actor.id], a.text)
    if goal.reached_by(trial, trial[actor.id], result.action) is not None:
        return False
    return needed is None or needed[0].text in valid_actions(trial, trial[needed[1].id])


def generate_episode(pools: Pools, rng: random.Random, episode_id: str) -> Demonstration:
    """A goal-free LIGHT-style episode: two characters chatting and now and then acting, no quest."""
    graph, a_id, b_id = build_quest_world(pools, rng)
    world = World(WorldGraph.from_json(graph))
    a, b = world[a_id], world[b_id]
    sp_a, sp_b = Speaker(a.name, a.persona), Speaker(b.name, b.persona)
    room = a.container.name
    ep = _Episode(world, b, a)
    free_self = ["greet", "introduce", "room", "flatter", "room", "farewell"]
    free_partner = ["greet", "ask_who", "chat", "warn", "chat", "chat"]
    last = -10
    for turn in range(rng.choice(TURNS)):
        actor, other = (a, b) if turn % 2 == 1 else (b, a)
        if turn > 0 and turn - last > 2 and rng.random() < 0.2:
            options = [x for x in valid_actions(world, actor).values() if x.verb != "go"]
            if options:
                ep.act(rng.choice(options).text)
                last = turn
                continue
        if turn % 2 == 1:
            intent = "after_act" if turn == last + 1 else (free_self.pop(0) if free_self else "room")
            ep.say(realise(SELF, intent, sp_a, sp_b, room, "", rng, _things(a)))
        else:
            intent = "react" if turn == last + 1 else (free_partner.pop(0) if free_partner else "chat")
            ep.say(realise(PARTNER, intent, sp_b, sp_a, room, "", rng, _things(b)))
    category = graph["nodes"][a.container.id].get("category", "")
    return Demonstration(
        room_category=category or room,
        room_description=a.container.desc,
        partner=DemoCharacter(graph["nodes"][b_id].get("db_id", b_id), b.name, [b.persona], ""),
        self_character=DemoCharacter(graph["nodes"][a_id].get("db_id", a_id), a.name, [a.persona], ""),
        acts=ep.acts,
        conv_extra={"episode_id": episode_id, "graph": graph, "self_id": a_id, "partner_id": b_id},
    )
