"""The one place that knows how a stage runs: (stage, encoder, profile, data, protocol, RL's objective) to the config
files, in the order they are read, and every checkpoint path. A stage run is a value, :class:`Run`: its configs, their
merged config, its command line, its outputs, the runs it needs and whether it is done; :class:`Resolver` makes the
runs of one profile, protocol, objective and dataset. ``lq stage`` (the Makefile's stage targets), ``lq experiment``
and the stage CLIs' defaults all read it.

A profile is a folder of ``conf/profile/``: one file per stage family (``pretrain.yaml``, ``env.yaml`` for the
partner and the DM, ``rl.yaml``, ``bc.yaml``) and ``profile.yaml``, read here only: ``env_encoder`` (the encoder of
the environment's partner and DM) or ``base`` (an overlay: the base's files, then its own; the stages it has no file
for are the base's runs, checkpoints shared). Where things go (``outputs_for``)::

    OUTPUTS/pretrain/ENCODER/best.ckpt              pretrained encoders (and their vectors of the agents' spaces)
    OUTPUTS/{partner,dm}/ENV_ENCODER/best.ckpt      the environment's partner and Dungeon Master
    OUTPUTS/{rl,bc}/ENCODER/ABILITY-SWITCH/seed-N/{agent,best}.ckpt   the agents (rl-paper/: the paper objective's)
    OUTPUTS/OVERLAY/STAGE/...                       an overlay's runs of the stages it has a file of its own for
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from lq.conf import ROOT, path

AGENT_STAGES = ("rl", "bc")
ENV_STAGES = ("partner", "dm")
STAGES = ("pretrain", *ENV_STAGES, *AGENT_STAGES)
# the jobs that are not a stage's training run: the dataset (generated), the partner's calibration, a pretrained
# encoder's vectors of the agents' spaces, the baselines and the ceiling played in an agent's environment
PREPARATION = ("data", "calibrate", "spaces", "baselines")
# what an RL module built for a preparation job is built with (lq experiment calibrate, spaces, baselines)
BUILT_WITH = {"calibrate": "scratch", "baselines": "scratch"}
# the profile file each stage reads
PROFILE_FILE = {"pretrain": "pretrain", "partner": "env", "dm": "env", "rl": "rl", "bc": "bc"}
# the checkpoint an agent stage keeps: RL its final agent, BC its best validation epoch
AGENT_CHECKPOINT = {"rl": "agent.ckpt", "bc": "best.ckpt"}
# written beside a stage's checkpoint once its run has done all its work, last: a checkpoint without it is a run's
# that was interrupted (killed, Ctrl-C, failed) and counts as not there
DONE = "done.json"


def finished(checkpoint: str | Path) -> bool:
    """Whether ``checkpoint`` is there and the run that wrote it finished (:data:`DONE` beside it names it)."""
    checkpoint = Path(checkpoint)
    marker = checkpoint.parent / DONE
    if not checkpoint.is_file() or not marker.is_file():
        return False
    try:
        return json.loads(marker.read_text(encoding="utf-8")).get("checkpoint") == checkpoint.name
    except (ValueError, AttributeError):  # a marker from elsewhere, half a file: not this run's
        return False


def mark_finished(checkpoint: str | Path, **about: object) -> Path:
    """Write :data:`DONE` beside ``checkpoint`` (atomically), naming it and ``about`` (the run id, the stage)."""
    from lq.data.io import write_json

    checkpoint = Path(checkpoint)
    marker = checkpoint.parent / DONE
    write_json(marker, {"checkpoint": checkpoint.name, **about})
    return marker


def unfinished(folder: str | Path) -> None:
    """Remove a folder's :data:`DONE` before a run writes its checkpoints there: until it finishes they are not done."""
    (Path(folder) / DONE).unlink(missing_ok=True)


def outputs_for(data_dir: str | Path) -> str:
    """Where a dataset's checkpoints go: ``outputs/`` for the default data, ``outputs/<folder name>/`` for any other, so
    that a partner, DM or agent trained on one dataset is never picked up for another."""
    return "outputs" if Path(data_dir) == Path("data/default") else f"outputs/{Path(data_dir).resolve().name}"


def model_dir(stage_dir: str, encoder: str) -> str:
    """A poly-encoder stage's folder (pretraining, partner, DM): ``STAGE_DIR/ENCODER``."""
    return f"{stage_dir.rstrip('/')}/{encoder}"


