"""A language model evaluated zero-shot as an agent (issue 111): played by an agent's actor in its environment
(:class:`lq.eval.agents.Playable`: the same switch, candidates, protocol and episodes as every agent and baseline),
its way of scoring a candidate (:data:`lq.llm.policy.SCORES`) chosen on the validation quests, the test quests reported
with it, one evaluation per seed, beside the baselines through the same actor and environment.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lq.envs.protocol import HEADLINE_RATE, Protocol
from lq.eval.agents import Playable, agent_baselines, first_quests, other_decoding
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


def timed_play(env, actor, seed: int, greedy: bool, label: str, log: Callable[[str], None]) -> tuple[EvalResult, float]:
    """One zero-shot play of ``actor`` in ``env`` (:func:`lq.eval.evaluate`) and its wall time (seconds), its rates
    logged under ``label``."""
    started = time.perf_counter()
    result = evaluate(env, actor, seed=seed, greedy=greedy)
    seconds = time.perf_counter() - started
    log(f"{label}: act goals {result.act_goal_rate:.3f}, speech goals {result.speech_goal_rate:.3f}, both "
        f"{result.act_and_speech_rate:.3f} ({len(env.instances)} quests, {seconds:.0f} s)")  # fmt: skip
    return result, seconds


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
        result, seconds[label] = timed_play(env, agent.make_actor(policy=policy), seed, greedy, label, log)
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


class GreedyPlays:
    """Greedy plays of a language model kept in ``folder``, one file per play, keyed by everything it reads: ``key``
    (the model, the module's configuration, the environment models' weights, the data: the caller's), the score and
    the split. A greedy play draws nothing (the policy, the partner and the Dungeon Master each take their argmax, and
    every quest is played once in order), so its episodes are the same whatever the evaluation seed: an experiment's
    children of later seeds read the first one's, not played again. A file is written whole, then renamed."""

    def __init__(self, folder: str | Path, key: Mapping[str, object]):
        self.folder, self.key = Path(folder), dict(key)

    def file(self, score: str, split: str) -> Path:
        text = json.dumps({**self.key, "score": score, "split": split}, sort_keys=True, default=str)
        return self.folder / f"{split}-{score}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"

    def get(self, score: str, split: str, play: Callable[[], EvalResult]) -> tuple[EvalResult, bool]:
        """The play's result, and whether it was read rather than played."""
        from lq.data.io import write_json

        path = self.file(score, split)
        if path.is_file():
            return EvalResult.of(json.loads(path.read_text(encoding="utf-8"))["episodes"]), True
        result = play()
        write_json(path, {"key": self.key, "score": score, "split": split, "episodes": result.episodes}, indent=None)
        return result, False


@dataclass
class ZeroShotPlays:
    """What an experiment's language-model child logs: ``validation``, each score's results on the validation quests
    under the protocol's decoding; ``chosen``, the score chosen there (:func:`rank`); ``played``, the chosen score's
    results by metric prefix as an agent run logs its own (:func:`lq.eval.agents.zero_shot`): ``val``, ``test`` (the
    protocol's decoding) and ``test_greedy`` or ``test_sampled`` (the other)."""

    validation: dict[str, EvalResult]
    chosen: str
    played: dict[str, EvalResult]


def language_model_zero_shot(
    agent: Playable,
    policies: Mapping[str, CandidateScorer],
    seed: int = 0,
    plays: GreedyPlays | None = None,
    log: Callable[[str], None] = print,
) -> ZeroShotPlays:
    """``policies`` (one language model by each score, :data:`lq.llm.policy.SCORES`) played through ``agent``'s actor
    and environment with evaluation ``seed``: each on the validation quests under the protocol's decoding, the best
    there (:func:`rank`) on the test quests under it and under the other decoding (sampling at temperature 1 from the
    softmax of its scores). ``plays``: where greedy plays are read from when kept, and kept (:class:`GreedyPlays`)."""
    if not policies:
        raise ValueError("language_model_zero_shot: no policy to evaluate")

    def played(score: str, split: str, greedy: bool) -> EvalResult:
        def play() -> EvalResult:
            actor = agent.make_actor(policy=policies[score])
            return timed_play(agent.eval_env(split, seed), actor, seed, greedy, where, log)[0]

        where = f"{'validation' if split == 'valid' else split}, {score}, {'greedy' if greedy else 'sampled'}"
        if not greedy or plays is None:
            return play()
        result, read = plays.get(score, split, play)
        if read:
            log(f"{where}: read from {plays.file(score, split)} (a greedy play draws nothing: the same for every seed)")
        return result

    greedy = agent.protocol.greedy
    validation = {score: played(score, "valid", greedy) for score in policies}
    chosen = max(validation, key=lambda score: rank(validation[score]))
    out = {"val": validation[chosen], "test": played(chosen, "test", greedy)}
    out[f"test_{other_decoding(agent.protocol)}"] = played(chosen, "test", not greedy)
    return ZeroShotPlays(validation, chosen, out)
