"""Demonstrations replayed through the engine exactly as :class:`lq.envs.quest_env.QuestEnv` plays them: the
supervised examples of behaviour cloning (the self character's turns), the turns the partner's calibration reads
(:func:`demonstration_turns`), and whole demonstrations played through the environment (:func:`replay_demonstrations`:
the reference row of every table, and how the partner's calibration is checked)."""

from __future__ import annotations

from collections.abc import Sequence

from lq.data.demos import PARTNER, SELF
from lq.envs.episode import DemoTurn, QuestInstance, new_slot, play_turn, slot_context, slot_valid_actions
from lq.envs.partner import ScriptedPartner, Turn
from lq.envs.quest_env import QuestEnv


def demonstration_turns(
    instance: QuestInstance,
    motivations: Sequence[str] = ("short", "mid", "long"),
    side: str = "self",
    objects: bool = False,
) -> list[DemoTurn]:
    """Replay a demonstration through the engine exactly as :class:`QuestEnv` plays, and return ``side``'s turns
    ("self": the supervised examples of behaviour cloning; "partner": what the partner saw when it acted or spoke).
    Stops where the act goal is reached. ``objects`` as :class:`QuestEnv`'s."""
    if instance.demo is None:
        return []
    slot = new_slot(instance)
    turns = []
    for i, act in enumerate(instance.demo.acts):
        kind = "action" if act.type == "action" else "speech"
        who = instance.demo.speaker(i)  # PARTNER or SELF: the sides QuestEnv plays
        if who == side:
            context = slot_context(slot, side, motivations, objects)
            turns.append(DemoTurn(context, kind, act.text, list(slot_valid_actions(slot, side))))
        play_turn(slot, who, kind, act.text)
        if slot.act_goal is not None:
            break
    return turns


def demonstration_scripts(env: QuestEnv) -> tuple[list[list[Turn]], list[list[Turn]]]:
    """Each instance's demonstration as two scripts, the self character's turns and the partner's, in order."""
    selves, partners = [], []
    for inst in env.instances:
        own: dict[str, list[Turn]] = {SELF: [], PARTNER: []}
        for i, act in enumerate(inst.demo.acts if inst.demo else []):
            own[inst.demo.speaker(i)].append(("action" if act.type == "action" else "speech", act.text))
        selves.append(own[SELF])
        partners.append(own[PARTNER])
    return selves, partners


def replay_demonstrations(env: QuestEnv, partner: str = "scripted") -> list[dict]:
    """Play every instance once (the environment must not auto-reset) with the self character's turns taken from its
    demonstration, and the partner's too (``"scripted"``) or the environment's own partner (``"model"``). An episode
    is as long as its demonstration: it is summarised when it ends or when the self character's script is done (the
    partner answering its last turn). Returns the episode summaries, in the instances' order."""
    if env.auto_reset:
        raise ValueError("the replay plays each quest once: build the environment with auto_reset=False")
    if partner not in ("scripted", "model"):
        raise ValueError(f"unknown replay partner {partner!r}: choose scripted or model")
    selves, partners = demonstration_scripts(env)
    model = env.partner
    episodes: list[dict] = []
    try:
        for start in range(0, len(env.instances), env.batch_size):
            chunk = list(range(start, min(start + env.batch_size, len(env.instances))))
            if partner == "scripted":
                env.partner = ScriptedPartner([partners[i] for i in chunk])
            scripts = [list(selves[i]) for i in chunk]
            env.reset(chunk)
            finished: dict[int, dict] = {}
            while len(finished) < len(chunk):
                commands = [script.pop(0) if script else ("speech", "...") for script in scripts]
                _, _, dones, _ = env.step(commands)
                for i, done in enumerate(dones):
                    if i not in finished and (done or not scripts[i]):
                        finished[i] = env.episode_summary(env.slots[i])
            episodes += [finished[i] for i in range(len(chunk))]
    finally:
        env.partner = model
    return episodes


def by_whom(episodes: Sequence[dict], who: str) -> float:
    """The share of episodes (their summaries) whose act goal ``who`` ("self" or "partner") reached."""
    return sum(e["act_goal_by"] == who for e in episodes) / max(len(episodes), 1)