def pretrained_checkpoint(pretrain_dir: str, encoder: str) -> str | None:
    """An agent's frozen encoder: the pretraining run's best checkpoint (none for scratch)."""
    return None if encoder == "scratch" else f"{model_dir(pretrain_dir, encoder)}/best.ckpt"


def agent_dir(stage_dir: str, encoder: str, ability: str, switch: str, seed: int) -> str:
    """``STAGE_DIR/ENCODER/ABILITY-SWITCH/seed-N``: one folder per configuration and seed of an agent stage."""
    return f"{stage_dir.rstrip('/')}/{encoder}/{ability}-{switch}/seed-{seed}"


def bc_checkpoint(bc_dir: str, encoder: str, ability: str, switch: str, seed: int) -> str:
    """The BC agent of a configuration and seed: what an RL run of the same one starts from (``init_from: bc``)."""
    return f"{agent_dir(bc_dir, encoder, ability, switch, seed)}/{AGENT_CHECKPOINT['bc']}"


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

    def owns(self, stage: str) -> bool:
        """An overlay with a file of its own for ``stage``: its runs of that stage differ from its base's."""
        return self.is_overlay and (ROOT / "profile" / self.name / f"{PROFILE_FILE[stage]}.yaml").is_file()

    def files(self, stage: str) -> list[Path]:
        """The profile's files of ``stage``, in order: the base's, then an overlay's own (where it has one)."""
        name = f"{PROFILE_FILE[stage]}.yaml"
        files = [path("profile", self.base.name, name)]
        return [*files, ROOT / "profile" / self.name / name] if self.owns(stage) else files


DEFAULT_THREADS = 1  # torch's CPU threads of a run whose configs set none (the stage CLIs' --threads default)


def config_threads(config: dict[str, Any]) -> int:
    """torch's CPU threads of a run whose merged config (:func:`merged_config`) is ``config``."""
    return int(config.get("threads", DEFAULT_THREADS))


def starts_from_bc(config: dict[str, Any]) -> bool:
    """Whether an RL run of merged config ``config`` starts from the BC agent of its configuration and seed
    (``init_from: bc``, the lq objective's)."""
    return (config.get("model") or {}).get("init_from") == "bc"


