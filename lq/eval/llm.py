"""A language model evaluated zero-shot as an agent (issue 111): played by an agent's actor in its environment
(:class:`lq.eval.agents.Playable`: the same switch, candidates, protocol and episodes as every agent and baseline),
its way of scoring a candidate (:data:`lq.llm.policy.SCORES`) chosen on the validation quests, the test quests reported
with it, one evaluation per seed, beside the baselines through the same actor and environment.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from lq.envs.protocol import HEADLINE_RATE, Protocol
from lq.eval.agents import Playable, agent_baselines, first_quests
from lq.eval.episodes import EvalResult, evaluate
from lq.rl.acting import CandidateScorer
from lq.rl.registry import TITLES


@dataclass
class LanguageModelEvaluation:
    """``validation``: each score's results on the validation quests (the first seed); ``chosen``: the score chosen
    there (by :data:`lq.envs.protocol.HEADLINE_RATE`, then act goals); ``test``: the chosen score's results on the test
    quests, one per seed; ``baselines``: the rows of :func:`lq.eval.agents.agent_baselines` over the same seeds;
    ``seconds``: each evaluation's wall time, by its label."""

    protocol: Protocol
    validation: dict[str, EvalResult]
    chosen: str
    test: list[EvalResult]
    baselines: dict[str, list[EvalResult]]
    seconds: dict[str, float] = field(default_factory=dict)

    def rows(self, name: str) -> list[tuple[str, list[EvalResult]]]:
        """The test rows as :func:`lq.eval.reports.results_table` takes them: the model's (named ``name``, with its
        chosen score and the protocol's decoding), then the baselines'."""
        decoding = "greedy" if self.protocol.greedy else "sampled"
        return [(f"{name} ({self.chosen}, {decoding})", self.test),
                *((TITLES[key], results) for key, results in self.baselines.items())]  # fmt: skip


def rank(result: EvalResult) -> tuple[float, float]:
    """What a choice on validation maximises: the headline rate, then act goals."""
    return result.metrics()[HEADLINE_RATE], result.act_goal_rate


def evaluate_language_model(
    agent: Playable,
    policies: Mapping[str, CandidateScorer],
    seeds: Sequence[int] = (0,),
    quests: int | None = None,
    log: Callable[[str], None] = print,
) -> LanguageModelEvaluation:
    """``policies`` (one language model by each score, :data:`lq.llm.policy.SCORES`) played through ``agent``'s actor
    and environment under its protocol's decoding: each on the first ``quests`` validation quests (None: all) with the
    first seed, the best there on the test quests with every seed; the baselines beside them over the same seeds.
    One policy: nothing to choose, the validation quests are not played."""
    if not policies:
        raise ValueError("evaluate_language_model: no policy to evaluate")
    greedy, seconds = agent.protocol.greedy, {}

    def played(policy: CandidateScorer, split: str, seed: int, label: str) -> EvalResult:
        env = first_quests(agent.eval_env(split, seed), quests, split)
        started = time.perf_counter()
        result = evaluate(env, agent.make_actor(policy=policy), seed=seed, greedy=greedy)
        seconds[label] = time.perf_counter() - started
        log(f"{label}: act goals {result.act_goal_rate:.3f}, speech goals {result.speech_goal_rate:.3f}, both "
            f"{result.act_and_speech_rate:.3f} ({len(env.instances)} quests, {seconds[label]:.0f} s)")  # fmt: skip
        return result

    validation = {}
    if len(policies) > 1:
        validation = {score: played(p, "valid", seeds[0], f"validation, {score}") for score, p in policies.items()}
    chosen = max(validation, key=lambda score: rank(validation[score])) if validation else next(iter(policies))
    test = [played(policies[chosen], "test", seed, f"test, {chosen}, seed {seed}") for seed in seeds]
    started = time.perf_counter()
    baselines = agent_baselines(agent, "test", seeds, quests)
    seconds["baselines"] = time.perf_counter() - started
    return LanguageModelEvaluation(agent.protocol, validation, chosen, test, baselines, seconds)
