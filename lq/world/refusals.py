"""Why an action cannot be done, read from the world's state: :func:`refusal`, through which every refusal of the quest
verbs goes (the engine's parser and so ``step``, ``lq play``, the quest environment's transcripts and the Gymnasium
environment's ``info["refusal"]``).

A refusal says what stands in the way, second person, for the actor, and where another command would do what was
meant, that command, as the listing names it (``Try 'get hat'.``):

- a name seen nowhere here: ``You don't see 'hat' here.`` (a twin's number that no longer applies, ``sword 1`` once
  one sword is left, is told so);
- a thing here but not carried (``drop hat`` on the floor), carried already (``get hat`` in hand), inside a container,
  or held by a character (``get key from veteran``: ``steal``, the verb that takes from a character);
- the wrong kind of thing: a character is not a container (``put hat in knight``: ``give``), a container is not a
  character (``give hat to chest``: ``put``), a thing is not a character (``hug hat``), not a place (``go hat``);
- the thing's own state: already worn or wielded, equipped (``remove`` it first), not wearable, not food, too big;
- the room left: in a container, a character, the room, the actor's hands.
"""

from __future__ import annotations

import re

from lq.world.scope import candidates, command_text, in_sight, name_in, named
from lq.world.state import WIELDED, WORN, Node, World
from lq.world.text import capitalize

# verbs whose object is one of the things the actor carries
CARRIED = ("put", "drop", "give", "wear", "wield", "remove", "eat", "drink")
_TWIN = re.compile(r"(.+) (\d+)")


def refusal(world: World, actor: Node, verb: str, obj: Node | str, target: Node | str | None = None) -> str | None:
    """Why ``actor`` cannot ``verb`` ``obj`` (``target``) now, or ``None`` if it can.

    ``obj`` and ``target`` are nodes, or names (normalised as typed: :func:`lq.world.text.normalize`) that named none
    of the verb's candidates (:func:`lq.world.scope.candidates`); a name is then looked for in sight, so the reason
    says where the thing is. Raises ``ValueError`` for a verb that is not one of :data:`lq.world.actions.VERBS`.
    """
    return explain(world, actor, verb, obj, target)[0]


def explain(
    world: World, actor: Node, verb: str, obj: Node | str, target: Node | str | None = None
) -> tuple[str | None, bool]:
    """:func:`refusal`, and whether every name it was given is seen here (the parser prefers, among its readings of
    one command, a reason about things seen to ``You don't see ...``)."""
    if isinstance(target, str):
        return _unseen_target(world, actor, verb, obj, target)
    if isinstance(obj, str):
        return _unseen_object(world, actor, verb, obj, target)
    return why_not(world, actor, verb, obj, target), True


# -- the thing's and the actor's own state ------------------------------------------------------------


def _here(actor: Node, other: Node) -> bool:
    return other.container is actor.container and other is not actor


def _reachable_container(actor: Node, c: Node) -> bool:
    return c.kind == "object" and c.is_container and (c.container is actor.container or c.container is actor)


def _not_an_open_container(actor: Node, t: Node) -> str | None:
    """Why ``t`` is no container to get from or put in now (not one; one out of reach), else None."""
    if t.kind != "object" or not t.is_container:
        return f"{capitalize(t.the())} is not a container."
    return None if _reachable_container(actor, t) else f"{capitalize(t.the())} is out of your reach."


def _try(world: World, actor: Node, verb: str, o: Node, t: Node | None = None) -> str:
    """`` Try 'COMMAND'.`` for the command that does ``verb o (t)`` now, as the listing names it, else ``""``."""
    if why_not(world, actor, verb, o, t) is not None:
        return ""
    if t is None:
        return f" Try '{command_text(verb, name_in(world, actor, verb, 'obj', o))}'."
    inner = list(t.contents.values()) if verb in ("get", "steal") else None
    text = command_text(
        verb, name_in(world, actor, verb, "obj", o, inner), name_in(world, actor, verb, "target", t), t.surface
    )
    return f" Try '{text}'."


def _equipped(world: World, actor: Node, o: Node) -> str:
    """Why a worn or wielded thing cannot be put down or handed over: it must come off first."""
    how = "wearing" if o.equipped == WORN else "wielding"
    return f"You are {how} {o.the()}: remove it first.{_try(world, actor, 'remove', o)}"


