"""How lq reads its configs: the profiles (:class:`Profile`), protocols and objectives that ``conf/`` holds, and a
stage command line's config merged as LightningCLI merges it (:func:`merged_config`). Which files a stage reads, in
which order, where its runs go and what they need is each stage kind's (:mod:`lq.stages`: :class:`lq.stages.Run`).

A profile is a folder of ``conf/profile/``: one file per stage family (``pretrain.yaml``, ``env.yaml`` for the
partner and the DM, ``rl.yaml``, ``bc.yaml``: each stage kind names its own, ``profile_file``) and ``profile.yaml``,
read here only: ``env_encoder`` (the encoder of the environment's partner and DM) or ``base`` (an overlay: the base's
files, then its own; the stages it has no file for are the base's runs, checkpoints shared)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from lq.conf import ROOT, path

# where a run's outputs go and whether it finished: lq.data.outputs's, named here too, where they were first
from lq.data.outputs import DONE, finished, mark_finished, outputs_for, unfinished  # noqa: F401


def profiles() -> list[str]:
    return sorted(p.parent.name for p in (ROOT / "profile").glob("*/profile.yaml"))


def protocols() -> list[str]:
    return sorted(p.stem for p in (ROOT / "protocol").glob("*.yaml"))


def objectives() -> list[str]:
    """RL's objectives: ``conf/objective/NAME.yaml`` (``paper``: Table 6 and the released code; ``lq``: lq's)."""
    return sorted(p.stem for p in (ROOT / "objective").glob("*.yaml"))


@dataclass(frozen=True)
class Profile:
    """A folder of ``conf/profile/``: its stage files and what it says of itself in ``profile.yaml``."""

    name: str

    def __post_init__(self) -> None:
        if not (ROOT / "profile" / self.name / "profile.yaml").is_file():
            raise FileNotFoundError(
                f"{ROOT / 'profile' / self.name}/profile.yaml: no such profile (PROFILE={self.name}); choose from "
                f"{', '.join(profiles())}"
            )

    @cached_property
    def meta(self) -> dict:
        file = ROOT / "profile" / self.name / "profile.yaml"
        meta = yaml.safe_load(file.read_text()) or {}
        unknown = set(meta) - {"base", "env_encoder"}
        if unknown or ("base" in meta) == ("env_encoder" in meta):
            raise ValueError(
                f"{file}: a profile.yaml holds env_encoder (a base profile) or base (an overlay), nothing else; "
                f"found {', '.join(sorted(meta)) or 'nothing'}"
            )
        return meta

    @property
    def base(self) -> Profile:
        """The profile whose environment models, pretrained encoders and sizes this one uses (itself, or the one an
        overlay such as ``quick`` trains its agents less than)."""
        return Profile(self.meta["base"]) if "base" in self.meta else self

    @property
    def is_overlay(self) -> bool:
        return self.base != self

    @property
    def env_encoder(self) -> str:
        return self.base.meta["env_encoder"]

    def owns(self, file: str | None) -> bool:
        """An overlay with a file of its own named ``file`` (a stage kind's ``profile_file``: ``rl``, ``env``, ...):
        its runs of the stages that read it differ from its base's."""
        return file is not None and self.is_overlay and (ROOT / "profile" / self.name / f"{file}.yaml").is_file()

    def files(self, file: str) -> list[Path]:
        """The profile's files named ``file`` (``rl``, ``env``, ...), in order: the base's, then an overlay's own (where
        it has one)."""
        name = f"{file}.yaml"
        files = [path("profile", self.base.name, name)]
        return [*files, ROOT / "profile" / self.name / name] if self.owns(file) else files

    def files_if_any(self, file: str) -> list[Path]:
        """:meth:`files`, or none where the base profile has no file named ``file`` (one that only some profiles need,
        such as ``timeline_scratch``)."""
        return self.files(file) if (ROOT / "profile" / self.base.name / f"{file}.yaml").is_file() else []


DEFAULT_THREADS = 1  # torch's CPU threads of a run whose configs set none (the stage CLIs' --threads default)


def config_threads(config: dict[str, Any]) -> int:
    """torch's CPU threads of a run whose merged config (:func:`merged_config`) is ``config``."""
    return int(config.get("threads", DEFAULT_THREADS))


def merged(base: dict, over: dict) -> dict:
    """``over`` laid over ``base``, nested dicts key by key (as LightningCLI merges its ``--config`` files)."""
    out = dict(base)
    for key, value in over.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def config_names(files) -> list[str]:
    """Config files as lq's conf/ names them (``profile/tiny/rl.yaml``); others as given."""
    names = []
    for file in files:
        where = Path(str(file)).resolve()
        names.append(str(where.relative_to(ROOT)) if where.is_relative_to(ROOT) else str(file))
    return names


def flag_values(args: Sequence[str], flag: str) -> list[str]:
    """The values of every ``flag`` in ``args`` (``FLAG VALUE`` or ``FLAG=VALUE``), in order: a command line's
    ``--config`` files; the last of them, the one a parser keeps."""
    values = []
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            values.append(args[i + 1])
        elif arg.startswith(f"{flag}="):
            values.append(arg.split("=", 1)[1])
    return values


def merged_config(args: list[str] | tuple[str, ...], base: dict[str, Any] | None = None) -> dict[str, Any]:
    """The config a stage's command line sets, read by lq without parsing it with the stage's CLI: its ``--config``
    files merged in order, then each ``--a.b value`` (or ``--a.b=value``) put at ``a.b`` (values read as YAML). The
    stage CLI's own defaults are not in it. ``base``: a config the command line is read over."""
    config: dict[str, Any] = dict(base or {})
    i = 2 if len(args) > 1 and args[1] == "fit" else 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--"):
            raise ValueError(f"{arg!r}: expected --KEY VALUE in a stage's command line")
        key, sep, value = arg[2:].partition("=")
        if not sep:
            value, i = args[i + 1], i + 1
        i += 1
        if key == "config":
            config = merged(config, yaml.safe_load(Path(value).read_text(encoding="utf-8")) or {})
            continue
        parsed = yaml.safe_load(value) if value != "" else ""
        config = _set(config, key.split("."), parsed)
    return config


def _set(config: dict, parts: list[str], value: Any) -> dict:
    """``config`` with ``value`` at the path ``parts``, in place of what was there (a dict given on the command line
    replaces the config files' one at its key, as the stage's CLI parses it: ``--model.encoder.tasks '{...}'``)."""
    out = dict(config)
    head, rest = parts[0], parts[1:]
    out[head] = _set(out[head] if isinstance(out.get(head), dict) else {}, rest, value) if rest else value
    return out
