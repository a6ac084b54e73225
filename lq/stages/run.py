"""A stage run as a value, :class:`Run`, and what every stage kind answers about its runs, :class:`Stage`.

A :class:`Run` is identified by what tells it from every other (the stage, the encoder, the agents' ability, switch and
seed, the profile, protocol, objective and data); everything else it asks of its stage kind (:attr:`Run.kind`, one
:class:`Stage` per kind in :data:`KINDS`, the registry :mod:`lq.stages` fills): its config files, where it goes, every
file it writes, whether it is done, what it needs first, its command line. :class:`Resolver` makes the runs of one
profile, protocol, objective and dataset.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from lq.conf.resolver import ROOT, Profile, config_threads, merged_config, objectives, protocols
from lq.data.outputs import outputs_for

# every stage kind by its name, in the order lq lists them: filled by the registry, lq/stages/__init__.py
KINDS: dict[str, Stage] = {}


def kind_of(stage: str) -> Stage:
    """The stage kind named ``stage``, or an error with the choices."""
    if stage not in KINDS:
        raise ValueError(f"unknown stage {stage}: choose from {', '.join(KINDS)}")
    return KINDS[stage]


class Stage:
    """What a stage kind answers about one of its runs; each method takes the run. The defaults are a preparation
    job's that writes nothing of its own; :mod:`lq.stages.families` holds what the poly-encoders, the agents and the
    preparation jobs share, and one file per kind the rest."""

    name: str = ""
    summary: str = ""  # what a training stage's run does, in a few words (``lq --help``)
    profile_file: str | None = None  # the file of a profile it reads (conf/profile/PROFILE/FILE.yaml), if any
    wave: int = 3  # where its runs go among one layer's waves (0 first: lq.experiments.running.waves_of)
    at_once: int | None = None  # how many of its runs train side by side in a wave (None: the setup's jobs)
    trains: bool = False  # a stage CLI's training run (``lq NAME fit``); else a job of ``lq data`` or ``lq experiment``
    agent: bool = False  # an agent (its own ability, switch and seed, evaluated in the agents' environment)
    job: bool = False  # a job of its own, ``lq experiment NAME`` (the preparation computed from an RL run's config)
    # an experiment's child that reads what the child of its configuration's first seed keeps (a language model's
    # greedy plays): it starts after that one (lq.experiments.running.child_waves)
    after_first_seed: bool = False
    names_model: bool = False  # its encoder names a language model (smollm2, a model folder, a GGUF file), not a file
    # of conf/encoder/

    def fixed(self, run: Run) -> dict[str, Any]:
        """What its runs do not depend on, set to one value so that two runs that write the same files are equal."""
        return {"objective": "lq"}

    def folder_name(self, run: Run) -> str:
        """Its folder under the outputs (``rl-paper``: RL under another objective than lq's)."""
        return self.name

    def dir(self, run: Run) -> str:
        raise ValueError(f"{run!r}: a {self.name} run has no folder of its own")

    def checkpoint(self, run: Run) -> str:
        raise ValueError(f"{run!r}: a {self.name} run keeps no checkpoint")

    def outputs(self, run: Run) -> dict[str, str]:
        """Every path the run writes (none: MLflow holds what it makes)."""
        return {}

    def done_as(self, run: Run) -> str | None:
        """The file that shows the run done, or None while it is not (never: a run without files always runs)."""
        return None

    def configs(self, run: Run) -> list[Path]:
        raise ValueError(f"{run!r}: a {self.name} run reads no config files of its own (its module's: Run.module)")

    def config(self, run: Run) -> dict[str, Any]:
        """Its merged config (:func:`lq.conf.resolver.merged_config` of its command line)."""
        return merged_config(run.args)

    def needs(self, run: Run) -> list[Run]:
        return [run.another("data")]

    def args(self, run: Run) -> list[str]:
        """Its command line, what ``lq`` takes after its name."""
        return ["experiment", self.name, *run.identity]

    def prepared(self, run: Run) -> Run:
        """The run as other runs need it (:func:`lq.experiments.running.preparation`)."""
        return run

    def module(self, run: Run) -> Run:
        raise ValueError(f"{run!r}: only the calibration, the spaces' vectors and the baselines are computed from RL's")

    def threads(self, run: Run) -> int:
        """torch's CPU threads of the run."""
        return config_threads(run.config)

    def label(self, run: Run) -> str:
        """Its name in a plan where others need it."""
        return self.name

    def graph_label(self, run: Run) -> str:
        """Its node in a stage graph (``lq experiment graph``): its kind and what tells it from the others of its
        kind."""
        return f"{self.name} {run.encoder}" if run.encoder else self.name

    def child(self, run: Run, experiment: str, parent: str, tags: dict[str, str], tracking_uri: str) -> Run:
        """The run as a child of the parent run ``parent`` of ``experiment`` (MLflow experiment ``lq-EXPERIMENT``),
        tagged ``tags`` (its configuration and seed), in the store ``tracking_uri``."""
        raise ValueError(f"{run!r}: a {self.name} run is no experiment's child")

    def child_args(self, run: Run, experiment: str, parent: str, tags: dict[str, str], tracking_uri: str) -> list[str]:
        """Its command line as that child (:meth:`child`)."""
        return self.child(run, experiment, parent, tags, tracking_uri).args

    def write(self, run: Run, fresh: bool = False) -> None:
        """Write what the run reads before it starts (nothing: a job of ``lq data`` or ``lq experiment`` reads its
        command line); ``fresh``: the run starts over rather than resuming from its last checkpoint."""

    def check(self, run: Run) -> None:
        """Refuse now, with the fix, a run that could not start (before a plan is made of it)."""


@dataclass(frozen=True)
class Run:
    """One run of a stage, identified by what tells it from every other: ``stage``, ``encoder`` (the environment
    models' for the partner and the DM), the agents' ``ability``, ``switch`` and ``seed``, the ``profile`` (a folder of
    ``conf/profile/``), the agents' ``protocol``, RL's ``objective`` and the ``data``. ``root``: where the dataset's
    outputs go (default :func:`lq.data.outputs.outputs_for`); ``folder``: the stage's folder where not the profile's
    (an experiment's pretraining children, a deviation-table row); ``extra``: arguments after the configs'.

    A preparation job is a run too: ``data`` (its dataset generated), ``calibrate`` (the partner's calibration in the
    agents' environment), ``spaces`` (``encoder``'s vectors of the agents' spaces) and ``baselines`` (the rules played
    in the environment of an agent of ``ability`` and ``switch``); the last three are computed from the RL run of
    their identity (:attr:`module`: its resolved config) and ``extra`` is that run's arguments; ``written``: the file
    its scheduler wrote that config to, which the job reads alone (``lq experiment NAME ... --config FILE``). What a
    run does not depend on is set to one value (:meth:`Stage.fixed`), so that two runs that write the same files are
    equal."""

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
    # a preparation job's: the file its scheduler wrote its module's resolved config to (Prepared.write), read in place
    # of resolving it again from the identity above
    written: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        kind = kind_of(self.stage)
        object.__setattr__(self, "root", self.root or outputs_for(self.data))
        object.__setattr__(self, "extra", tuple(self.extra))
        for name, value in kind.fixed(self).items():
            object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return f"Run({self.stage} {self.encoder} {self.ability}-{self.switch} seed {self.seed}, {self.profile})"

    @property
    def kind(self) -> Stage:
        """Its stage kind, which answers everything below."""
        return KINDS[self.stage]

    def another(self, stage: str, encoder: str = "", **identity: Any) -> Run:
        """A run of ``stage`` of this one's profile, data and outputs (``identity``: the rest, as :class:`Run` takes
        it)."""
        return Run(stage, encoder, **{"profile": self.profile, "data": self.data, "root": self.root, **identity})

    def env_run(self, stage: str) -> Run:
        """The environment's partner or DM that this run's profile and data train."""
        return self.another(stage, Profile(self.profile).env_encoder)

    # -- where it goes ----------------------------------------------------------------------------------------

    def stage_dir(self, stage: str | None = None) -> str:
        """Where ``stage``'s runs (this one's by default) go: ``ROOT/STAGE``, or ``ROOT/OVERLAY/STAGE`` for the stages
        an overlay profile has a file of its own for (its runs differ from the base's); RL under an objective other
        than lq's goes to ``.../rl-OBJECTIVE``, beside lq's agents, not over them."""
        stage = stage or self.stage
        if stage == self.stage and self.folder:
            return self.folder
        kind = kind_of(stage)
        name = kind.folder_name(self)
        owned = Profile(self.profile).owns(kind.profile_file)
        return f"{self.root}/{self.profile}/{name}" if owned else f"{self.root}/{name}"

    @property
    def dir(self) -> str:
        """The run's folder: ``STAGE_DIR/ENCODER`` (poly-encoders), ``STAGE_DIR/ENCODER/ABILITY-SWITCH/seed-N``."""
        return self.kind.dir(self)

    @property
    def checkpoint(self) -> str:
        return self.kind.checkpoint(self)

    @property
    def outputs(self) -> dict[str, str]:
        """Every path the run writes: a stage's ``checkpoint``, ``last`` (the resumable one), the ``done`` marker, and
        for a poly-encoder its ``candidates`` folder (its encoded candidates; the partner's calibration beside them, a
        pretrained encoder's vectors of the agents' spaces); the dataset's ``manifest``; the calibration's and the
        spaces' ``candidates`` folder and, once the models they are keyed by are trained, their ``file``; the
        baselines', none (MLflow's)."""
        return self.kind.outputs(self)

    @property
    def done_as(self) -> str | None:
        """The file that shows the run done (its checkpoint once its run finished, the dataset's manifest, the
        calibration's or the spaces' keyed file), or None while it is not; found without building a model."""
        return self.kind.done_as(self)

    @property
    def done(self) -> bool:
        return self.done_as is not None

    # -- what it reads -------------------------------------------------------------------------------------------

    @property
    def configs(self) -> list[Path]:
        """The config files, in the order they are read (:meth:`Stage.configs`)."""
        return self.kind.configs(self)

    @cached_property
    def config(self) -> dict[str, Any]:
        """Its configuration, read once: its config files merged, then its arguments over them
        (:func:`lq.conf.resolver.merged_config`); a preparation job's is its module's."""
        return self.kind.config(self)

    @property
    def threads(self) -> int:
        """torch's CPU threads of the run (a preparation job's: its module's run's)."""
        return self.kind.threads(self)

    def needs(self) -> list[Run]:
        """The runs this one needs before it, in order (:meth:`Stage.needs`)."""
        return self.kind.needs(self)

    @property
    def module(self) -> Run:
        """The RL run whose configuration a preparation job is computed from (its environment, spaces, evaluation)."""
        return self.kind.module(self)

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
        return self.kind.args(self)

    @property
    def label(self) -> str:
        return self.kind.label(self)

    @property
    def graph_label(self) -> str:
        return self.kind.graph_label(self)


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
        if not kind_of(stage).trains or kind_of(stage).agent:
            raise ValueError(f"{stage}: checkpoint() is for pretrain, partner and dm; agents: agent_checkpoint()")
        encoder = encoder or (self.env_encoder if stage != "pretrain" else None)
        if encoder is None:
            raise ValueError("name the pretrained encoder")
        return self.run(stage, encoder).checkpoint

    def agent_checkpoint(self, stage: str, encoder: str, ability: str, switch: str, seed: int) -> str:
        return self.run(stage, encoder, ability, switch, seed).checkpoint

    def stage_config(self, stage: str, encoder: str, seed: int = 0, ability: str = "act_speech",
                     switch: str = "hardcoded", out_dir: str | None = None) -> dict[str, Any]:  # fmt: skip
        """The resolved configuration of one stage run (:attr:`Run.config`)."""
        return self.run(stage, encoder, ability, switch, seed, out_dir).config
