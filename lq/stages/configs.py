"""A run's resolved configuration (:meth:`lq.stages.Stage.resolve`) read back, and the two questions the scheduler
asks of it without loading a checkpoint: is a finished or stopped run's folder this run's (:func:`same_run`), and can
an RL agent start from a BC agent (:func:`start_differences`, on :data:`SAME_AGENT` and :data:`ENVIRONMENT`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

# what must match for one agent's weights to be another's start (``lq rl``'s ``init_from``): encoder, sizes, data (and
# training pool) and what the context shows; ``env.`` keys are the environment's (:class:`lq.envs.spec.EnvSpec`); the
# module's hyperparameters (lq.lit.agent) and the resolved configs (``model``) name them alike
SAME_AGENT = ("encoder", "pretrained_checkpoint", "agent", "candidate_dim", "context_length", "env.data_dir",
              "env.pool", "env.objects")  # fmt: skip

# what else an agent's evaluation depends on, for a BC agent to be compared with an RL agent or be its start: the
# protocol and the environment's partner and DM
ENVIRONMENT = ("env.protocol", "env.context_length", "env.partner_calibration", "env.partner_checkpoint",
               "env.dm_checkpoint")  # fmt: skip

# what a run reports and where, not what it trains: two runs that differ only here made the same checkpoints
REPORTED = ("sources", "trainer.logger", "tables", "eval_seeds", "zero_shot", "retrain")


# settings the config files name since 2026-12-07 (conf/agent.yaml, conf/rl.yaml: every setting a module reads has
# its value there), with the value the runs written before had (the module's default then): a saved config without
# one reads as having it, so that a run finished before is still found as done
NAMED_SINCE = {"model.eval_max_steps": None, "model.worlds": None, "model.max_steps": None, "model.priority_mix": 0.5,
               "model.recent_episodes": 200, "model.adam_betas": [0.9, 0.999], "model.gain_lr_scale": 1.0,
               "model.imitation_batch": 4, "model.budgets": [], "model.select_every": 0, "model.curriculum": None,
               "model.curriculum_stages": 4, "model.curriculum_interactions": 100_000, "model.imitation_patience": 0,
               "model.imitation_decay": 0.0}  # fmt: skip


def read_config(file: str | Path) -> dict[str, Any] | None:
    """A run's resolved config file, or None where there is none (a run not started, or one from before lq resolved
    runs into files)."""
    file = Path(file)
    if not file.is_file():
        return None
    config = yaml.safe_load(file.read_text(encoding="utf-8"))
    return config if isinstance(config, dict) and "sources" in config else None


def _at(config: Mapping, key: str) -> Any:
    """The value at a dotted ``key`` of a nested config (None where any part is missing)."""
    value: Any = config
    for part in key.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _less(config: Mapping, keys: Sequence[str]) -> dict:
    """``config`` without the dotted ``keys``."""
    out = dict(config)
    for key in keys:
        head, _, rest = key.partition(".")
        if rest and isinstance(out.get(head), Mapping):
            out[head] = _less(out[head], [rest])
        elif not rest:
            out.pop(head, None)
    return out


def same_run(saved: Mapping, resolved: Mapping) -> bool:
    """Whether a run's folder holds what ``resolved`` would train: its resolved config ``saved`` is the same, but for
    what a run only reports (:data:`REPORTED`: its logger, its tables, its evaluation seeds, the names of its files)."""
    saved = _with_named_since(saved, resolved)
    return _less(saved, REPORTED) == _less(resolved, REPORTED)


def _with_named_since(saved: Mapping, resolved: Mapping) -> dict:
    """``saved`` with each :data:`NAMED_SINCE` setting it lacks and ``resolved`` names, at the value it had."""
    out = dict(saved)
    for key, value in NAMED_SINCE.items():
        head, _, rest = key.partition(".")
        theirs, ours = out.get(head), resolved.get(head)
        if isinstance(theirs, Mapping) and isinstance(ours, Mapping) and rest in ours and rest not in theirs:
            out[head] = {**theirs, rest: value}
    return out


def differences(theirs: Mapping[str, Any], ours: Mapping[str, Any], keys: Sequence[str]) -> dict:
    """Where an agent's values ``theirs`` (by key: :data:`SAME_AGENT`, :data:`ENVIRONMENT`) differ from those of an
    agent ``ours`` that would start from it, at ``keys``: their values. An agent without head temperatures is the
    agent with both at 1, so one that learns them starts from it as it is. The one rule the scheduler (resolved
    configs: :func:`start_differences`) and the RL module (checkpoints: :func:`lq.lit.agent.start_differences`) read."""
    a = dict(theirs)
    if isinstance(a.get("agent"), Mapping) and isinstance(ours.get("agent"), Mapping):
        if ours["agent"].get("head_temperature") and not a["agent"].get("head_temperature"):
            a["agent"] = {**a["agent"], "head_temperature": ours["agent"]["head_temperature"]}
    return {k: a[k] for k in keys if a[k] != ours[k]}


def start_differences(theirs: Mapping, ours: Mapping, keys: Sequence[str] = (*SAME_AGENT, *ENVIRONMENT)) -> dict:
    """Where the resolved config of an agent ``theirs`` differs from that of an agent ``ours`` that would start from it
    (or be compared with it), at ``keys`` of their ``model`` (:func:`differences`)."""
    return differences(*({k: _at(c.get("model") or {}, k) for k in keys} for c in (theirs, ours)), keys)
