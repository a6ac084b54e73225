"""Context serialisation shared by every stage: pretraining tasks, behaviour cloning, RL, the partner and the DM.

One line per field, each starting with a tag as in LIGHT's own task files::

    _setting_name dragon's lair
    _setting_desc A cave of gold. ...
    _self_name dragon
    _self_persona I am a dragon ...
    _partner_name knight
    _partner_persona I am a knight ...
    _self_carrying golden egg, sword
    _setting_objects gold coins, old chest
    _partner_carrying shield
    _short_motivation I need to ...
    _mid_motivation ...
    _long_motivation ...
    _partner_say Who goes there?
    _self_act get golden egg

The room's objects and what the partner carries (``_setting_objects``, ``_partner_carrying``, as LIGHT's
``_object_desc`` lines name a room's objects) are written when they are known: the environment fills them for the
agent's own side (:func:`lq.envs.episode.slot_context` with ``objects``), where they say which "get" and "steal"
actions can be done.

Which motivations appear is a switch (``motivations=("short",)``, or ``()`` for none): the
Table 4/5 ablations turn them off and on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from lq.data.demos import Demonstration
from lq.data.quests import Quest

MOTIVATION_LEVELS = ("short", "mid", "long")

# Every line tag a serialised context can hold: the header's (what the scene and the motivations say) and the
# history's (who did what). lq.models.poly_encoder ranks the header tags when a context must lose lines.
SCENE_TAGS = (
    "_setting_name",
    "_setting_desc",
    "_self_name",
    "_self_persona",
    "_partner_name",
    "_partner_persona",
    "_self_carrying",
    "_setting_objects",
    "_partner_carrying",
)
MOTIVATION_TAGS = tuple(f"_{level}_motivation" for level in (*MOTIVATION_LEVELS, "self"))
TIMELINE_TAG = "_timeline_act"
HEADER_TAGS = (*SCENE_TAGS, *MOTIVATION_TAGS, TIMELINE_TAG)
TURN_KINDS = {"speech": "say", "action": "act", "emote": "emote"}
HISTORY_TAGS = tuple(f"_{who}_{kind}" for who in ("self", "partner") for kind in TURN_KINDS.values())


@dataclass
class Context:
    setting_name: str = ""
    setting_desc: str = ""
    self_name: str = ""
    self_persona: str = ""
    partner_name: str = ""
    partner_persona: str = ""
    carrying: list[str] = field(default_factory=list)
    objects: list[str] = field(default_factory=list)  # the room's objects that no one holds
    partner_carrying: list[str] = field(default_factory=list)
    motivations: dict[str, str] = field(default_factory=dict)  # level ("short", "mid", "long", "self") -> text
    history: list[tuple[str, str, str]] = field(default_factory=list)  # (who: self|partner, type, text)

    def swapped(self) -> Context:
        """The same scene from the partner's side: names and personas exchanged, the history's sides swapped, and
        neither the self character's motivations nor what is carried or lies about (the partner's models read no
        objects)."""
        return Context(
            setting_name=self.setting_name,
            setting_desc=self.setting_desc,
            self_name=self.partner_name,
            self_persona=self.partner_persona,
            partner_name=self.self_name,
            partner_persona=self.self_persona,
            history=swap_sides(self.history),
        )

    def serialise(self, motivations: Iterable[str] = (*MOTIVATION_LEVELS, "self")) -> str:
        lines = []
        values = (
            self.setting_name,
            self.setting_desc,
            self.self_name,
            self.self_persona,
            self.partner_name,
            self.partner_persona,
            ", ".join(self.carrying),
            ", ".join(self.objects),
            ", ".join(self.partner_carrying),
        )
        for tag, value in zip(SCENE_TAGS, values, strict=True):
            if value:
                lines.append(f"{tag} {value}")
        for level in motivations:
            if self.motivations.get(level):
                lines.append(f"_{level}_motivation {self.motivations[level]}")
        for who, kind, text in self.history:
            lines.append(f"_{who}_{TURN_KINDS.get(kind, 'emote')} {text}")
        return "\n".join(lines)


def quest_context(quest: Quest) -> Context:
    """A quest's setting, character and motivations (the setting text already lists what it carries)."""
    partner = quest.extra.get("partner", "") if isinstance(quest.extra.get("partner", ""), str) else ""
    return Context(
        setting_desc=" ".join(quest.description.split()),
        self_name=quest.character,
        self_persona=quest.persona,
        partner_name=partner,
        motivations={lvl: quest.motivation(lvl) for lvl in MOTIVATION_LEVELS},
    )


def demo_context(demo: Demonstration, turn: int, quest: Quest | None = None) -> Context:
    """What the self character knows before ``turn`` of a demonstration or episode."""
    motivations = {lvl: quest.motivation(lvl) for lvl in MOTIVATION_LEVELS} if quest else {}
    if demo.self_character.motivation and not quest:
        motivations["self"] = demo.self_character.motivation
    return Context(
        setting_name=demo.room_category,
        setting_desc=demo.room_description,
        self_name=demo.self_character.name,
        self_persona=demo.self_character.persona,
        partner_name=demo.partner.name,
        partner_persona=demo.partner.persona,
        motivations=motivations,
        history=history(demo, turn),
    )


def partner_context(demo: Demonstration, turn: int) -> Context:
    """What the partner knows before ``turn``: the same scene with the roles swapped, no motivations."""
    return demo_context(demo, turn).swapped()


OTHER_SIDE = {"self": "partner", "partner": "self"}


def swap_sides(turns: Sequence[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """A history as the other side tells it: "self" and "partner" exchanged."""
    return [(OTHER_SIDE[who], kind, text) for who, kind, text in turns]


def history(demo: Demonstration, turn: int) -> list[tuple[str, str, str]]:
    return [(demo.speaker(i), a.type, a.text) for i, a in enumerate(demo.acts[:turn])]


def timeline_prefix(actions: Sequence[str]) -> str:
    return "\n".join(f"{TIMELINE_TAG} {a}" for a in actions)


def last_line(text: str, tag: str) -> str:
    """The text of a serialised context's last line tagged ``tag`` (``""`` if it has none)."""
    for line in reversed(text.split("\n")):
        if line.startswith(f"{tag} "):
            return line[len(tag) + 1 :]
    return ""
