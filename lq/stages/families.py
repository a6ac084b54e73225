"""What the stage kinds of one family share: the poly-encoders (pretraining, the partner, the DM), the agents
(behaviour cloning, RL) and the preparation jobs computed from an RL run's configuration (the calibration, the spaces'
vectors, the baselines). Where things go::

    OUTPUTS/pretrain/ENCODER/best.ckpt              pretrained encoders (and their vectors of the agents' spaces)
    OUTPUTS/{partner,dm}/ENV_ENCODER/best.ckpt      the environment's partner and Dungeon Master
    OUTPUTS/{rl,bc}/ENCODER/ABILITY-SWITCH/seed-N/{agent,best}.ckpt   the agents (rl-paper/: the paper objective's)
    OUTPUTS/OVERLAY/STAGE/...                       an overlay's runs of the stages it has a file of its own for
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from lq.conf import path
from lq.conf.resolver import Profile, config_names, flag_values, merged, merged_config
from lq.data.outputs import DONE, LAST, RETRAIN, finished, outputs_for, unfinished
from lq.stages.configs import read_config
from lq.stages.run import Run, Stage


def model_dir(stage_dir: str, encoder: str) -> str:
    """A poly-encoder stage's folder (pretraining, partner, DM): ``STAGE_DIR/ENCODER``."""
    return f"{stage_dir.rstrip('/')}/{encoder}"


def agent_dir(stage_dir: str, encoder: str, ability: str, switch: str, seed: int) -> str:
    """``STAGE_DIR/ENCODER/ABILITY-SWITCH/seed-N``: one folder per configuration and seed of an agent stage."""
    return f"{stage_dir.rstrip('/')}/{encoder}/{ability}-{switch}/seed-{seed}"


def pretrained_checkpoint(pretrain_dir: str, encoder: str) -> str | None:
    """An agent's frozen encoder: the pretraining run's best checkpoint (none for scratch)."""
    return None if encoder == "scratch" else f"{model_dir(pretrain_dir, encoder)}/best.ckpt"


def flag_value(args: Sequence[str], flag: str) -> str | None:
    """The value of the last ``flag`` in ``args`` (``FLAG VALUE`` or ``FLAG=VALUE``: the one a parser keeps), or
    None."""
    return next(reversed(flag_values(args, flag)), None)


def without_flag(args: Sequence[str], flag: str) -> list[str]:
    """``args`` less every ``flag`` and its value (``FLAG VALUE`` or ``FLAG=VALUE``)."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg == flag:
            skip = True
        elif not arg.startswith(f"{flag}="):
            out.append(arg)
    return out


def environment_of(config: dict[str, Any]) -> tuple[str | None, dict[str, str] | None]:
    """The training pool (``model.env.pool``) and the worlds to play (``model.worlds``:
    :meth:`lq.lit.agent.AgentModule.on_worlds`) an agent's merged configuration names, each None where it names none."""
    model = config.get("model") or {}
    pool = (model.get("env") or {}).get("pool")
    return (str(pool) if pool else None), (model.get("worlds") or None)


def environment_needs(run: Run) -> list[Run]:
    """What a run whose configuration names a training pool or worlds to play (:func:`environment_of`) needs first: the
    pool drawn; the worlds' dataset and their partner and DM, trained on it as every dataset's are."""
    pool, worlds = environment_of(run.config)
    needed = [run.another("pool", folder=pool)] if pool else []
    if worlds:
        data = worlds["data_dir"]
        there = run.another("data", data=data, root=outputs_for(data))
        needed += [there, there.env_run("partner"), there.env_run("dm")]
    return needed


CONFIG = "config.yaml"  # its configuration resolved once, beside its checkpoints (lq.lit.cli.LogConfigToMLflow)
NO_CHOICES = {"ability": "act_speech", "switch": "hardcoded", "seed": 0}  # a run that is no agent's


