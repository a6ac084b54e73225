"""The one place that knows how a stage runs: (stage, encoder, profile, data, protocol, RL's objective) to the config
files, in the order they are read, and every checkpoint path. ``lq stage`` (the Makefile's stage targets),
``lq experiment`` and the stage CLIs' defaults all read it.

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
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import yaml

from lq.conf import ROOT, path

AGENT_STAGES = ("rl", "bc")
ENV_STAGES = ("partner", "dm")
STAGES = ("pretrain", *ENV_STAGES, *AGENT_STAGES)
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

    def stage_dir(self, stage: str) -> str:
        """Where a stage's runs go: ``OUTPUTS/STAGE``, or ``OUTPUTS/OVERLAY/STAGE`` for the stages an overlay profile
        has a file of its own for (its runs differ from the base's); its other stages are the base's runs. RL under an
        objective other than lq's goes to ``.../rl-OBJECTIVE``, beside lq's agents, not over them."""
        folder = f"{stage}-{self.objective}" if stage == "rl" and self.objective != "lq" else stage
        return (
            f"{self.outputs}/{self.profile}/{folder}"
            if Profile(self.profile).owns(stage)
            else f"{self.outputs}/{folder}"
        )

    def configs(self, stage: str, encoder: str) -> list[Path]:
        """The config files of a stage run, in the order they are read: the base (agent.yaml for the agents,
        poly_encoder.yaml for pretraining, the partner and the DM), the stage's, the encoder's, the profile's (base,
        then overlay), for the agents the protocol's, and for RL its objective's (last: it sets sizes of its own, such
        as the paper's 32 environments)."""
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage}: choose from {', '.join(STAGES)}")
        base = [path("agent.yaml" if stage in AGENT_STAGES else "poly_encoder.yaml")]  # what the stages share
        files = [*base, path(f"{stage}.yaml"), path("encoder", f"{encoder}.yaml"), *Profile(self.profile).files(stage)]
        if stage in AGENT_STAGES:
            files.append(path("protocol", f"{self.protocol}.yaml"))
        if stage == "rl":
            files.append(path("objective", f"{self.objective}.yaml"))
        return files

    def checkpoint(self, stage: str, encoder: str | None = None) -> str:
        """A poly-encoder stage's checkpoint: a pretrained encoder, or the partner's or DM's (of ``env_encoder``
        unless ``encoder`` says otherwise)."""
        if stage not in ("pretrain", *ENV_STAGES):
            raise ValueError(f"{stage}: checkpoint() is for pretrain, partner and dm; agents: agent_checkpoint()")
        encoder = encoder or (self.env_encoder if stage in ENV_STAGES else None)
        if encoder is None:
            raise ValueError("name the pretrained encoder")
        return f"{model_dir(self.stage_dir(stage), encoder)}/best.ckpt"

    def agent_checkpoint(self, stage: str, encoder: str, ability: str, switch: str, seed: int) -> str:
        return f"{agent_dir(self.stage_dir(stage), encoder, ability, switch, seed)}/{AGENT_CHECKPOINT[stage]}"

    def needs(self, stage: str, encoder: str) -> list[tuple[str, str]]:
        """The (stage, encoder) runs a run of ``stage`` with ``encoder`` needs before it, in order: ``general`` before
        ``adaptive`` (initialised from it), the partner and the DM before the agents, and an agent's pretrained
        encoder."""
        needed: list[tuple[str, str]] = []
        if encoder == "adaptive" and stage in ("pretrain", *AGENT_STAGES):
            needed.append(("pretrain", "general"))
        if stage in AGENT_STAGES:
            needed += [(s, self.env_encoder) for s in ENV_STAGES]
            if encoder != "scratch":
                needed.append(("pretrain", encoder))
        return needed

    def stage_args(self, stage: str, encoder: str, seed: int = 0, ability: str = "act_speech",
                   switch: str = "hardcoded", out_dir: str | None = None) -> list[str]:  # fmt: skip
        """The command line of one stage run, ``STAGE fit ...`` (what ``lq`` takes after its name)."""
        args = [stage, "fit", *(a for f in self.configs(stage, encoder) for a in ("--config", str(f)))]
        out_dir = out_dir or self.stage_dir(stage)
        args += ["--seed_everything", str(seed), "--out_dir", out_dir]
        if stage == "pretrain" and encoder == "adaptive":  # from the general encoder of the same folder
            args += ["--model.encoder.init_from", f"{model_dir(out_dir, 'general')}/best.ckpt"]
        if stage not in AGENT_STAGES:  # the poly-encoder stages read a DataModule
            return [*args, "--data.data_dir", self.data_dir]
        if stage == "rl":  # the BC agents an RL run starts from (init_from: bc, conf/rl.yaml's)
            args += ["--bc_dir", self.stage_dir("bc")]
        return [
            *args,
            "--model.env.data_dir",
            self.data_dir,
            "--model.ability",
            ability,
            "--model.switch",
            switch,
            "--model.seed",
            str(seed),
            "--pretrain_dir",
            self.stage_dir("pretrain"),
            "--model.env.partner_checkpoint",
            self.checkpoint("partner"),
            "--model.env.dm_checkpoint",
            self.checkpoint("dm"),
        ]
