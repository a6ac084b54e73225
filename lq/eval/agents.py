"""Evaluating agents zero-shot: one agent under its protocol (:func:`evaluate_agent`), the evaluation every agent run
reports after fitting and at each budget (:func:`zero_shot`), the baselines through an agent's actor and environment
(:func:`agent_baselines`), and trained agents side by side with them (:func:`compare_agents`, what ``lq eval``,
``lq export`` and :func:`lq.api.evaluate` print).

An agent here is anything :class:`Playable`: an evaluation environment, an actor and a protocol. lq's BC and RL
modules are; :mod:`lq.lit` builds them (from a run or a checkpoint) and logs what is played here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol as Interface

from lq.envs.protocol import Protocol
from lq.envs.quest_env import QuestEnv
from lq.eval.baseline_results import baseline_results
from lq.eval.episodes import EvalResult, decodings, evaluate
from lq.rl.acting import Actor, CandidateScorer
from lq.rl.registry import TITLES


class Playable(Interface):
    """What an evaluation needs of an agent (:class:`lq.lit.agent.AgentModule` has it)."""

    protocol: Protocol

    def eval_env(self, split: str = "test", seed: int = 0) -> QuestEnv: ...

    def make_actor(
        self, temperature: float = 1.0, policy: str | CandidateScorer | None = None, restrict: bool | None = None
    ) -> Actor: ...


def evaluate_agent(
    agent: Playable,
    split: str = "test",
    seed: int = 0,
    policy: str | CandidateScorer | None = None,
    restrict: bool | None = None,
    greedy: bool | None = None,
    env: QuestEnv | None = None,
) -> EvalResult:
    """Zero-shot: one episode per quest of ``split``, greedy or sampled at temperature 1 (None: the protocol's
    decoding); ``policy``: a baseline rule or a language model instead of the agent; ``restrict`` overrides the
    protocol's choice among valid candidates; ``env``: an evaluation environment of ``split`` to play in (several
    evaluations share one: it keeps nothing between them that the play reads)."""
    greedy = agent.protocol.greedy if greedy is None else greedy
    env = env if env is not None else agent.eval_env(split, seed)
    return evaluate(env, agent.make_actor(policy=policy, restrict=restrict), seed=seed, greedy=greedy)


def zero_shot(agent: Playable, seed: int = 0, reported: bool = False) -> dict[str, EvalResult]:
    """The zero-shot evaluation every agent run reports, by metric prefix: ``val``, the validation quests under the
    protocol's decoding (what defaults are chosen by); ``test``, the test quests under it (what is reported);
    ``test_greedy`` or ``test_sampled``, the test quests under the other decoding, beside it; and where the agent has
    worlds it never saw to play (``agent.worlds_agent()``: :meth:`lq.lit.agent.AgentModule.on_worlds`), ``worlds``,
    their test quests under the protocol's decoding. ``reported``: ``test`` alone, what Table 1 reads (the quick
    profile's runs, which choose nothing on validation); a frozen pretrained encoder then reads the test quests' lines
    in other batches than after the validation quests (:class:`lq.models.encoder.StateEncoder`'s cache), so its
    figures can differ from the full evaluation's in the last digits, a scratch encoder's cannot."""
    protocol = agent.protocol
    if reported:
        return {"test": evaluate_agent(agent, "test", seed=seed)}
    other = other_decoding(protocol)
    validation = evaluate_agent(agent, "valid", seed=seed)
    played = decodings(agent.eval_env("test", seed), agent.make_actor(), seed, (protocol.decoding, other))
    out = {"val": validation, "test": played[protocol.decoding], f"test_{other}": played[other]}
    worlds = agent.worlds_agent() if hasattr(agent, "worlds_agent") else None
    if worlds is not None:
        out["worlds"] = evaluate_agent(worlds, "test", seed=seed)
    return out


def other_decoding(protocol: Protocol) -> str:
    """The decoding reported beside the protocol's own (``test_greedy`` or ``test_sampled``)."""
    return "sampled" if protocol.greedy else "greedy"


def zero_shot_lines(played: dict[str, EvalResult], protocol: Protocol, seed: int) -> list[str]:
    """What an agent run prints of its :func:`zero_shot` evaluation with evaluation seed ``seed``: each split and
    decoding's goals that it played."""
    other = other_decoding(protocol)
    named = {"val": ("validation", protocol.decoding), "test": ("test", protocol.decoding),
             f"test_{other}": ("test", other), "worlds": ("worlds' test", protocol.decoding)}  # fmt: skip
    shown = [(*where, played[key]) for key, where in named.items() if key in played]
    return [
        f"zero-shot {split} (seed {seed}, {protocol.name} protocol, {decoding}): act goals {r.act_goal_rate:.3f}, "
        f"speech goals {r.speech_goal_rate:.3f}, both {r.act_and_speech_rate:.3f}, by the partner "
        f"{r.partner_act_goal_rate:.3f}"
        for split, decoding, r in shown
    ]


def first_quests(env: QuestEnv, quests: int | None, split: str) -> QuestEnv:
    """``env`` playing only the first ``quests`` of its quests (``lq eval --quests N``: a quick look; None: all)."""
    if quests is None:
        return env
    ids = list(dict.fromkeys(inst.quest.quest_id for inst in env.instances))
    if not (isinstance(quests, int) and 0 < quests <= len(ids)):
        raise ValueError(f"--quests {quests}: the {split} split has {len(ids)} quests; give 1 to {len(ids)}, or leave "
                         "it out for all of them")  # fmt: skip
    env.only(ids[:quests], f"a {split} quest")
    return env


def agent_baselines(
    agent: Playable, split: str = "test", seeds: Sequence[int] = (0,), quests: int | None = None
) -> dict[str, list[EvalResult]]:
    """The baselines through ``agent``'s actor and environment (:func:`lq.eval.baseline_results.baseline_results`: its
    protocol, switch, ability and spaces; one environment for every rule and seed), on the first ``quests`` quests of
    ``split`` (None: all)."""
    env = first_quests(agent.eval_env(split), quests, split)
    return baseline_results(env, agent.make_actor, agent.protocol.greedy, seeds)


def compare_agents(
    agents: Iterable[tuple[str, str, Playable]],
    baseline_runs: int = 0,
    split: str = "test",
    log: Callable[[str], None] = print,
    sampled: bool = True,
    temperature: float = 1.0,
    seed: int = 0,
    quests: int | None = None,
    recorded: Callable[[str], dict[str, EvalResult] | None] | None = None,
) -> list[tuple[str, list[EvalResult]]]:
    """Zero-shot results of agents, given as (where it came from, its row name, the agent), one per seed of a
    configuration (those sharing a row name are grouped), greedy and (with ``sampled``) sampled at ``temperature`` (1:
    the agent's own distribution, what the protocols sample; another is a diagnostic of how sharp the agent is); then
    the baselines through the same actor and environment over ``baseline_runs`` seeds (the first agent's switch,
    ability and spaces), and the ceiling. ``seed``: the evaluation's (the environment's and the sampling's), whatever
    seed trained the agent: 0, as the evaluation each agent run makes after fitting (its ``--eval_seeds``' first), so
    that an agent scores here what its run logged. ``quests``: play only the first that many quests of ``split``,
    agents and baselines alike (None: all). ``agents`` is read one at a time: a generator loads each when its turn
    comes. ``recorded``: where an agent came from to the results its own run recorded by decoding, or None (those
    decodings it holds are read, not played again: the same episodes; a quick profile's run holds one)."""
    if temperature <= 0:
        raise ValueError(f"--temperature {temperature}: sample at a temperature above 0 (greedy is the argmax)")
    at = f" at temperature {temperature:g}" if temperature != 1 else ""
    rows: dict[str, list[EvalResult]] = {}
    first = None
    for where, name, agent in agents:
        first = first or agent
        order = ("greedy", "sampled") if sampled else ("greedy",)
        kept = (recorded(where) if recorded is not None else None) or {}
        played = {d: kept[d] for d in order if d in kept}
        if played:
            log(f"{where}: the episodes its run played after fitting (seed {seed}, {', '.join(played)}), read, not "
                "played again")  # fmt: skip
        missing = [d for d in order if d not in played]
        if missing:  # each play seeds its own draws: the same episodes as beside the others
            env = first_quests(agent.eval_env(split, seed), quests, split)
            played |= decodings(env, agent.make_actor(temperature), seed, missing)
        played = {d: played[d] for d in order}
        for decoding, result in played.items():
            decoding += at if decoding == "sampled" else ""
            rates = f"act goals {result.act_goal_rate:.3f}, speech goals {result.speech_goal_rate:.3f}"
            log(f"{where} ({decoding}): {rates}")
            rows.setdefault(f"{name} ({decoding})", []).append(result)
    if baseline_runs and first is not None:
        for key, results in agent_baselines(first, split, range(baseline_runs), quests).items():
            rows[TITLES[key]] = results
    return list(rows.items())