class Trained(Stage):
    """A stage CLI's training run (``lq NAME fit``): a checkpoint, resumable from ``last.ckpt``, done once its run
    wrote the :data:`lq.data.outputs.DONE` marker beside it."""

    trains = True
    checkpoint_name = "best.ckpt"  # the checkpoint the run keeps

    @property
    def checkpoint_filename(self) -> str:
        """The kept checkpoint's name as Lightning's ``ModelCheckpoint.filename`` takes it (no suffix)."""
        return Path(self.checkpoint_name).stem

    def checkpoint(self, run: Run) -> str:
        return f"{run.dir}/{self.checkpoint_name}"

    def outputs(self, run: Run) -> dict[str, str]:
        return {"checkpoint": run.checkpoint, "last": f"{run.dir}/{LAST}", "done": f"{run.dir}/{DONE}",
                "config": f"{run.dir}/{CONFIG}"}  # fmt: skip

    def retrain_config(self, run: Run) -> str:
        """Where a run trained again beside the finished one in its folder reads its config (:meth:`retrain_args`)."""
        return f"{run.dir}/{RETRAIN}/{CONFIG}"

    def done_as(self, run: Run) -> str | None:
        return run.checkpoint if finished(run.checkpoint) else None

    def base_configs(self, run: Run) -> list[Path]:
        """The family's base file, the stage's, the encoder's and the profile's (base, then overlay)."""
        files = [path(self.base_file), path(f"{self.name}.yaml"), path("encoder", f"{run.encoder}.yaml")]
        return files + Profile(run.profile).files(self.profile_file)

    def child(self, run: Run, experiment: str, parent: str, tags: dict[str, str], tracking_uri: str) -> Run:
        """``run`` as a child of ``experiment``: logging to ``lq-EXPERIMENT`` with ``tags`` (the parent's among them)
        as a run named short and distinct among the parent's children, so that the UI's runs table shows the name
        whole: its stage, its encoder, of its ability, switch and variant those that are not the default, and its seed
        ("RL General+Light s0", "RL Scratch act only s1", "RL Scratch bc_start s0", "Pretrain Adaptive quests8 s2");
        the store is its extra arguments' (:func:`lq.experiments.running.with_extras`)."""
        abilities = {"act": "act only", "speech": "speech only", "speech_no_speech_goals": "speech, no speech goals"}
        words = [{"rl": "RL", "bc": "BC", "dm": "DM", "llm_bc": "LoRA-BC"}.get(self.name, self.name.title())]
        words += [run.encoder.replace("_", "+").title()] if run.encoder else []
        words += [abilities.get(run.ability, run.ability)] if run.ability != "act_speech" else []
        words += [{"ratio": "learned switch"}.get(run.switch, run.switch)] if run.switch != "hardcoded" else []
        words += [tags["lq.variant"]] if tags.get("lq.variant") else []
        name = " ".join([*words, f"s{tags.get('lq.seed', run.seed)}"])
        logged = ["--trainer.logger.init_args.experiment_name", f"lq-{experiment}"]
        logged += ["--trainer.logger.init_args.run_name", name]  # in place of lq.lit.cli.StageCLI.run_name's
        logged += ["--trainer.logger.init_args.tags", json.dumps(tags)]
        return dataclasses.replace(run, extra=(*run.extra, *logged))

    def args(self, run: Run) -> list[str]:
        """``NAME fit --config RUN_DIR/config.yaml``: the run's resolved configuration (:meth:`resolve`), written
        before it starts (:meth:`write`), is all it reads."""
        return [self.name, "fit", "--config", run.outputs["config"]]

    def retrain_args(self, run: Run) -> list[str]:
        """``NAME fit --config RUN_DIR/.retrain/config.yaml``: the run trained again from its start beside the finished
        one in its folder (``retrain: true`` in that file: ``lq.lit.cli.StageCLI``), which it replaces only once it
        finishes (FORCE=1, ``--force``)."""
        return [self.name, "fit", "--config", self.retrain_config(run)]

    def config(self, run: Run) -> dict[str, Any]:
        """Its configuration (:meth:`resolve`); a preparation job's module given the file its scheduler wrote
        (:attr:`Run.written`: :meth:`Prepared.write`), that file's."""
        return read_written(run.written) if run.written else self.resolve(run)

    def resolve(self, run: Run) -> dict[str, Any]:
        """Its whole configuration: its config files merged in order (:attr:`Run.configs`), then where it goes and what
        it reads (:meth:`settings`: its seed, folder, checkpoint name, data, the models it starts from or plays with),
        then its extra arguments (``--KEY VALUE``, ``--config FILE``); ``sources``: the config files, as conf/ names
        them (its tags and params name its profile, objective and files from them)."""
        files = [str(f) for f in run.configs]
        config = merged_config([a for f in files for a in ("--config", f)])
        config = merged_config(list(run.extra), base=merged(config, self.settings(run)))
        return {**config, "sources": config_names([*files, *flag_values(run.extra, "--config")])}

    def settings(self, run: Run) -> dict[str, Any]:
        """Its seed, its checkpoints' folder and name (every path of a run has its home here and in its kind)."""
        return {"seed_everything": run.seed, "checkpoint": {"dirpath": run.dir, "filename": self.checkpoint_filename}}

    def write(self, run: Run, fresh: bool = False, retrain: bool = False) -> None:
        """Its resolved configuration (:meth:`resolve`) as ``RUN_DIR/config.yaml``, written whole then renamed into
        place, before it starts: the child reads it alone, and logs its bytes as its MLflow artifact. The folder's
        done marker goes first, and for a ``fresh`` run (not resumed) its last checkpoint: its checkpoints are this
        configuration's run's from now on, done once it finishes (a launch that fails or is killed before the run
        saves leaves no old checkpoint passing for this run's, to be resumed from or read as done). ``retrain``: a
        run trained again beside the finished one (:meth:`retrain_args`): its file goes to ``RUN_DIR/.retrain/``,
        with ``retrain: true``, and the finished run's files are left as they are."""
        from lq.data.io import atomic_open

        config = self.retrain_config(run) if retrain else run.outputs["config"]
        folder = Path(config).parent
        folder.mkdir(parents=True, exist_ok=True)
        unfinished(folder, fresh or retrain)
        with atomic_open(config) as f:
            f.write(yaml.safe_dump({**run.config, **({"retrain": True} if retrain else {})}, sort_keys=False))


