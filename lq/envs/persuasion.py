"""How much what the agent says moves the environment's partner to complete the goal: speech-only episodes played with
a fixed speaker, counting the goals the partner completes.

Two speakers: ``random`` (a uniform utterance of the whole space each turn: Table 2's random speaker) and
``goal`` (each turn an utterance sharing the most content words with the goal action, "give" and the self
character's name: the request that leads the partner to the goal, as the released code's partner completes a "get X"
goal by "give X to self"). The goal-reading speaker reads what no agent is shown; it is a probe of the partner, not a
baseline. A partner that acts when persuaded completes more goals for it than for the random speaker
(docs/results/archive/, "A partner that acts when persuaded").
"""

from __future__ import annotations

import random
from collections.abc import Callable

import torch

from lq.envs.episode import Slot
from lq.envs.quest_env import QuestEnv
from lq.world.text import content_words

Speaker = Callable[[Slot, random.Random], str]
SPEAKERS = ("random", "goal")


def speaker(name: str, utterances: list[str]) -> Speaker:
    """The speaker ``name`` (:data:`SPEAKERS`) over ``utterances``."""
    if name == "random":
        return lambda slot, rng: utterances[rng.randrange(len(utterances))]
    if name != "goal":
        raise ValueError(f"unknown speaker {name!r}: choose from {', '.join(SPEAKERS)}")
    words = [content_words(u) for u in utterances]
    best: dict[str, list[int]] = {}

    def ask(slot: Slot, rng: random.Random) -> str:
        request = f"{slot.instance.quest.goal} give {slot.me.name}"
        if request not in best:
            wanted = content_words(request)
            shared = [len(w & wanted) for w in words]
            most = max(shared)
            best[request] = [i for i, n in enumerate(shared) if n == most]
        return utterances[rng.choice(best[request])]

    return ask


def partner_completions(env: QuestEnv, speak: Speaker, seed: int = 0) -> float:
    """The share of ``env``'s quests (each once; the environment must not auto-reset) whose goal the partner completes
    while the agent only speaks, saying what ``speak`` chooses."""
    if env.auto_reset:
        raise ValueError("the probe plays each quest once: build the environment with auto_reset=False")
    rng = random.Random(seed)
    torch.manual_seed(seed)
    by_partner = 0
    for start in range(0, len(env.instances), env.batch_size):
        chunk = list(range(start, min(start + env.batch_size, len(env.instances))))
        env.reset(chunk)
        ended: set[int] = set()
        while len(ended) < len(chunk):
            _, _, dones, infos = env.step([("speech", speak(slot, rng)) for slot in env.slots])
            for i, (done, info) in enumerate(zip(dones, infos, strict=True)):
                if done and i not in ended:
                    ended.add(i)
                    by_partner += info["episode"]["act_goal_by"] == "partner"
    return by_partner / max(len(env.instances), 1)
