"""Which characters and places a line names, and whether they are in the scene it is said in (issue 63).

The environment's partner and Dungeon Master rank the whole utterance space, every demonstration's lines, so the
partner can greet a young cook with "By the gods, old ranger!" or ask "what brings you to ballroom?" on a toll bridge.
This module measures that and, as an option, filters it out:

* **The names** (:func:`names_of`): every character's name and every room's name and category in the worlds of a
  dataset's quests, lower-cased; a single name under :data:`MIN_LETTERS` letters is left out (``cat``, ``elf``,
  ``nun``: common words, or too short to tell from one).
* **What a line names** (:func:`named`): the names it contains as whole words, case-insensitive, the longest first and
  without overlaps: "the young cook" names ``young cook``, not also ``cook``; "the king's road" names the road, not the
  king.
* **The scene** (:func:`scene_names`): the two characters' names, the room the speaker is in (its name, its category
  and the setting name its context reads), optionally the objects there and what the two carry.
* **Absent** (:func:`absent_names`): a name the line names that is not in the scene. A name counts as in the scene
  when it is a scene's name, part of one or holds one as a part, as whole words ("cook" is the young cook, "old
  ranger" the ranger; a room of category Road covers "king's road"): lenient, so that what is counted is a line about
  someone or somewhere else.

:class:`SceneFilter` is the option (``EnvSpec(scene_filter=True)``, off by default): for each context it ranks the
candidate utterances naming an absent character or place below every other one. The names of each candidate are found
once; the scene of a context is read from the context itself (its setting, its two names, and the room its setting
description is of: :func:`rooms_by_desc`), and the candidates it rules out are computed once per scene.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import torch

from lq.data.context import last_line

if TYPE_CHECKING:
    from lq.envs.episode import Slot

MIN_LETTERS = 4  # a one-word name shorter than this is not looked for (cat, elf, nun)
NAME_TAGS = ("_setting_name", "_self_name", "_partner_name")  # the lines of a context that name its scene
OBJECT_TAGS = ("_self_carrying", "_setting_objects", "_partner_carrying")


def normal(name: str) -> str:
    """A name as it is compared: lower case, single spaces."""
    return " ".join(name.lower().split())


def _graphs(items: Iterable) -> Iterable:
    """The world graphs of quests, or of quest instances (their ``quest``), or graphs themselves."""
    for item in items:
        quest = getattr(item, "quest", item)
        graph = getattr(quest, "graph", quest)
        if graph is not None:
            yield graph


def names_of(items: Iterable) -> list[str]:
    """The names of the characters and places of the worlds of ``items`` (quests, quest instances or world graphs):
    each agent's name, each room's name and category, lower-cased, sorted; a one-word name under
    :data:`MIN_LETTERS` letters is left out."""
    found: set[str] = set()
    for graph in _graphs(items):
        for node in graph.nodes.values():
            if node.kind == "agent":
                found.add(normal(node.name))
            elif node.kind == "room":
                found |= {normal(node.name), normal(node.raw.get("category") or "")}
    return sorted(n for n in found if len(n) >= MIN_LETTERS or " " in n)


def rooms_by_desc(items: Iterable) -> dict[str, tuple[str, ...]]:
    """Each room's description (single-spaced) and the room's names (name and category, :func:`normal`) in the worlds
    of ``items``: how a context's ``_setting_desc`` line tells which room it is in (its ``_setting_name`` is often the
    category alone)."""
    out: dict[str, set[str]] = {}
    for graph in _graphs(items):
        for node in graph.nodes.values():
            if node.kind == "room" and node.desc:
                names = {normal(node.name), normal(node.raw.get("category") or "")}
                out.setdefault(" ".join(node.desc.split()), set()).update(n for n in names if n)
    return {desc: tuple(sorted(names)) for desc, names in out.items()}


@lru_cache(maxsize=16)
def _pattern(known: tuple[str, ...]) -> re.Pattern:
    # the longest name first: at a position the first alternative that matches wins
    ordered = sorted(set(known), key=lambda n: (-len(n), n))
    alternatives = "|".join(r"\s+".join(map(re.escape, n.split())) for n in ordered if n)
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE) if alternatives else re.compile(r"(?!)")


def name_pattern(known: Sequence[str] | re.Pattern) -> re.Pattern:
    """One regular expression finding any of ``known`` as whole words, the longest at each place."""
    return known if isinstance(known, re.Pattern) else _pattern(tuple(normal(n) for n in known))


def named(text: str, known: Sequence[str] | re.Pattern) -> list[str]:
    """The names of ``known`` that ``text`` contains as whole words (case-insensitive), each once, in order: at each
    place the longest, and none inside another's match ("old ranger", not also "ranger")."""
    return list(dict.fromkeys(normal(m.group()) for m in name_pattern(known).finditer(text)))


