"""Zero-shot evaluation (paper 5): one greedy episode per test quest; act goal, speech goal and both.

The same code path serves behaviour cloning and RL agents (through :class:`lq.rl.acting.Actor`), and a
random agent (no actor: a random utterance or a random action of the action space, half and half).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from lq.envs.quest_env import QuestEnv
from lq.rl.acting import Actor


@dataclass
class EvalResult:
    act_goal_rate: float
    speech_goal_rate: float
    act_and_speech_rate: float
    episodes: list[dict] = field(default_factory=list, repr=False)


@torch.no_grad()
def evaluate(env: QuestEnv, actor: Actor | None = None, seed: int = 0) -> EvalResult:
    """Play every instance of ``env`` once (the env must not auto-reset)."""
    if env.auto_reset:
        raise ValueError("evaluation plays each quest once: build the environment with auto_reset=False")
    rng = random.Random(seed)
    torch.manual_seed(seed)
    was_training = actor.agent.training if actor else False
    if actor:
        actor.agent.eval()
    episodes: list[dict] = []
    order = list(range(len(env.instances)))
    for start in range(0, len(order), env.batch_size):
        chunk = order[start : start + env.batch_size]
        obs, infos = env.reset(chunk)
        state = actor.start(len(chunk)) if actor else None
        finished: dict[int, dict] = {}
        while len(finished) < len(chunk):
            if actor:
                commands, _ = actor.step(obs, state, greedy=True)
            else:
                commands = [
                    ("speech", rng.choice(env.utterance_space))
                    if rng.random() < 0.5
                    else ("action", rng.choice(env.action_space))
                    for _ in chunk
                ]
            obs, _, dones, infos = env.step(commands)
            for i, (done, info) in enumerate(zip(dones, infos, strict=True)):
                if done and i not in finished:
                    finished[i] = info["episode"]
        episodes += [finished[i] for i in range(len(chunk))]
    if actor:
        actor.agent.train(was_training)
    n = max(len(episodes), 1)
    return EvalResult(
        act_goal_rate=sum(e["act_goal"] for e in episodes) / n,
        speech_goal_rate=sum(e["speech_goal"] for e in episodes) / n,
        act_and_speech_rate=sum(e["act_goal"] and e["speech_goal"] for e in episodes) / n,
        episodes=episodes,
    )


def mean_std(results: Sequence[EvalResult]) -> dict[str, tuple[float, float]]:
    out = {}
    for key in ("act_goal_rate", "speech_goal_rate", "act_and_speech_rate"):
        values = [getattr(r, key) for r in results]
        out[key] = (statistics.fmean(values), statistics.pstdev(values) if len(values) > 1 else 0.0)
    return out