def why_not(world: World, actor: Node, verb: str, o: Node, t: Node | None = None) -> str | None:
    """Why ``actor`` cannot ``verb`` the node ``o`` (``t``) now, or ``None`` if it can (the preconditions of the quest
    verbs, as LIGHT's engine checks them: sizes, the wield and wear limits, what is where)."""
    if verb == "go":
        room = actor.container
        if o.kind != "room":
            return f"{capitalize(o.the())} is not a place you can go to."
        if o is room:
            return f"You are already in {o.name}."
        if room is None or o.id not in room.neighbors:
            return f"You can't go to {o.name} from here."
        return None if o.fits(actor) else f"There's not enough room for you in {o.name}."
    if verb in ("follow", "hit", "hug"):
        if o is actor:
            return f"You can't {verb} yourself."
        if o.kind != "agent":
            return f"You can't {verb} {o.the()}: it is not a character."
        if not _here(actor, o):
            return f"{capitalize(o.the())} is not here."
        if verb == "follow" and actor.following is o:
            return f"You are already following {o.the()}."
        return None
    if verb not in ("get", "put", "drop", "give", "steal", "wear", "wield", "remove", "eat", "drink"):
        raise ValueError(f"unknown verb {verb!r}")
    if o.kind != "object":
        return f"You can't {verb} {o.the()}."
    if verb == "get":
        return _why_not_get(world, actor, o, t)
    if verb == "steal":
        return _why_not_steal(world, actor, o, t)
    if o.container is not actor:
        return _not_carried(world, actor, o)
    if verb == "remove":
        return None if o.equipped else f"You aren't wearing or wielding {o.the()}."
    if verb in ("eat", "drink"):
        able = o.food if verb == "eat" else o.drink
        return None if able else f"{capitalize(o.the())} is not something you can {verb}."
    if verb in ("wear", "wield"):
        return _why_not_equip(world, actor, verb, o)
    if o.equipped is not None:
        return _equipped(world, actor, o)
    if verb == "drop":
        return None if actor.container.fits(o) else f"There's no room here to drop {o.the()}."
    if verb == "put":
        return _why_not_put(world, actor, o, t)
    return _why_not_give(world, actor, o, t)


def _why_not_get(world: World, actor: Node, o: Node, t: Node | None) -> str | None:
    if o.container is actor:
        return f"You already have {o.the()}."
    if t is None and o.container is not actor.container:
        return _elsewhere(world, actor, o, f"{capitalize(o.the())} is not on the floor here")
    if t is not None:
        if t.kind == "agent":  # taken from a character: steal, the verb that does it
            if o.container is not t:
                return _elsewhere(world, actor, o, _absent(t, o.name))
            if o.equipped is not None:
                return f"{_wears(t, o)}: a thing worn or wielded can't be taken."
            return (
                f"{capitalize(t.the())} has {o.the()}: from a character, you steal.{_try(world, actor, 'steal', o, t)}"
            )
        if reason := _not_an_open_container(actor, t):
            return reason
        if o.container is not t:
            return _elsewhere(world, actor, o, f"{capitalize(o.the())} is not {t.surface} {t.the()}")
    if not o.gettable:
        return f"You can't pick up {o.the()}."
    return None if actor.fits(o) else f"You can't get {o.the()}: you can't carry that much more."


def _why_not_steal(world: World, actor: Node, o: Node, t: Node | None) -> str | None:
    if t is None:
        return "There is no one here to steal from."
    if t.kind != "agent":
        if o.container is t:
            return f"{capitalize(t.the())} is not a character.{_try(world, actor, 'get', o, t)}"
        return _elsewhere(world, actor, o, f"{capitalize(t.the())} is not a character")
    if not _here(actor, t):
        return f"{capitalize(t.the())} is not here."
    if o.container is actor:
        return f"You already have {o.the()}."
    if o.container is not t:
        return _elsewhere(world, actor, o, f"{capitalize(t.the())} has no {o.name}")
    if o.equipped is not None:
        return f"{_wears(t, o)}: a thing worn or wielded can't be stolen."
    if not o.gettable:
        return f"{capitalize(t.the())} has no {o.name} you could take."
    return None if actor.fits(o) else f"You can't steal {o.the()}: you can't carry that much more."


def _why_not_equip(world: World, actor: Node, verb: str, o: Node) -> str | None:
    done, other = (WORN, WIELDED) if verb == "wear" else (WIELDED, WORN)
    if o.equipped == done:
        return f"You are already {verb}ing {o.the()}."
    if o.equipped == other:
        return _equipped(world, actor, o)
    if not (o.wearable if verb == "wear" else o.wieldable):
        return f"{capitalize(o.the())} is not something you can {verb}."
    limit = actor.max_worn if verb == "wear" else actor.max_wielded
    return None if actor.equipped_count(done) < limit else f"You can't {verb} any more items."


def _why_not_put(world: World, actor: Node, o: Node, t: Node | None) -> str | None:
    if t is None:
        return f"You can't put {o.the()} there."
    if t is o:
        return f"You can't put {o.the()} {t.surface} itself."
    if t.kind == "agent":
        return f"{capitalize(t.the())} is not a container.{_try(world, actor, 'give', o, t)}"
    if reason := _not_an_open_container(actor, t):
        return reason
    return None if t.fits(o) else f"You can't put {o.the()} {t.surface} {t.the()}: there's no room left for it."