class PolyEncoder(Trained):
    """Pretraining, the partner and the Dungeon Master: a poly-encoder on a DataModule, in ``STAGE_DIR/ENCODER``, its
    encoded candidates in ``candidates/`` beside its checkpoint."""

    base_file = "poly_encoder.yaml"
    wave, at_once = 2, 2  # a core each, two at once

    def fixed(self, run: Run) -> dict[str, Any]:
        return {"objective": "lq", **NO_CHOICES, "protocol": "paper"}

    def dir(self, run: Run) -> str:
        return model_dir(run.stage_dir(), run.encoder)

    def outputs(self, run: Run) -> dict[str, str]:
        return {**super().outputs(run), "candidates": f"{run.dir}/candidates"}

    def configs(self, run: Run) -> list[Path]:
        return self.base_configs(run)

    def settings(self, run: Run) -> dict[str, Any]:
        """A run's, and its data."""
        return merged(super().settings(run), {"data": {"data_dir": run.data}})


class EnvModel(PolyEncoder):
    """The environment's partner and Dungeon Master: one per profile and data (the profile's ``env_encoder``)."""

    profile_file = "env"

    def label(self, run: Run) -> str:
        return f"{self.name} {run.encoder}"


class Agent(Trained):
    """Behaviour cloning and RL: an agent of an encoder, ability, switch and seed, in
    ``STAGE_DIR/ENCODER/ABILITY-SWITCH/seed-N``, trained and evaluated in the agents' environment (the profile's
    partner and DM, the partner's calibration), on its encoder's vectors of the agents' spaces."""

    base_file = "agent.yaml"
    agent = True
    profile_file = ""  # the stage's own name (set by each kind)

    def dir(self, run: Run) -> str:
        return agent_dir(run.stage_dir(), run.encoder, run.ability, run.switch, run.seed)

    def configs(self, run: Run) -> list[Path]:
        """The base (agent.yaml: what BC and RL share), the stage's, the encoder's, the profile's, the protocol's."""
        return [*self.base_configs(run), path("protocol", f"{run.protocol}.yaml")]

    def needs(self, run: Run) -> list[Run]:
        """The dataset; for ``adaptive`` the general encoder; the partner and the DM, and the partner's calibration;
        its pretrained encoder and that encoder's vectors of the agents' spaces."""
        needed = [run.another("data")]
        if run.encoder == "adaptive":
            needed.append(run.another("pretrain", "general"))
        needed += [run.env_run("partner"), run.env_run("dm"), run.another("calibrate", protocol=run.protocol)]
        if run.encoder != "scratch":
            needed.append(run.another("pretrain", run.encoder))
            needed.append(run.another("spaces", run.encoder, protocol=run.protocol))
        return needed + environment_needs(run)

    def settings(self, run: Run) -> dict[str, Any]:
        """A run's, and its data, ability, switch and seed, its pretrained encoder (none for scratch) and the
        environment's partner and DM."""
        env = {"data_dir": run.data, "partner_checkpoint": run.env_run("partner").checkpoint,
               "dm_checkpoint": run.env_run("dm").checkpoint}  # fmt: skip
        model = {"env": env, "ability": run.ability, "switch": run.switch, "seed": run.seed}
        model["pretrained_checkpoint"] = pretrained_checkpoint(run.stage_dir("pretrain"), run.encoder)
        return merged(super().settings(run), {"model": model})

    def label(self, run: Run) -> str:
        """``STAGE ENCODER-ABILITY-SWITCH sN``, and ``in FOLDER`` where its stage's folder is its own (an experiment's
        variant: the agents of two training pools are two jobs, each waited for alone)."""
        where = f" in {os.path.relpath(run.folder, run.root)}" if run.folder else ""
        return f"{self.folder_name(run)} {run.encoder}-{run.ability}-{run.switch} s{run.seed}{where}"

    def graph_label(self, run: Run) -> str:
        return f"{self.name} {run.encoder} {run.ability}-{run.switch} s{run.seed}"


