"""A small LIGHT-Quests release in LIGHT's own layout, written from an lq dataset (never copied from real data).

The stems hold their graph as a JSON string (as ``OOGraph.to_json()`` writes it); the raw game logs name their stem by
``location.quest_file`` and who spoke by ``"human"`` or the bot's id; the processed file keys characters by
``[name, id]`` and names no quest. Some logs are made awkward on purpose, as the real file has them: the human speaks
first, a ``choice`` turn, one log scored below 10.
"""

from __future__ import annotations

import json
from pathlib import Path

from lq.data import load_demos, load_quests
from lq.data.demos import SELF, Demonstration
from lq.data.release import PROCESSED, RAW_LOGS, STEMS


def _raw_log(d: Demonstration, score: int, *, human_first: bool, choice: bool) -> dict:
    c = d.conv_extra
    acts = list(enumerate(d.acts))
    if human_first and d.speaker(0) != SELF:
        acts = acts[1:]
    turns = []
    for i, act in acts:
        human = d.speaker(i) == SELF
        turns.append(
            {
                "id": "human" if human else c["partner_id"],
                "type": act.type,
                "text": act.text,
                "score": 5 if human and act.type == "action" and act.text == c["goal"] else 1,
            }
        )
        if choice and len(turns) == 2:
            turns.append({"id": "human", "type": "choice", "text": "Which do you do?", "score": 0})
    return {
        "score": score,
        "dialogue": [{"id": "room", "type": "location", "text": d.room_description}, *turns],
        "human_persona": {
            "name": d.self_character.name,
            "id": c["self_id"],
            "persona": d.self_character.persona,
            "motivation": d.self_character.motivation,
            "goal": c["goal"],
        },
        "bot_persona": {"name": d.partner.name, "id": c["partner_id"], "persona": d.partner.persona},
        "location": {"name": d.room_category, "description": d.room_description, "quest_file": f"{c['quest_id']}.json"},
    }


def _processed(d: Demonstration) -> dict:
    c = d.conv_extra
    chars = []
    for who, cid in ((d.partner, c["partner_id"]), (d.self_character, c["self_id"])):
        info = {"name": who.name, "personas": who.personas, "motivation": who.motivation, "motivation_type": ""}
        info["goal"] = c["goal"] if who is d.self_character else ""
        chars.append([[who.name, cid], info])
    acts = []
    for i, act in enumerate(d.acts):
        speaker = c["self_id"] if d.speaker(i) == SELF else c["partner_id"]
        acts.append({"type": act.type, "text": act.text, "id": speaker, "score": 1, "task_data": {"action": ""}})
    room = {"category": d.room_category, "description": d.room_description, "setting": d.room_description}
    return {"conv_info": {"room": room, "characters": chars, "acts": acts}}


def write_release(dataset: Path, root: Path) -> dict[str, int]:
    """Write the release of the lq dataset at ``dataset`` into ``root``; returns how many logs were made awkward."""
    quests, demos = load_quests(dataset / "quests").all(), load_demos(dataset / "demos").all()
    (root / STEMS).mkdir(parents=True)
    for q in quests:
        stem = q.to_json()
        stem["data"]["graph"] = json.dumps(stem["data"]["graph"], sort_keys=True, indent=4)
        (root / STEMS / f"{q.quest_id}.json").write_text(json.dumps(stem))
    logs = []
    for i, d in enumerate(demos):
        logs.append(_raw_log(d, 3 if i == 1 else 12, human_first=i % 3 == 0, choice=i == 2))
    (root / RAW_LOGS).parent.mkdir(parents=True)
    (root / RAW_LOGS).write_text(json.dumps(logs))
    (root / PROCESSED).parent.mkdir(parents=True)
    (root / PROCESSED).write_text(json.dumps([_processed(d) for d in demos]))
    return {"demos": len(demos), "low_score": 1}
