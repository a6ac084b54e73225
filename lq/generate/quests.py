"""LIGHT-Quests stems: goal, 7-step timeline and three motivations, coherent under the engine.

Following the original collection (paper 3.1, 7.1): in its quest's starting room the self character has
done three things (the past timeline, played through the engine, so a past "get sword" makes
"wield sword" possible now); the goal is one of its valid actions now; three future actions follow
it. The short motivation names the goal, the mid one the next purpose (the future), the long one
a life aim tied to the persona.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from lq.data.quests import Quest, TimelineStep
from lq.data.world_graph import WorldGraph
from lq.generate.worlds import Pools, build_quest_world
from lq.world import Action, World, step, valid_actions

PAST_LABELS = [
    "4 hours ago",
    "2 hours ago",
    "1 hour ago",
    "30 minutes ago",
    "15 minutes ago",
    "10 minutes ago",
    "5 minutes ago",
]
FUTURE_LABELS = [
    "5 minutes from now",
    "10 minutes from now",
    "15 minutes from now",
    "30 minutes from now",
    "1 hour from now",
    "2 hours from now",
    "8 hours from now",
    "1 day from now",
]
# How often each verb is the goal, roughly as in the released quests (acquiring things dominates).
GOAL_WEIGHTS = {
    "get": 3.0,
    "steal": 2.0,
    "give": 2.0,
    "hit": 1.5,
    "hug": 1.0,
    "wear": 1.0,
    "wield": 1.0,
    "eat": 0.8,
    "drink": 0.8,
    "put": 0.5,
    "drop": 0.3,
    "remove": 0.4,
    "follow": 0.3,
}
PAST_WEIGHTS = {**GOAL_WEIGHTS, "follow": 0.0, "go": 0.0}
FUTURE_WEIGHTS = {**GOAL_WEIGHTS, "go": 2.0}


def phrase(a: Action) -> str:
    """An action as an English infinitive phrase: "give the sword to the knight"."""
    o, t = a.obj.name, a.target.name if a.target is not None else ""
    return {
        "go": f"go to {a.obj.name if a.obj.name.lower().startswith('the ') else 'the ' + a.obj.name}",
        "get": f"get the {o}" + (f" from the {t}" if t else ""),
        "put": f"put the {o} {a.target.surface if t else 'in'} the {t}",
        "give": f"give the {o} to the {t}",
        "steal": f"steal the {o} from the {t}",
    }.get(a.verb, f"{a.verb} the {o}")


SHORT = {
    "get": [
        "I need to get the {o}.",
        "I must take the {o} before anyone else does.",
        "I want the {o} for myself.",
        "I have to pick up the {o}.",
        "The {o} must be mine.",
    ],
    "steal": [
        "I need to steal the {o} from the {t}.",
        "The {t} has the {o} and I mean to take it.",
        "I must get the {o} away from the {t}.",
        "I will have the {o} that the {t} carries.",
    ],
    "give": [
        "I need to give the {o} to the {t}.",
        "The {t} must have the {o}.",
        "I promised the {o} to the {t}.",
        "I have to hand the {o} over to the {t}.",
    ],
    "hit": [
        "I need to punish the {o}.",
        "The {o} deserves a beating.",
        "I must strike the {o}.",
        "I have to teach the {o} a lesson.",
    ],
    "hug": ["I need to comfort the {o}.", "I want to show the {o} how much I care.", "I must embrace the {o}."],
    "wear": ["I need to put on the {o}.", "I must wear the {o}.", "I want to be seen wearing the {o}."],
    "wield": ["I need to arm myself with the {o}.", "I must take up the {o}.", "I have to wield the {o}."],
    "remove": ["I need to take off the {o}.", "I must remove the {o}.", "The {o} has to come off."],
    "eat": ["I am starving and need to eat the {o}.", "I must eat the {o}.", "I have to eat the {o} now."],
    "drink": ["I am parched and need to drink the {o}.", "I must drink the {o}.", "I need a drink of the {o}."],
    "put": ["I need to put the {o} {p} the {t}.", "The {o} belongs {p} the {t}.", "I must place the {o} {p} the {t}."],
    "drop": ["I need to get rid of the {o}.", "I must drop the {o}.", "I have to leave the {o} here."],
    "follow": ["I need to follow the {o}.", "I must keep close to the {o}.", "I have to see where the {o} goes."],
}
MID = [
    "I need to {f1} so that I can {f2}.",
    "After that I must {f1}.",
    "Then I plan to {f1} and {f2}.",
    "I will {f1}, and later {f2}.",
    "My next task is to {f1}.",
    "Once that is done I need to {f2}.",
]
AIMS = {
    "knight": "I want to become the most honoured knight of the realm.",
    "dragon": "I need to build the largest hoard ever attained by any one dragon.",
    "king": "I want my kingdom to stand for a thousand years.",
    "queen": "I want my children to inherit a peaceful realm.",
    "smith": "I want to forge a blade that will be sung about for ages.",
    "merchant": "I want to become the richest trader on the coast.",
    "priest": "I want to bring every soul in this land to the faith.",
    "thief": "I want to pull off the greatest heist in history.",
    "farmer": "I want my farm to feed the whole valley.",
    "witch": "I want to master the oldest magic there is.",
    "wizard": "I want to unlock the secrets of the universe.",
    "guard": "I want to keep this place safe until my dying day.",
    "bard": "I want my songs to be sung long after I am gone.",
    "hunter": "I want to hunt the great beast of the forest.",
    "sailor": "I want to sail beyond the edge of the known world.",
    "pirate": "I want to rule the seas.",
    "prince": "I want to prove I am worthy of the crown.",
    "princess": "I want to choose my own destiny.",
    "monk": "I want to reach perfect peace of mind.",
    "healer": "I want no one in this land to die of sickness.",
    "soldier": "I want to return home a hero.",
    "bandit": "I want enough gold to never work again.",
    "ghost": "I want to finally find rest.",
    "goblin": "I want the biggest pile of shiny things in the caves.",
    "troll": "I want every traveller to fear my bridge.",
    "wolf": "I want my pack to survive the winter.",
}
GENERIC_AIMS = [
    "I want to be remembered long after I am gone.",
    "I want to make my family proud.",
    "I want to live a life of comfort and safety.",
    "I want to see the whole world.",
    "I want everyone in this land to know my name.",
    "I want to repay every debt I owe.",
    "I want to find where I truly belong.",
]


def _fmt(template: str, a: Action) -> str:
    t = a.target
    return template.format(o=a.obj.name, t=t.name if t else "", p=t.surface if t else "in")


def long_motivation(persona: str, name: str, rng: random.Random) -> str:
    text = f"{name} {persona}".lower()
    aims = [aim for key, aim in AIMS.items() if key in text]
    return rng.choice(aims) if aims else rng.choice(GENERIC_AIMS)


def undoes(a: Action, goal: Action, holder_before: str | None) -> bool:
    """Whether ``a`` takes back what ``goal`` achieved (a plan does not reverse its own goal)."""
    if a.obj is not goal.obj:
        return False
    if goal.verb in ("get", "steal"):
        return a.verb == "drop" or (a.verb in ("give", "put") and a.target is not None and a.target.id == holder_before)
    if goal.verb in ("give", "put"):
        return a.verb in ("steal", "get")
    if goal.verb in ("wear", "wield"):
        return a.verb == "remove"
    if goal.verb == "remove":
        return a.verb in ("wear", "wield")
    if goal.verb == "drop":
        return a.verb == "get"
    return False


def _pick(
    options: dict[str, Action],
    weights: dict[str, float],
    rng: random.Random,
    favour: set[str] = frozenset(),
    exclude: Callable[[Action], bool] | None = None,
) -> Action | None:
    """A weighted choice; actions on things the character touched earlier count double (coherence)."""
    items = [
        (a, weights.get(a.verb, 0.0) * (2.0 if a.obj.id in favour else 1.0))
        for a in options.values()
        if exclude is None or not exclude(a)
    ]
    items = [(a, w) for a, w in items if w > 0]
    if not items:
        return None
    return rng.choices([a for a, _ in items], weights=[w for _, w in items])[0]


def generate_quest(pools: Pools, rng: random.Random, quest_id: str) -> Quest | None:
    """One quest, or None when the sampled world offers too few actions (the caller samples again)."""
    graph, me_id, partner_id = build_quest_world(pools, rng)
    world = World(WorldGraph.from_json(graph))
    me = world[me_id]
    history: list[tuple[Action, str | None]] = []  # each action with the holder of its object before it

    def act(a: Action) -> None:
        history.append((a, a.obj.container.id if a.obj.container is not None else None))
        step(world, me, a.text)

    def fresh(a: Action) -> bool:  # neither repeats nor takes back an earlier step of the plan
        return not any(a.text == b.text or undoes(a, b, holder) for b, holder in history)

    past: list[Action] = []
    for _ in range(3):
        a = _pick(valid_actions(world, me), PAST_WEIGHTS, rng, exclude=lambda a: not fresh(a))
        if a is None:
            return None
        past.append(a)
        act(a)
    now = world.to_json()
    description = world.describe(me)
    touched = {a.obj.id for a in past} | {a.target.id for a in past if a.target is not None}
    goal = _pick(valid_actions(world, me), GOAL_WEIGHTS, rng, favour=touched, exclude=lambda a: not fresh(a))
    if goal is None:
        return None
    act(goal)
    future: list[Action] = []
    for _ in range(3):
        a = _pick(valid_actions(world, me), FUTURE_WEIGHTS, rng, favour={goal.obj.id}, exclude=lambda a: not fresh(a))
        if a is None:
            return None
        future.append(a)
        act(a)
    past_labels = sorted(rng.sample(range(len(PAST_LABELS)), 3))
    future_labels = sorted(rng.sample(range(len(FUTURE_LABELS)), 3))
    timeline = [TimelineStep(PAST_LABELS[i], a.text) for i, a in zip(past_labels, past, strict=True)]
    timeline += [TimelineStep(FUTURE_LABELS[i], a.text) for i, a in zip(future_labels, future, strict=True)]
    persona = me.persona
    mid = rng.choice(MID).format(f1=phrase(future[0]), f2=phrase(future[1]))
    return Quest(
        quest_id=quest_id,
        character=me.name,
        persona=persona,
        description=description,
        goal=goal.text,
        short_motivation=_fmt(rng.choice(SHORT[goal.verb]), goal),
        mid_motivation=mid,
        long_motivation=long_motivation(persona, me.name, rng),
        timeline=timeline,
        graph=WorldGraph.from_json(now),
        extra={"partner": world[partner_id].name, "self_id": me_id, "partner_id": partner_id},
    )


def quest_ids(quest: Quest) -> tuple[str, str]:
    """The self and partner node ids of a generated quest (kept in the stem's extra fields)."""
    extra: dict[str, Any] = quest.extra
    return extra["self_id"], extra["partner_id"]