def _why_not_give(world: World, actor: Node, o: Node, t: Node | None) -> str | None:
    if t is None:
        return "There is no one here to take it."
    if t.kind != "agent":
        hint = _try(world, actor, "put", o, t) if t.kind == "object" and t.is_container else ""
        return f"{capitalize(t.the())} is not a character.{hint}"
    if not _here(actor, t):
        return f"{capitalize(t.the())} is not here."
    return None if t.fits(o) else f"{capitalize(t.the())} has no room to carry {o.the()}."


# -- where a thing is ----------------------------------------------------------------------------------


def _wears(holder: Node, o: Node) -> str:
    """``The knight wears the helm`` (or wields)."""
    return f"{capitalize(holder.the())} {'wears' if o.equipped == WORN else 'wields'} {o.the()}"


def _not_carried(world: World, actor: Node, o: Node) -> str:
    return _elsewhere(world, actor, o, f"You aren't carrying {o.the()}")


def _elsewhere(world: World, actor: Node, o: Node, what: str) -> str:
    """``what`` (the refusal), then where ``o`` is and the command that would take it from there."""
    holder, room = o.container, actor.container
    if holder is None or o.room is not room:
        return f"{what}."
    if holder is actor:
        return f"{what}: you have it."
    if holder is room:
        return f"{what}: it is here.{_try(world, actor, 'get', o)}"
    if holder.kind == "agent":
        if o.equipped is not None:
            return f"{what}: {_wears(holder, o)}."
        return f"{what}: {holder.the()} has it.{_try(world, actor, 'steal', o, holder)}"
    return f"{what}: it is {holder.surface} {holder.the()}.{_try(world, actor, 'get', o, holder)}"


def _quoted(key: str) -> str:
    """A typed name as a refusal quotes it: ``'hat'``."""
    return f"'{key}'"


def _absent(t: Node, name: str) -> str:
    """That ``t`` (a character or a container) holds nothing called ``name``."""
    return (
        f"{capitalize(t.the())} has no '{name}'" if t.kind == "agent" else f"There is no '{name}' {t.surface} {t.the()}"
    )


def _seen(world: World, actor: Node, key: str) -> list[Node]:
    """The nodes in sight that ``key`` names by their own name (the actor and its room itself last)."""
    room = actor.container
    return named(in_sight(world, actor) + [actor] + ([room] if room is not None else []), key, numbered=False)


def _not_seen(key: str, scope: list[Node]) -> str:
    """``You don't see ...``, or, for a twin's number that no longer applies (``sword 1`` once one sword is left among
    ``scope``, the argument's candidates), the name that does."""
    twin = _TWIN.fullmatch(key)
    if twin and len(named(scope, twin[1])) == 1:
        return f"There is only one {twin[1]} here now: call it '{twin[1]}', not '{key}'."
    return f"You don't see '{key}' here."


def _unseen_object(world: World, actor: Node, verb: str, key: str, t: Node | None) -> tuple[str, bool]:
    """Why: ``key`` names none of the verb's candidates for its object (inside ``t`` for get and steal)."""
    seen = _seen(world, actor, key)
    if not seen:
        if t is not None and verb in ("get", "steal"):
            why = _not_seen(key, list(t.contents.values()))
            if why.startswith("You don't see"):  # nothing of that name anywhere here: say where it was looked for
                why = f"{_absent(t, _quoted(key))}."
            return why, False
        return _not_seen(key, list(candidates(world, actor, verb, "obj"))), False
    o = seen[0]
    if verb in ("get", "steal") and t is not None and o.kind == "object":
        return why_not(world, actor, verb, o, t) or f"There is no '{key}' {t.surface} {t.the()}.", True
    if verb in CARRIED and o.kind == "object" and o.container is not actor:
        return _not_carried(world, actor, o), True
    return why_not(world, actor, verb, o, t), True


def _unseen_target(world: World, actor: Node, verb: str, obj: Node | str, key: str) -> tuple[str, bool]:
    """Why: ``key`` names none of the verb's candidates for its target (a container, or a character for give and
    steal)."""
    seen = _seen(world, actor, key)
    if not seen:
        return _not_seen(key, list(candidates(world, actor, verb, "target"))), False
    t = seen[0]
    if verb in ("get", "steal"):  # the object is looked for inside the target
        inside = named(t.contents.values(), obj) if isinstance(obj, str) else [obj]
        if inside:
            return why_not(world, actor, verb, inside[0], t) or f"{capitalize(t.the())} is out of your reach.", True
        if t.kind == "object" and not t.is_container:
            return f"{capitalize(t.the())} is not a container.", True
        elsewhere = _seen(world, actor, obj) if isinstance(obj, str) else [obj]
        what = _absent(t, elsewhere[0].name if elsewhere else _quoted(obj))
        return (_elsewhere(world, actor, elsewhere[0], what) if elsewhere else f"{what}."), True
    carried = named(candidates(world, actor, verb, "obj"), obj) if isinstance(obj, str) else [obj]
    if not carried:
        return _unseen_object(world, actor, verb, obj, None) if isinstance(obj, str) else ("", True)
    return why_not(world, actor, verb, carried[0], t) or f"You can't {verb} {carried[0].the()} there.", True
