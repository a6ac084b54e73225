"""lq from Python: build environments, load agents, evaluate them into a DataFrame, and train every stage, from any
working directory (every path is an argument; the configs ship inside the package, :mod:`lq.conf`).

>>> import lq
>>> agent = lq.load_agent("bundles/rl-scratch")            # a bundle (lq export) or a checkpoint
>>> env = lq.api.gym_env(agent)                              # gymnasium lq/Quest-v0 over its data, partner and DM
>>> policy = lq.api.AgentPolicy(agent, env)                  # (observation, info) -> the agent's next action
>>> lq.api.evaluate(["bundles/rl-scratch"], baselines=1)     # the tables' rows, as a pandas DataFrame

The stages: :func:`fit_pretrain`, :func:`fit_partner`, :func:`fit_dm`, :func:`fit_bc`, :func:`fit_rl` take the
command line of ``lq STAGE fit`` (a list) or the same as a dict, and return the run's metrics; configs by
:func:`lq.conf.path`, e.g. ``fit_rl(["--config", str(lq.conf.path("rl.yaml")), ...])``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium
import pandas as pd
import torch

from lq import conf
from lq.envs.gym import ENV_ID
from lq.envs.protocol import protocol_of
from lq.envs.quest_env import QuestEnv
from lq.envs.spec import EnvSpec
from lq.eval import COLUMNS, mean_std
from lq.lit.agent import AgentModule
from lq.lit.checkpoints import evaluate_checkpoints, export_agent
from lq.lit.checkpoints import load_agent as _load_agent
from lq.lit.entry import fit_bc, fit_dm, fit_partner, fit_pretrain, fit_rl

__all__ = [
    "AgentPolicy",
    "EnvSpec",
    "build_env",
    "conf",
    "evaluate",
    "export_agent",
    "fit_bc",
    "fit_dm",
    "fit_partner",
    "fit_pretrain",
    "fit_rl",
    "gym_env",
    "load_agent",
]


def load_agent(path: str | Path, **overrides: Any) -> AgentModule:
    """A trained agent from a bundle folder (``lq export``) or a BC / RL checkpoint, in eval mode; ``overrides``
    replace hyperparameters (``eval_max_steps=...``, ``protocol="restricted"``: its environment's by their names,
    :data:`lq.envs.spec.FLAT`)."""
    return _load_agent(path, **overrides)


def build_env(spec: EnvSpec, split: str = "test", **kwargs: Any) -> QuestEnv:
    """The batched :class:`QuestEnv` of ``split``'s quests that ``spec`` describes (its data, partner, DM, protocol
    and settings: :class:`EnvSpec`); ``kwargs``: batch_size, seed, device, max_steps, auto_reset, sampler
    (:meth:`EnvSpec.build`). An agent's own: ``agent.env_spec``."""
    return spec.build(split, **kwargs)


def gym_env(agent: AgentModule | str | Path, split: str = "test", **kwargs: Any) -> gymnasium.Env:
    """``gymnasium.make("lq/Quest-v0")`` over the environment ``agent`` (an agent, a bundle or a checkpoint) is
    evaluated in (:meth:`AgentModule.eval_env`: its data, partner, DM and their calibration, protocol, context length).
    ``kwargs`` go to the environment (``render_mode``)."""
    module = agent if isinstance(agent, AgentModule) else load_agent(agent)
    return gymnasium.make(ENV_ID, env=module.eval_env(split), **kwargs)


class AgentPolicy:
    """A trained agent as a Gymnasium policy: ``policy(observation, info) -> action`` for ``env`` (an
    ``lq/Quest-v0`` environment; the agent reads the Dungeon Master's ranking of its own context from it, as in
    training). Its recurrent state starts again at each episode's first step (``info["steps"] == 0``). Decoding is the
    agent's protocol's (sampled under ``paper``) unless ``greedy`` is given. ``baseline`` ("random", "overlap": the
    rules of :mod:`lq.rl.baseline_policies`) plays that rule in place of the agent's policies, with the agent's switch
    and spaces, as the tables' baselines do; ``restrict``: among the valid candidates only (default: the protocol's
    choice; the tables' "valid candidates" rows are ``restrict=True``)."""

    def __init__(
        self,
        agent: AgentModule,
        env: Any,
        greedy: bool | None = None,
        baseline: str | None = None,
        restrict: bool | None = None,
    ):
        self.agent, self.env = agent, env.unwrapped.env
        self.greedy = agent.protocol.greedy if greedy is None else greedy
        self.actor = agent.make_actor(policy=baseline, restrict=restrict)
        self.actor.cache_candidates()
        self.state = None

    @torch.no_grad()
    def __call__(self, observation: str, info: dict) -> str:
        if self.state is None or info.get("steps", 0) == 0:
            self.state = self.actor.start(1)
        slot = self.env.slots[0]
        ids = [self.env.action_index[a] for a in info["valid_actions"] if a in self.env.action_index]
        raw = {"valid_action_ids": ids, "instance": slot.index}
        (command,), _ = self.actor.step(self.env, [observation], [raw], self.state, greedy=self.greedy)
        return command[1]


def evaluate(
    agents: Sequence[str | Path],
    baselines: int = 0,
    split: str = "test",
    sampled: bool = True,
    protocol: str | None = None,
    quests: int | None = None,
) -> pd.DataFrame:
    """Zero-shot evaluation of agents (bundles or checkpoints; the seeds of one configuration are averaged) beside
    the baselines over ``baselines`` seeds: one row per agent and decoding, then per baseline, as ``lq eval`` prints
    them (columns ``runs`` and, for each figure, its mean and std); ``quests``: the first that many quests of
    ``split`` only (``lq eval --quests``; None: all)."""
    overrides = {"protocol": protocol_of(protocol)} if protocol else {}
    played = {"sampled": sampled, "quests": quests}
    rows = evaluate_checkpoints(agents, baselines, split, log=lambda _: None, **played, **overrides)
    records = []
    for name, results in rows:
        stats = mean_std(results)
        record: dict[str, Any] = {"agent": name, "runs": len(results)}
        for key, _ in COLUMNS:
            record[f"{key}_mean"], record[f"{key}_std"] = stats[key]
        records.append(record)
    return pd.DataFrame.from_records(records).set_index("agent")