def _within(small: str, big: str) -> bool:
    """Whether ``small`` is ``big`` or a whole-word part of it."""
    return small == big or re.search(rf"(?<!\w){re.escape(small)}(?!\w)", big) is not None


def in_scene(name: str, present: Iterable[str]) -> bool:
    """Whether ``name`` is one of the scene's names ``present``, a whole-word part of one, or holds one as a part."""
    return any(_within(name, p) or _within(p, name) for p in present if p)


def absent_names(text: str, present: Iterable[str], known: Sequence[str] | re.Pattern) -> list[str]:
    """The characters and places of ``known`` that ``text`` names (:func:`named`) and that are not in the scene whose
    names are ``present`` (:func:`in_scene`)."""
    scene = [normal(p) for p in present]
    return [n for n in named(text, known) if not in_scene(n, scene)]


def scene_names(slot: Slot, side: str = "partner", objects: bool = False) -> list[str]:
    """The names of the scene ``side`` ("self" or "partner") speaks in now: the two characters, the room its
    character is in (name, category, and the setting name its context reads), and with ``objects`` the objects in
    that room and what the two carry."""
    from lq.envs.episode import setting_name

    me = slot.me if side == "self" else slot.partner
    room = me.room
    names = [slot.me.name, slot.partner.name]
    if room is not None:
        names += [room.name, room.raw.get("category") or "", setting_name(slot, room)]
        if objects:
            names += [n.name for n in room.contents.values() if n.kind == "object"]
            names += [n.name for who in (slot.me, slot.partner) for n in who.contents.values()]
    return sorted({normal(n) for n in names if n})


def context_names(context: str, rooms: Mapping[str, Sequence[str]] | None = None, objects: bool = False) -> list[str]:
    """The scene's names as a serialised context tells them: its setting name, its own and the other character's
    names (the other only when in the same room), the names of the room its setting description is of (``rooms``:
    :func:`rooms_by_desc`), and with ``objects`` its object lines."""
    names = [last_line(context, tag) for tag in NAME_TAGS]
    names += (rooms or {}).get(" ".join(last_line(context, "_setting_desc").split()), ())
    if objects:
        names += [n for tag in OBJECT_TAGS for n in last_line(context, tag).split(", ")]
    return sorted({normal(n) for n in names if n.strip()})


class SceneFilter:
    """Ranks the candidate utterances that name a character or place absent from a context's scene below every other
    candidate (their order among themselves kept), for the partner's choice and the Dungeon Master's ranking.

    ``known``: the names looked for (:func:`names_of`); ``candidates``: the utterance space, each candidate's names
    found once; ``rooms``: :func:`rooms_by_desc`, so that a context's room is known by its description."""

    def __init__(
        self,
        known: Sequence[str],
        candidates: Sequence[str],
        rooms: Mapping[str, Sequence[str]] | None = None,
        objects: bool = False,
    ):
        self.pattern = name_pattern(known)
        self.rooms, self.objects, self.size = dict(rooms or {}), objects, len(candidates)
        names = [frozenset(named(text, self.pattern)) for text in candidates]
        self.named = {j: n for j, n in enumerate(names) if n}  # the candidates that name anyone or anywhere
        self.mentioned = sorted(set().union(*self.named.values())) if self.named else []
        self._unfit: dict[tuple[str, ...], torch.Tensor] = {}  # the scene's names -> the ids it rules out

    def present(self, context: str) -> tuple[str, ...]:
        return tuple(context_names(context, self.rooms, self.objects))

    def unfit_ids(self, present: Sequence[str]) -> torch.Tensor:
        """The ids of the candidates naming a character or place absent from the scene ``present``."""
        key = tuple(present)
        if key not in self._unfit:
            fits = {n for n in self.mentioned if in_scene(n, key)}
            ids = [j for j, names in self.named.items() if not names <= fits]
            if len(self._unfit) >= 100_000:
                self._unfit.clear()
            self._unfit[key] = torch.tensor(ids, dtype=torch.long)
        return self._unfit[key]

    def unfit(self, contexts: Sequence[str]) -> torch.Tensor:
        """``[len(contexts), candidates]``: True where a candidate names someone or somewhere absent from the
        context's scene."""
        mask = torch.zeros(len(contexts), self.size, dtype=torch.bool)
        for i, context in enumerate(contexts):
            mask[i, self.unfit_ids(self.present(context))] = True
        return mask

    def demote(self, scores: torch.Tensor, contexts: Sequence[str]) -> torch.Tensor:
        """``scores`` ``[len(contexts), candidates]`` with each context's unfit candidates moved below its lowest
        score, in the same order among themselves: an argmax or a top-k takes a fitting candidate wherever one is."""
        mask = self.unfit(contexts).to(scores.device)
        if not bool(mask.any()):
            return scores
        span = scores.max(dim=1, keepdim=True).values - scores.min(dim=1, keepdim=True).values + 1
        return torch.where(mask, scores - span, scores)