def read_written(file: str) -> dict[str, Any]:
    """The resolved configuration a scheduler wrote for a job (:meth:`Prepared.write`); a missing or unreadable file
    is a FileNotFoundError naming it and the fix."""
    config = read_config(file)
    if config is None:
        raise FileNotFoundError(
            f"{file}: no resolved configuration there (a job's --config is the file its scheduler wrote: run the "
            "experiment again, or `lq experiment plan`, to write it)"
        )
    return config


class Prepared(Stage):
    """A preparation job computed from the RL run of its identity (:meth:`module`), from its own inputs in that run's
    configuration (no agent's networks built): ``lq experiment NAME``, its identity and ``--config FILE``, the RL
    run's configuration resolved once by its scheduler and written there (:meth:`write`), which the job reads
    alone."""

    wave, at_once = 2, 2
    job = True

    def module(self, run: Run) -> Run:
        return dataclasses.replace(run, stage="rl")

    def config(self, run: Run) -> dict[str, Any]:
        return run.module.config

    def config_file(self, run: Run) -> str:
        """Where its scheduler writes its module's resolved config: ``OUTPUTS/jobs/NAME-DIGEST.yaml``, the digest
        that of its identity (its module's extra arguments among it), so that jobs side by side never share one."""
        digest = hashlib.sha256(json.dumps(run.identity).encode()).hexdigest()[:12]
        return f"{run.root}/jobs/{self.name}-{digest}.yaml"

    def args(self, run: Run) -> list[str]:
        """``experiment NAME``, its identity and ``--config FILE`` (:meth:`config_file`)."""
        return [*super().args(run), "--config", self.config_file(run)]

    def write(self, run: Run, fresh: bool = False) -> None:
        """Its module's resolved configuration (:meth:`Trained.resolve`) as :meth:`config_file`, written whole then
        renamed into place, before the job starts."""
        from lq.data.io import atomic_open

        file = Path(self.config_file(run))
        file.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(file) as f:
            f.write(yaml.safe_dump(run.config, sort_keys=False))


class Keyed(Prepared):
    """A preparation job whose file is named by a key of the models it is computed with (their weights, read and
    hashed), beside one model's checkpoint: known, without building the module, once those models are trained."""

    def candidates(self, run: Run) -> str:
        """The ``candidates`` folder its file goes to."""
        raise NotImplementedError

    def file(self, run: Run) -> Path:
        """Its file, from its module's configuration (the models it needs are trained)."""
        raise NotImplementedError

    def outputs(self, run: Run) -> dict[str, str]:
        """The ``candidates`` folder its file goes to and, once the models it needs are trained, that ``file``."""
        out = {"candidates": self.candidates(run)}
        return {**out, "file": str(self.file(run))} if all(n.done for n in run.needs()) else out

    def done_as(self, run: Run) -> str | None:
        file = run.outputs.get("file")
        return file if file is not None and Path(file).is_file() else None

    def compute(self, run: Run) -> None:
        """Compute its file where :meth:`file` says, from its own inputs (its module's resolved configuration: no agent
        module is built)."""
        raise NotImplementedError
