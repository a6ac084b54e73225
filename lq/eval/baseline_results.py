"""The baselines' runner: every rule of :mod:`lq.rl.baseline_policies` played through an agent's actor and environment
(its protocol, switch, ability and spaces), one evaluation per seed; the ceiling and the demonstrations replayed (with
their own partner, and with the environment's), once: neither samples."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lq.envs.quest_env import QuestEnv
from lq.eval.episodes import EvalResult, evaluate
from lq.rl.acting import Actor
from lq.rl.baseline_policies import ceiling, replay_demonstrations
from lq.rl.registry import BASELINES, CEILING, REPLAY, REPLAY_WITH_PARTNER


def baseline_results(
    env: QuestEnv,
    make_actor: Callable[..., Actor],
    greedy: bool,
    seeds: Sequence[int] = (0,),
) -> dict[str, list[EvalResult]]:
    """The baselines in ``env`` (an evaluation environment: every quest once), each rule's actor from ``make_actor(
    policy=..., restrict=...)`` (an agent's :meth:`lq.lit.agent.AgentModule.make_actor`: its switch, ability and
    spaces), decoded as the agent's protocol says (``greedy``), one evaluation per seed; keyed as :data:`BASELINES`,
    :data:`CEILING`, :data:`REPLAY` and :data:`REPLAY_WITH_PARTNER`."""
    out = {
        key: [evaluate(env, make_actor(policy=policy, restrict=restrict), seed=seed, greedy=greedy) for seed in seeds]
        for key, _, policy, restrict in BASELINES
    }
    out[CEILING[0]] = [EvalResult(ceiling(env), float("nan"), float("nan"))]
    out[REPLAY[0]] = [EvalResult.of(replay_demonstrations(env, "scripted"))]
    out[REPLAY_WITH_PARTNER[0]] = [EvalResult.of(replay_demonstrations(env, "model"))]
    return out
