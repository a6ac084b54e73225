"""Act goals (paper 4.1): has the goal state been reached, by the self character or by its partner?

A quest's goal is an action text ("get golden dragon egg", "give sword to knight", "hit knight").
Most goals are states: *get* and *steal* X are reached when self carries X in hand (picked up,
stolen, or given by the partner: partner act completion); *give X to Y* when Y holds X; *put X in C* when X is
in C; *wear* / *wield* / *remove* by the equipment of X on self; *drop X* when X lies on a room
floor; *go R* when self is in R; *follow Y* when self follows Y. Others are events: *hit Y*, *eat
X*, *drink X* need self to do them; *hug Y* is also reached when the partner Y hugs self.
"""

from __future__ import annotations

from dataclasses import dataclass

from lq.world.actions import VERBS, Action, arguments, split_verb
from lq.world.state import WIELDED, WORN, Node, World

SELF, PARTNER, OTHER = "self", "partner", "other"
EVENT_VERBS = ("hit", "hug", "eat", "drink")


class GoalError(ValueError):
    """A goal text that names an unknown verb or a thing not in the world."""


@dataclass(frozen=True)
class ActGoal:
    text: str
    verb: str
    obj_id: str
    target_id: str | None
    self_id: str
    partner_id: str | None = None

    @classmethod
    def parse(cls, world: World, text: str, self_id: str, partner_id: str | None = None) -> ActGoal:
        words = text.lower().split()
        verb, rest = split_verb(words) if words else (None, [])
        if verb is None or verb not in VERBS:
            raise GoalError(f"goal '{text}': unknown verb; goals use {', '.join(VERBS)}")
        if verb == "go" and rest[:1] == ["to"] and len(rest) > 1:
            rest = rest[1:]
        me = world.nodes[self_id]
        attempts = arguments(verb, rest)
        kinds = ("room" if verb == "go" else "agent" if verb in ("follow", "hit", "hug") else "object",)
        kinds += ("agent" if verb in ("give", "steal") else "object",)
        missing: tuple[str, str] | None = None
        for obj_key, target_key in attempts:
            obj = _find(world, me, obj_key, kinds[0])
            target = _find(world, me, target_key, kinds[1]) if target_key else None
            if obj is not None and (target_key is None or target is not None):
                return cls(text, verb, obj.id, target.id if target else None, self_id, partner_id)
            missing = missing or ((obj_key, kinds[0]) if obj is None else (target_key or "", kinds[1]))
        name, kind = missing or (" ".join(rest), kinds[0])
        there = sorted({n.name for n in world.nodes.values() if n.kind == kind})
        shown = ", ".join(there[:8]) + (", ..." if len(there) > 8 else "") or "none"
        label = "character" if kind == "agent" else kind
        raise GoalError(
            f"goal '{text}': no {label} '{name}' in this world; name one of its {label}s ({shown}) or add it to the "
            "quest's graph"
        )

    def satisfied(self, world: World) -> bool:
        """Whether the goal *state* holds now (always False for event goals, which need the act itself)."""
        me, obj = world.nodes.get(self.self_id), world.nodes.get(self.obj_id)
        if me is None or obj is None or self.verb in EVENT_VERBS:
            return False
        v = self.verb
        if v in ("get", "steal"):  # in hand: taking it out of one's own bag also reaches "get X from bag"
            return obj.container is me
        if v == "give":
            t = world.nodes.get(self.target_id)
            return t is not None and t.holds(obj)
        if v == "put":
            return obj.container is not None and obj.container.id == self.target_id
        if v == "drop":
            return obj.container is not None and obj.container.kind == "room"
        if v in ("wear", "wield"):
            return obj.container is me and obj.equipped == (WORN if v == "wear" else WIELDED)
        if v == "remove":
            return obj.container is me and obj.equipped is None
        if v == "go":
            return me.container is obj
        if v == "follow":
            return me.following is obj
        return False

    def reached_by(self, world: World, actor: Node, action: Action, held: bool = False) -> str | None:
        """After ``actor`` did ``action`` (successfully): who reached the goal with it, if it is reached. ``held``:
        whether the goal state held before the action (:meth:`satisfied` then); an action that leaves it as it was
        reaches nothing: a goal is credited on the turn that makes it true, not on any turn while it holds."""
        role = SELF if actor.id == self.self_id else PARTNER if actor.id == self.partner_id else OTHER
        if self.verb in EVENT_VERBS:
            if action.verb != self.verb:
                return None
            if role == SELF and action.obj.id == self.obj_id:
                return SELF
            # a hug goal is mutual: the partner hugging self reaches it too
            if self.verb == "hug" and role == PARTNER and actor.id == self.obj_id and action.obj.id == self.self_id:
                return PARTNER
            return None
        return role if not held and self.satisfied(world) else None


def _find(world: World, me: Node, key: str | None, kind: str) -> Node | None:
    """The thing a goal names: nearest first (carried, in the room, one level down), then anywhere."""
    if not key:
        return None
    room = me.container
    near: list[Node] = list(me.contents.values())
    if room is not None:
        near += [room] + list(room.contents.values())
        for n in room.contents.values():
            near += list(n.contents.values())
        near += [world.nodes[r] for r in room.neighbors if r in world.nodes]
    for n in near + list(world.nodes.values()):
        if n.kind == kind and n.key == key and n is not me:
            return n
    return None
