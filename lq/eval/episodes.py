"""Playing zero-shot episodes (paper 5): one episode per quest under the environment's protocol
(:mod:`lq.envs.protocol`); act goal, speech goal and both, and the share of act goals the partner reached; greedy or
sampled (temperature 1) decoding, one of them or both in one environment (:func:`decodings`).

The same code path serves behaviour cloning and RL agents and the baselines (an :class:`lq.rl.acting.Actor` with a
rule of :mod:`lq.rl.baseline_policies` for a policy), all with the same switch in the same environment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from lq.data.progress import Progress
from lq.envs.protocol import GOAL_RATES
from lq.envs.quest_env import QuestEnv
from lq.envs.replay import by_whom
from lq.rl.acting import Actor

LOST = {
    "lost_never_valid": "goal never valid",
    "lost_speaking": "valid only when speaking",
    "lost_not_taken": "valid when acting, not taken",
}  # where an act goal is lost (EvalResult.where_lost), as the columns of lost_table


@dataclass
class EvalResult:
    act_goal_rate: float
    speech_goal_rate: float
    act_and_speech_rate: float
    episodes: list[dict] = field(default_factory=list, repr=False)

    @classmethod
    def of(cls, episodes: list[dict]) -> EvalResult:
        """The rates of played episodes (their summaries, :meth:`QuestEnv.episode_summary`)."""
        n = max(len(episodes), 1)
        return cls(
            act_goal_rate=sum(e["act_goal"] for e in episodes) / n,
            speech_goal_rate=sum(e["speech_goal"] for e in episodes) / n,
            act_and_speech_rate=sum(e["act_goal"] and e["speech_goal"] for e in episodes) / n,
            episodes=episodes,
        )

    @property
    def partner_act_goal_rate(self) -> float:
        """The share of episodes whose act goal the partner reached (NaN without episodes, e.g. the ceiling)."""
        return by_whom(self.episodes, "partner") if self.episodes else float("nan")

    @property
    def left_start_rate(self) -> float:
        """The share of episodes in which a character stood outside the room the quest opened in (NaN without
        episodes): the only episodes in which what the agent reads differs from the opening scene's."""
        if not self.episodes:
            return math.nan
        return sum(e.get("left_start", False) for e in self.episodes) / len(self.episodes)

    def metrics(self, prefix: str = "") -> dict[str, float]:
        """The rates under their MLflow names (``<prefix>act_goal_rate``, ``...speech_goal_rate``,
        ``...act_and_speech_goal_rate``, ``...partner_act_goal_rate``, ``...left_start_rate``)."""
        return {
            **{f"{prefix}{name}": getattr(self, attribute) for name, attribute, _ in GOAL_RATES},
            f"{prefix}partner_act_goal_rate": self.partner_act_goal_rate,
            f"{prefix}left_start_rate": self.left_start_rate,
            **{f"{prefix}{key}": value for key, value in self.where_lost.items()},
        }

    @property
    def where_lost(self) -> dict[str, float]:
        """Where the act goals that were not reached were lost (:data:`LOST`), each as a share of all episodes: the goal
        action never valid at an agent turn (outside the action space, or out of the engine's reach for the self
        character: only the partner could do it); valid only at turns the agent spoke; valid at turns it acted, and
        another action taken. NaN without episodes (the ceiling)."""
        missed = [e for e in self.episodes if not e["act_goal"]]
        counts = dict.fromkeys(LOST, 0)
        for e in missed:
            if not e["goal_open_turns"]:
                counts["lost_never_valid"] += 1
            elif not e["goal_open_acts"]:
                counts["lost_speaking"] += 1
            else:
                counts["lost_not_taken"] += 1
        n = len(self.episodes)
        return {key: count / n if n else float("nan") for key, count in counts.items()}

    GROUPS = (
        ("Self act completion transcripts", "self"),
        ("Partner act completion transcripts", "partner"),
        ("Act goal not reached", None),
    )

    def grouped(self) -> list[tuple[str, list[dict]]]:
        """The episodes grouped as the paper's appendix groups them: the agent reached the act goal itself, the
        partner reached it, neither did; within a group, episodes that also reached the speech goal first."""
        return [
            (title, sorted((e for e in self.episodes if e["act_goal_by"] == by), key=lambda e: not e["speech_goal"]))
            for title, by in self.GROUPS
        ]

    def transcripts(self) -> str:
        """Every episode as the paper's appendix shows them (the quest, then each turn, the agent's to the right), in
        :meth:`grouped`'s order."""
        parts = []
        for title, chosen in self.grouped():
            both = sum(e["speech_goal"] for e in chosen)
            parts.append(f"=== {title}: {len(chosen)} episodes, {both} of them with the speech goal ===")
            parts += [
                f"{e['transcript']}\n  => act goal: {e['act_goal_by'] or 'no'}, speech score {e['speech_score']:.2f}"
                f" (speech goal: {'yes' if e['speech_goal'] else 'no'}), {e['steps']} turns"
                for e in chosen
            ]
        return "\n\n".join(parts) + "\n"

    def ordered(self) -> list[dict]:
        """The episodes in :meth:`grouped`'s order (:func:`lq.eval.reports.transcripts_html` lays them out)."""
        return [e for _, chosen in self.grouped() for e in chosen]


@torch.no_grad()
def evaluate(env: QuestEnv, actor: Actor, seed: int = 0, progress: bool = True, greedy: bool = True) -> EvalResult:
    """Play every instance of ``env`` once (the env must not auto-reset), greedily or sampling at the actor's
    temperature (a random rule always samples). ``progress``: a bar over the quests where stderr is a terminal, else
    a line per tenth, then the wall time (:class:`lq.data.progress.Progress`)."""
    if env.auto_reset:
        raise ValueError("evaluation plays each quest once: build the environment with auto_reset=False")
    torch.manual_seed(seed)
    agent = actor.agent
    was_training = agent.training if agent is not None else False
    if agent is not None:
        agent.eval()
    actor.cache_candidates()
    episodes: list[dict] = []
    order = list(range(len(env.instances)))
    bar = Progress(len(order), f"zero-shot episodes ({'greedy' if greedy else 'sampled'})", "quest", not progress)
    for start in range(0, len(order), env.batch_size):
        chunk = order[start : start + env.batch_size]
        obs, infos = env.reset(chunk)
        state = actor.start(len(chunk))  # k = 0: the ratio switch uses the training average (paper 4.2)
        finished: dict[int, dict] = {}
        while len(finished) < len(chunk):
            commands, _ = actor.step(env, obs, infos, state, greedy=greedy)
            obs, _, dones, infos = env.step(commands)
            for i, (done, info) in enumerate(zip(dones, infos, strict=True)):
                if done and i not in finished:
                    finished[i] = info["episode"]
                    bar.update()
        episodes += [finished[i] for i in range(len(chunk))]
    bar.close()
    actor.cache_candidates(False)
    if agent is not None:
        agent.train(was_training)
    return EvalResult.of(episodes)


def decodings(
    env: QuestEnv, actor: Actor, seed: int, order: Sequence[str] = ("greedy", "sampled")
) -> dict[str, EvalResult]:
    """The same quests played once per decoding of ``order`` ("greedy", "sampled"), in that order, in one environment
    (it keeps nothing between plays that the play reads) and with one actor: what every agent's evaluation reports
    (its protocol's decoding, and the other beside it)."""
    unknown = [d for d in order if d not in ("greedy", "sampled")]
    if unknown:
        raise ValueError(f"decoding {unknown[0]!r}: choose greedy or sampled")
    return {d: evaluate(env, actor, seed=seed, greedy=d == "greedy") for d in order}