def merged(base: dict, over: dict) -> dict:
    """``over`` laid over ``base``, nested dicts key by key (as LightningCLI merges its ``--config`` files)."""
    out = dict(base)
    for key, value in over.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def merged_config(args: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """The config a stage's command line sets, read by lq without parsing it with the stage's CLI: its ``--config``
    files merged in order, then each ``--a.b value`` (or ``--a.b=value``) laid over them at ``a.b`` (values read as
    YAML). The stage CLI's own defaults are not in it."""
    config: dict[str, Any] = {}
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
        for part in reversed(key.split(".")):
            parsed = {part: parsed}
        config = merged(config, parsed)
    return config


@dataclass(frozen=True)
class Run:
    """One run of a stage, identified by what tells it from every other: ``stage``, ``encoder`` (the environment
    models' for the partner and the DM), the agents' ``ability``, ``switch`` and ``seed``, the ``profile`` (a folder of
    ``conf/profile/``), the agents' ``protocol``, RL's ``objective`` and the ``data``. ``root``: where the dataset's
    outputs go (default :func:`outputs_for`); ``folder``: the stage's folder where not the profile's (an experiment's
    pretraining children, a deviation-table row); ``extra``: arguments after the configs'.

    A preparation job (:data:`PREPARATION`) is a run too: ``data`` (its dataset generated), ``calibrate`` (the
    partner's calibration in the agents' environment), ``spaces`` (``encoder``'s vectors of the agents' spaces) and
    ``baselines`` (the rules played in the environment of an agent of ``ability`` and ``switch``); the last three
    build an RL agent module of their identity (:attr:`module`) and ``extra`` is that module's arguments. What a run
    does not depend on is set to one value (the objective of any run but RL's and the baselines', the protocol of a
    poly-encoder's), so that two runs that write the same files are equal."""

    stage: str
    encoder: str = ""
    ability: str = "act_speech"
    switch: str = "hardcoded"
    seed: int = 0
    profile: str = "tiny"
    protocol: str = "paper"
    objective: str = "lq"
    data: str = "data/default"
    root: str = ""
    folder: str = ""
    extra: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if self.stage not in (*STAGES, *PREPARATION):
            raise ValueError(f"unknown stage {self.stage}: choose from {', '.join((*STAGES, *PREPARATION))}")
        object.__setattr__(self, "root", self.root or outputs_for(self.data))
        object.__setattr__(self, "extra", tuple(self.extra))
        same = {"objective": "lq"} if self.stage not in ("rl", "baselines") else {}
        if self.stage in ("data", "pretrain", *ENV_STAGES, "calibrate", "spaces"):  # the agents' choices: none
            same.update(ability="act_speech", switch="hardcoded", seed=0 if self.stage != "pretrain" else self.seed)
        if self.stage in ("data", "pretrain", *ENV_STAGES):
            same.update(protocol="paper")
        if self.stage in BUILT_WITH:
            same.update(encoder=BUILT_WITH[self.stage])
        if self.stage == "data":
            same.update(encoder="", profile="tiny")
        for name, value in same.items():
            object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return f"Run({self.stage} {self.encoder} {self.ability}-{self.switch} seed {self.seed}, {self.profile})"

    # -- where it goes ----------------------------------------------------------------------------------------

    def stage_dir(self, stage: str | None = None) -> str:
        """Where ``stage``'s runs (this one's by default) go: ``ROOT/STAGE``, or ``ROOT/OVERLAY/STAGE`` for the stages
        an overlay profile has a file of its own for (its runs differ from the base's); RL under an objective other
        than lq's goes to ``.../rl-OBJECTIVE``, beside lq's agents, not over them."""
        stage = stage or self.stage
        if stage == self.stage and self.folder:
            return self.folder
        name = f"{stage}-{self.objective}" if stage == "rl" and self.objective != "lq" else stage
        owned = Profile(self.profile).owns(stage)
        return f"{self.root}/{self.profile}/{name}" if owned else f"{self.root}/{name}"

    @property
    def dir(self) -> str:
        """The run's folder: ``STAGE_DIR/ENCODER`` (poly-encoders), ``STAGE_DIR/ENCODER/ABILITY-SWITCH/seed-N``."""
        if self.stage in AGENT_STAGES:
            return agent_dir(self.stage_dir(), self.encoder, self.ability, self.switch, self.seed)
        return model_dir(self.stage_dir(), self.encoder)

    @property
    def checkpoint(self) -> str:
        return f"{self.dir}/{AGENT_CHECKPOINT.get(self.stage, 'best.ckpt')}"

    @property
    def outputs(self) -> dict[str, str]:
        """Every path the run writes: its ``checkpoint``, ``last`` (the resumable one), the ``done`` marker, and for a
        poly-encoder its ``candidates`` folder (its encoded candidates; the partner's calibration beside them, a
        pretrained encoder's vectors of the agents' spaces). A preparation job: ``data``, its dataset's manifest;
        ``calibrate`` and ``spaces``, the ``candidates`` folder its file goes to (named by a key of the models' weights,
        known once they are trained: :func:`lq.experiments.running.prepared`); ``baselines``, none (MLflow's)."""
        if self.stage == "data":
            return {"manifest": f"{self.data}/manifest.json"}
        if self.stage in ("calibrate", "spaces"):
            of = self.env_run("partner") if self.stage == "calibrate" else replace(self, stage="pretrain")
            return {"candidates": of.outputs["candidates"]}
        if self.stage == "baselines":
            return {}
        out = {"checkpoint": self.checkpoint, "last": f"{self.dir}/last.ckpt", "done": f"{self.dir}/{DONE}"}
        if self.stage not in AGENT_STAGES:
            out["candidates"] = f"{self.dir}/candidates"
        return out

    @property
    def done(self) -> bool:
        """Its checkpoint is there and the run that wrote it finished (:func:`lq.conf.resolver.finished`); the dataset,
        its manifest. The calibration and the spaces' vectors are found by their key
        (:func:`lq.experiments.running.prepared`)."""
        if self.stage == "data":
            return Path(self.outputs["manifest"]).is_file()
        if self.stage in ("calibrate", "spaces", "baselines"):
            raise ValueError(f"{self!r}: its file is found by a key of the models (lq.experiments.running.prepared)")
        return finished(self.checkpoint)

    # -- what it reads -------------------------------------------------------------------------------------------

    @property
    def configs(self) -> list[Path]:
        """The config files, in the order they are read: the base (agent.yaml for the agents, poly_encoder.yaml for
        pretraining, the partner and the DM), the stage's, the encoder's, the profile's (base, then overlay), for the
        agents the protocol's, and for RL its objective's (last: it sets sizes of its own, such as the paper's 32
        environments)."""
        base = "agent.yaml" if self.stage in AGENT_STAGES else "poly_encoder.yaml"
        files = [path(base), path(f"{self.stage}.yaml"), path("encoder", f"{self.encoder}.yaml")]
        files += Profile(self.profile).files(self.stage)
        if self.stage in AGENT_STAGES:
            files.append(path("protocol", f"{self.protocol}.yaml"))
        if self.stage == "rl":
            files.append(path("objective", f"{self.objective}.yaml"))
        return files

    @cached_property
    def config(self) -> dict[str, Any]:
        """The merged config of :attr:`args` (:func:`merged_config`: the files, then the arguments over them)."""
        return merged_config(self.args)

    @property
    def threads(self) -> int:
        """torch's CPU threads of the run (a preparation job's: its module's run's)."""
        return config_threads((self.module if self.stage in PREPARATION[1:] else self).config)

    def needs(self) -> list[Run]:
        """The runs this one needs before it, in order: the dataset; ``general`` before ``adaptive`` (initialised from
        it, of the same folder when pretraining); the partner and the DM, and the partner's calibration, before the
        agents and the baselines; an agent's pretrained encoder and its vectors of the agents' spaces; and the BC agent
        of the same configuration and seed that an RL agent starts from (``init_from: bc``)."""
        if self.stage == "data":
            return []
        common = {"profile": self.profile, "data": self.data, "root": self.root}
        needed = [Run("data", data=self.data, root=self.root)]
        if self.stage == "pretrain" and self.encoder == "adaptive":
            needed.append(replace(self, encoder="general", extra=()))
        if self.stage in AGENT_STAGES and self.encoder == "adaptive":
            needed.append(Run("pretrain", "general", **common))
        if self.stage in (*AGENT_STAGES, "calibrate", "baselines"):
            needed += [self.env_run(s) for s in ENV_STAGES]
        if self.stage in (*AGENT_STAGES, "baselines"):
            needed.append(Run("calibrate", protocol=self.protocol, **common))
        if self.stage in (*AGENT_STAGES, "spaces") and self.encoder != "scratch":
            needed.append(Run("pretrain", self.encoder, **common))
        if self.stage in AGENT_STAGES and self.encoder != "scratch":
            needed.append(Run("spaces", self.encoder, protocol=self.protocol, **common))
        if self.stage == "rl" and starts_from_bc(self.config):
            needed.append(replace(self, stage="bc", folder="", extra=()))
        return needed

    @property
    def module(self) -> Run:
        """The RL run whose agent module a preparation job builds (its environment, spaces and evaluation)."""
        if self.stage not in ("calibrate", "spaces", "baselines"):
            raise ValueError(f"{self!r}: only the calibration, the spaces' vectors and the baselines build a module")
        return replace(self, stage="rl")

    # -- how it is run ---------------------------------------------------------------------------------------------

    @property
    def identity(self) -> list[str]:
        """The options of ``lq experiment`` that name this run (its module's extra arguments as ``--args``)."""
        flags = ["--profile", self.profile, "--protocol", self.protocol, "--objective", self.objective]
        flags += ["--data", self.data] + (["--outputs", self.root] if self.root != outputs_for(self.data) else [])
        flags += ["--encoders", self.encoder, "--ability", self.ability, "--switch", self.switch]
        flags += ["--seeds", str(self.seed)]
        return flags + ([f"--args={shlex.join(self.extra)}"] if self.extra else [])  # one token: it may start with --

    @property
    def args(self) -> list[str]:
        """Its command line, ``STAGE fit ...`` (what ``lq`` takes after its name); a preparation job's, ``data
        generate DATA`` or ``experiment calibrate|spaces|baselines`` and its :attr:`identity`."""
        if self.stage == "data":
            return ["data", "generate", self.data]
        if self.stage in PREPARATION:
            return ["experiment", self.stage, *self.identity]
        args = [self.stage, "fit", *(a for f in self.configs for a in ("--config", str(f)))]
        out_dir = self.stage_dir()
        args += ["--seed_everything", str(self.seed), "--out_dir", out_dir]
        if self.stage == "pretrain" and self.encoder == "adaptive":  # from the general encoder of the same folder
            args += ["--model.encoder.init_from", f"{model_dir(out_dir, 'general')}/best.ckpt"]
        if self.stage not in AGENT_STAGES:  # the poly-encoder stages read a DataModule
            return [*args, "--data.data_dir", self.data, *self.extra]
        if self.stage == "rl":  # the BC agents an RL run starts from (init_from: bc, the lq objective's)
            args += ["--bc_dir", self.stage_dir("bc")]
        env = [run.checkpoint for run in (self.env_run("partner"), self.env_run("dm"))]
        return [
            *args,
            *("--model.env.data_dir", self.data, "--model.ability", self.ability, "--model.switch", self.switch),
            *("--model.seed", str(self.seed), "--pretrain_dir", self.stage_dir("pretrain")),
            *("--model.env.partner_checkpoint", env[0], "--model.env.dm_checkpoint", env[1]),
            *self.extra,
        ]

    def env_run(self, stage: str) -> Run:
        """The environment's partner or DM that this run's profile and data train."""
        return Run(stage, Profile(self.profile).env_encoder, profile=self.profile, data=self.data, root=self.root)


@dataclass
class Resolver:
    """How stages run for one profile, protocol and dataset: their config files and every checkpoint path."""

    profile: str = "tiny"
    protocol: str = "paper"  # conf/protocol/PROTOCOL.yaml: how the agents are trained and evaluated
    objective: str = "lq"  # conf/objective/OBJECTIVE.yaml: what RL optimises (and where it starts from)
    data_dir: str = "data/default"
    outputs: str = ""  # default: outputs_for(data_dir)

    def __post_init__(self) -> None:
        self.outputs = self.outputs or outputs_for(self.data_dir)
        Profile(self.profile)  # a clear error now, not at the first stage
        if self.protocol not in protocols():
            raise FileNotFoundError(
                f"{ROOT / 'protocol' / self.protocol}.yaml: no such protocol (PROTOCOL={self.protocol}); choose from "
                f"{', '.join(protocols())}"
            )
        if self.objective not in objectives():
            raise FileNotFoundError(
                f"{ROOT / 'objective' / self.objective}.yaml: no such objective (OBJECTIVE={self.objective}); choose "
                f"from {', '.join(objectives())}"
            )

    @property
    def env_encoder(self) -> str:
        """The environment's partner and DM: small poly-encoders on the CPU profile, MiniLM-sized otherwise."""
        return Profile(self.profile).env_encoder

    def run(self, stage: str, encoder: str = "", ability: str = "act_speech", switch: str = "hardcoded",
            seed: int = 0, folder: str | None = None) -> Run:  # fmt: skip
        """The :class:`Run` of ``stage`` under this profile, protocol, objective and dataset (``folder``: its stage's
        folder in place of the profile's)."""
        return Run(stage, encoder, ability, switch, seed, self.profile, self.protocol, self.objective, self.data_dir,
                   self.outputs, folder or "")  # fmt: skip

    def stage_dir(self, stage: str) -> str:
        """Where a stage's runs go (:meth:`Run.stage_dir`)."""
        return self.run(stage).stage_dir()

    def configs(self, stage: str, encoder: str) -> list[Path]:
        """The config files of a stage run, in the order they are read (:attr:`Run.configs`)."""
        return self.run(stage, encoder).configs

    def checkpoint(self, stage: str, encoder: str | None = None) -> str:
        """A poly-encoder stage's checkpoint: a pretrained encoder, or the partner's or DM's (of ``env_encoder``
        unless ``encoder`` says otherwise)."""
        if stage not in ("pretrain", *ENV_STAGES):
            raise ValueError(f"{stage}: checkpoint() is for pretrain, partner and dm; agents: agent_checkpoint()")
        encoder = encoder or (self.env_encoder if stage in ENV_STAGES else None)
        if encoder is None:
            raise ValueError("name the pretrained encoder")
        return self.run(stage, encoder).checkpoint

    def agent_checkpoint(self, stage: str, encoder: str, ability: str, switch: str, seed: int) -> str:
        return self.run(stage, encoder, ability, switch, seed).checkpoint

    def stage_args(self, stage: str, encoder: str, seed: int = 0, ability: str = "act_speech",
                   switch: str = "hardcoded", out_dir: str | None = None) -> list[str]:  # fmt: skip
        """The command line of one stage run, ``STAGE fit ...`` (:attr:`Run.args`)."""
        return self.run(stage, encoder, ability, switch, seed, out_dir).args
