"""Whether a stage's context lengths fit the encoders that read them, checked on its config before anything is built.

An encoder has a fixed table of positions (MiniLM's 512; a scratch encoder's ``max_positions``). A context longer than
that fails only when the first long one comes, deep in a run: an index error in the position embeddings, on a GPU a
device-side assert that names nothing. :func:`length_problems` finds each such mismatch in a stage's config and says,
in one line, the config file that set the length, the field and the fix; the stage CLIs refuse a run that has one
(:class:`lq.lit.cli.StageCLI`), and ``benchmarks/rl.py`` a profile that has one.

What is checked: an agent's scratch encoder reads its whole context (``model.context_length`` against
``model.agent.scratch.max_positions``); the environment's partner and DM read ``model.env.context_length`` (against
their checkpoints' encoders, once trained); a poly-encoder stage's encoder reads ``data.context_length``. A frozen
pretrained agent encoder reads a context line by line and its appended layers have no positions: no length of the
agent's own is too long for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from lq.conf import ROOT

# a length that an encoder has too few positions for: (its field, its value, the rest of the line: what and the fix)
Problem = tuple[str, int, str]


def length_problems(stage: str, config: Mapping[str, Any], files: Sequence[str | Path] = ()) -> list[str]:
    """Each context length of ``config`` (a stage's config as parsed or merged: ``model``, ``data``) that an encoder
    reading it has too few positions for, as one line naming the file of ``files`` (the run's config files, in the
    order read) that set it, the field and the fix; empty where every length fits."""
    model = config.get("model") or {}
    found = agent_lengths(model) if "env" in model else encoder_lengths(config)  # an agent's: its environment
    return [f"{origin(field, value, files)}: {field} {value} {rest}" for field, value, rest in found]


def agent_lengths(model: Mapping[str, Any]) -> list[Problem]:
    """An agent stage's: its scratch encoder's (none with a pretrained one) and the partner's and the DM's."""
    from lq.models.agent import AgentConfig
    from lq.models.encoder import EncoderSpec, spec_positions

    found: list[Problem] = []
    length = model.get("context_length")
    if length is not None and not model.get("pretrained_checkpoint"):
        scratch = (model.get("agent") or {}).get("scratch")
        limit = spec_positions(EncoderSpec(**scratch) if isinstance(scratch, Mapping) else AgentConfig().scratch)
        if length > limit:
            fix = f"set model.agent.scratch.max_positions: {length} (or model.context_length: {limit} or less)"
            found.append(("model.context_length", length, f"exceeds the {limit} positions of the agent's scratch "
                                                          f"encoder; {fix}"))  # fmt: skip
    return found + env_lengths(model.get("env") or {})


def env_lengths(env: Mapping[str, Any]) -> list[Problem]:
    """The environment's: ``context_length`` against the partner's and the DM's encoders, where trained."""
    from lq.envs.models import ROLES, too_long_for

    length = env.get("context_length")
    found = too_long_for(length, {role: env.get(f"{role}_checkpoint") for role in ROLES})
    if found is None:
        return []
    limit, who = found
    fix = f"set model.env.context_length: {limit} or less (the length they were trained at, at most)"
    return [("model.env.context_length", length, f"exceeds the {limit} positions of {who}; {fix}")]


def encoder_lengths(config: Mapping[str, Any]) -> list[Problem]:
    """A poly-encoder stage's (pretraining, the partner, the DM): ``data.context_length`` against its encoder's."""
    from lq.models.encoder import EncoderSpec, spec_positions

    length = (config.get("data") or {}).get("context_length")
    encoder = (config.get("model") or {}).get("encoder") or {}
    spec = EncoderSpec(**(encoder.get("spec") or {}))
    limit = spec_positions(spec)
    if length is None or length <= limit:
        return []
    if spec.init == "scratch":
        fix = f"set model.encoder.spec.max_positions: {length} (or data.context_length: {limit} or less)"
    else:  # a pretrained start keeps its position table
        fix = f"set data.context_length: {limit} or less (an encoder initialised from {spec.init} keeps its positions)"
    name = encoder.get("name", "")
    return [("data.context_length", length, f"exceeds the {limit} positions of the {name} encoder; {fix}")]


def origin(field: str, value: object, files: Sequence[str | Path]) -> str:
    """Where ``field`` got ``value``: the last of ``files`` that sets it (``conf/...`` for lq's own), else the command
    line or the defaults."""
    setter = None
    for file in files:
        found, got = dotted(yaml.safe_load(Path(file).read_text(encoding="utf-8")) or {}, field)
        if found:
            setter = (file, got)
    if setter is None or setter[1] != value:  # not in a file, or a later --field overrode the file's
        return "the command line or the defaults" if setter is None else "the command line"
    return shown(setter[0])


def dotted(config: Mapping[str, Any], field: str) -> tuple[bool, object]:
    """Whether ``config`` sets ``field`` (``a.b.c``), and its value there."""
    node: object = config
    for part in field.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def shown(file: str | Path) -> str:
    """A config file as the docs name it: ``conf/...`` for lq's own (``conf/`` links to the package's), else as
    given."""
    path = Path(file).resolve()
    return f"conf/{path.relative_to(ROOT)}" if path.is_relative_to(ROOT) else str(file)
