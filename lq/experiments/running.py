"""Running an experiment: what its stages need first, one child run per configuration and seed under a parent
run (resumable), and the baselines' children."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from lq import conf
from lq.experiments.reporting import (
    _client,
    _print,
    best_agent,
    build_tables,
    children,
    experiment_id,
    parent_runs,
)
from lq.experiments.specs import ENCODERS, Config, Experiment
from lq.lit.cli import DEFAULT_TRACKING_URI


def outputs_for(data_dir: str | Path) -> str:
    """Where a dataset's checkpoints go: ``outputs/`` for the default data, ``outputs/<folder name>/`` for any other
    (the Makefile's OUT), so that a partner, DM or agent trained on one dataset is never picked up for another."""
    return "outputs" if Path(data_dir) == Path("data/default") else f"outputs/{Path(data_dir).resolve().name}"


# profiles that train only the agents differently: their base's partner, DM and pretrained encoders (the same
# checkpoints), then conf/profile/{rl,bc}-PROFILE.yaml read after the base's
OVERLAYS = {"quick": "tiny"}


@dataclass
class Setup:
    """Where things are and how big they are trained."""

    profile: str = "tiny"
    protocol: str = "paper"  # conf/protocol/PROTOCOL.yaml: how the agents are trained and evaluated
    seeds: Sequence[int] = (0, 1, 2)
    data_dir: str = "data/default"
    tracking_uri: str = DEFAULT_TRACKING_URI
    outputs: str = ""  # default: outputs_for(data_dir)
    eval_seeds: int = 1
    jobs: int = 1  # agent children trained side by side, the cores shared among them
    log_model: bool = False  # export the best agent as a bundle and log it on the parent as an MLflow logged model
    extra_args: dict[str, Sequence[str]] = field(default_factory=dict)  # per stage ("rl", ...; "*": every stage)

    def __post_init__(self) -> None:
        self.outputs = self.outputs or outputs_for(self.data_dir)

    @property
    def base(self) -> str:
        """The profile whose environment models, encoders and agent sizes this one uses (itself, or the one an
        overlay profile such as ``quick`` trains its agents less than)."""
        return OVERLAYS.get(self.profile, self.profile)

    @property
    def env_encoder(self) -> str:
        """The environment's partner and DM: small poly-encoders on the CPU profile, MiniLM-sized otherwise."""
        return "small" if self.base == "tiny" else "general"

    def agent_outputs(self, stage: str) -> str:
        """Where the agents' checkpoints go: an overlay profile's apart from its base's."""
        return f"{self.outputs}/{stage}" if self.base == self.profile else f"{self.outputs}/{self.profile}/{stage}"

    def profile_config(self, stage: str) -> list[str]:
        """The profile's config files of a stage, in order: the base's, then an overlay's own for the agents."""
        if stage in ("rl", "bc"):
            names = [f"{stage}-{p}" for p in dict.fromkeys((self.base, self.profile))]
        else:
            names = [f"env-{self.base}" if stage in ("partner", "dm") else self.base]
        paths = [conf.ROOT / "profile" / f"{name}.yaml" for name in names]
        for path in paths:
            if not path.exists():
                raise FileNotFoundError(f"{path}: no such profile for the {stage} stage (PROFILE={self.profile})")
        if stage in ("rl", "bc"):
            paths.append(self.protocol_config)
        return [str(path) for path in paths]

    @property
    def protocol_config(self) -> Path:
        path = conf.ROOT / "protocol" / f"{self.protocol}.yaml"
        if not path.exists():
            known = ", ".join(sorted(p.stem for p in path.parent.glob("*.yaml")))
            raise FileNotFoundError(f"{path}: no such protocol (PROTOCOL={self.protocol}); choose from {known}")
        return path


def _lq(*args: str) -> None:
    """Run ``python -m lq ARGS`` and fail loudly with the command if it fails."""
    cmd = [sys.executable, "-m", "lq", *args]
    _print("$ " + " ".join(cmd))
    done = subprocess.run(cmd, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"exit status {done.returncode}: {' '.join(cmd)}")


Job = Sequence[str] | Callable[[], object]  # the arguments of an ``lq`` command, or a function to run here


def _lq_pool(commands: Sequence[tuple[str, Job]], jobs: int) -> None:
    """Run independent jobs (``(label, job)``: ``lq`` arguments for a child process, each output line prefixed with
    its label; or a function, run in a thread of this process), up to ``jobs`` at once, the cores shared among them
    (``OMP_NUM_THREADS``; a function's torch threads); once one fails no other starts, and the failures are raised
    after the running ones have ended. Small models spend much of a step outside matrix products: two of them on a
    core each take about as long as one on both."""
    if jobs <= 1 or len(commands) < 2:
        for label, job in commands:
            if callable(job):
                _print(f"$ {label}: in this process")
                job()
            else:
                _lq(*job)
        return
    threads = max(1, (os.cpu_count() or 1) // min(jobs, len(commands)))
    queue, running, failed = list(commands), [], []
    while queue or running:
        while queue and len(running) < jobs:
            running.append(_start(*queue.pop(0), threads))
        for item in [r for r in running if r.poll() is not None]:
            item.join()
            running.remove(item)
            if item.poll() != 0:
                failed.append(item.failure())
                queue.clear()  # no other starts
        time.sleep(0.2)
    if failed:
        raise RuntimeError("; ".join(failed))


@dataclass
class _Started:
    """A job of :func:`_lq_pool` under way: ``poll`` is its exit status once it ended (None before)."""

    name: str
    poll: Callable[[], int | None]
    join: Callable[[], None]
    error: list[BaseException] = field(default_factory=list)

    def failure(self) -> str:
        return f"{self.name}: {self.error[0]!r}" if self.error else f"exit status {self.poll()}: {self.name}"


def _start(label: str, job: Job, threads: int) -> _Started:
    if callable(job):
        import torch

        torch.set_num_threads(threads)
        _print(f"$ {label}: in this process, {threads} thread(s)")

        def run() -> None:
            try:
                job()
            except BaseException as e:  # raised by the pool, after the others end
                started.error.append(e)

        thread = threading.Thread(target=run, daemon=True)
        started = _Started(label, lambda: None if thread.is_alive() else int(bool(started.error)), thread.join)
        thread.start()
        return started
    cmd = [sys.executable, "-m", "lq", *job]
    _print(f"$ OMP_NUM_THREADS={threads} " + " ".join(cmd))
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    process = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    relay = threading.Thread(target=_relay, args=(process, f"[{label}] "), daemon=True)
    relay.start()
    return _Started(" ".join(cmd), process.poll, relay.join)


def _relay(process: subprocess.Popen, prefix: str) -> None:
    for line in process.stdout:
        _print(prefix + line.rstrip("\n"))


def stage_args(config: Config, setup: Setup, seed: int, out_dir: str | None = None) -> list[str]:
    """The command line of one stage run (``lq STAGE fit ...``) of ``config`` with ``seed``."""
    stage = config.stage
    args = [
        stage,
        "fit",
        "--config",
        str(conf.path(f"{stage}.yaml")),
        "--config",
        str(conf.path("encoder", f"{config.encoder}.yaml")),
        *(arg for path in setup.profile_config(stage) for arg in ("--config", path)),
        "--seed_everything",
        str(seed),
        "--trainer.logger.init_args.tracking_uri",
        setup.tracking_uri,
        "--out_dir",
        out_dir or (setup.agent_outputs(stage) if stage in ("rl", "bc") else f"{setup.outputs}/{stage}"),
    ]
    if stage in ("pretrain", "partner", "dm"):  # the poly-encoder stages read a DataModule
        args += ["--data.data_dir", setup.data_dir]
    else:
        args += [
            "--model.data_dir",
            setup.data_dir,
            "--model.ability",
            config.ability,
            "--model.switch",
            config.switch,
            "--model.seed",
            str(seed),
            "--eval_seeds",
            str(setup.eval_seeds),
            "--pretrain_dir",
            f"{setup.outputs}/pretrain",
            "--model.partner_checkpoint",
            f"{setup.outputs}/partner/{setup.env_encoder}/best.ckpt",
            "--model.dm_checkpoint",
            f"{setup.outputs}/dm/{setup.env_encoder}/best.ckpt",
        ]
    return args + [*setup.extra_args.get("*", ()), *setup.extra_args.get(stage, ())]


def prepare(configs: Sequence[Config], setup: Setup) -> None:
    """Make what the configurations need and the outputs lack: data, pretrained encoders, partner, DM, and each
    pretrained encoder's vectors of the agents' action and utterance spaces."""
    if not (Path(setup.data_dir) / "manifest.json").exists():
        _lq("data", "generate", setup.data_dir)
    _client(setup.tracking_uri).search_experiments(max_results=1)  # a new store's tables, made once, not in a race
    needed = {c.encoder for c in configs if c.stage in ("rl", "bc") and c.encoder != "scratch"}
    if "adaptive" in needed:
        needed.add("general")
    pretrained = sorted(needed, key=ENCODERS.index)  # general before adaptive
    for encoder in pretrained:  # each on every core
        if not Path(f"{setup.outputs}/pretrain/{encoder}/best.ckpt").exists():
            # the agents read its checkpoint only; its Table 4/5 is `make pretrain`'s and the table45 experiment's
            args = stage_args(Config("pretrain", encoder), setup, 0)
            _lq(*args, *_init_from(encoder, f"{setup.outputs}/pretrain"), "--tables.enabled", "false")
    if all(c.stage == "pretrain" for c in configs):
        return
    # then, a core each: the partner and the DM, and in the slot the shorter leaves free the encoders' vectors of
    # the agents' spaces (each agent would otherwise encode them at its start, on its one core)
    env_models = [Config(stage, setup.env_encoder) for stage in ("partner", "dm")]
    jobs: list[tuple[str, Job]] = [
        (c.stage, stage_args(c, setup, 0))
        for c in env_models
        if not Path(f"{setup.outputs}/{c.stage}/{c.encoder}/best.ckpt").exists()
    ]
    jobs += [
        (f"{encoder} vectors of the agents' spaces", partial(_encode_agent_spaces, encoder, setup))
        for encoder in pretrained
    ]
    _lq_pool(jobs, 2)


# jsonargparse changes the process's working directory while it reads a config file: function jobs of the pool
# parse their command lines one at a time (their relative paths would otherwise resolve against another's folder)
_PARSING = threading.Lock()


def _rl_module(config: Config, setup: Setup, seed: int):
    """The RL stage's agent module as ``setup`` configures it for ``config`` (not set up: nothing built yet)."""
    from lq.lit.cli import STAGES, stage_classes

    with _PARSING:
        args = stage_args(Config("rl", config.encoder or "scratch", config.ability, config.switch), setup, seed)[2:]
        cli = STAGES["rl"](*stage_classes("rl"), args=args, parse_only=True)  # not "rl fit"
        return cli.parser.instantiate(cli.config).model


def _encode_agent_spaces(encoder: str, setup: Setup) -> None:
    """A pretrained encoder's vectors of the agents' action and utterance spaces, stored beside its checkpoint (a
    store already there with the same weights and texts is read, not encoded again)."""
    _rl_module(Config("rl", encoder), setup, 0).build_agent()


def _init_from(encoder: str, pretrain_dir: str) -> list[str]:
    return ["--model.encoder.init_from", f"{pretrain_dir}/general/best.ckpt"] if encoder == "adaptive" else []


def resumable_parent(client, experiment: Experiment, setup: Setup) -> str | None:
    """The newest parent run of ``experiment`` with ``setup``'s profile that did not finish (None if none)."""
    where = f"and tags.`lq.profile` = '{setup.profile}' and tags.`lq.protocol` = '{setup.protocol}'"
    runs = parent_runs(client, experiment.name, where)
    unfinished = [r for r in runs if r.info.status != "FINISHED"]
    return unfinished[0].info.run_id if unfinished else None


def _reopen(client, pid: str, experiment: Experiment, setup: Setup) -> set[tuple[str, str]]:
    """Reopen an unfinished parent: check it ran the same seeds and encoders, mark its children that died
    unfinished as KILLED, and return the (configuration, seed) pairs whose children finished."""
    run = client.get_run(pid)
    params = run.data.params
    for key, wanted in (("seeds", " ".join(map(str, setup.seeds))), ("encoders", " ".join(experiment.encoders))):
        if params.get(key) != wanted:
            raise ValueError(
                f"parent run {pid} ran {key} '{params.get(key)}', not '{wanted}': resume with the same "
                f"{key}, or run without --resume for a new parent"
            )
    for child in client.search_runs([run.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{pid}'"):
        if child.info.status == "RUNNING":  # its process is gone: it will be trained again
            client.set_terminated(child.info.run_id, "KILLED")
    client.update_run(pid, status="RUNNING")
    return {(r.data.tags.get("lq.config"), r.data.tags.get("lq.seed")) for r in children(client, pid)}


def log_best_model(client, experiment: Experiment, pid: str, setup: Setup, log: Callable[[str], None]) -> str | None:
    """The parent's best agent child (:func:`best_agent`) exported as a bundle under ``OUTPUTS/bundles/`` and logged
    on the parent as the MLflow logged model ``best_agent``; returns its model URI (None without an agent child)."""
    from lq.lit.checkpoints import export_agent
    from lq.lit.mlflow_model import log_agent_model

    best = best_agent(client, children(client, pid))
    checkpoint = best.data.tags.get("lq.checkpoint") if best is not None else None
    if checkpoint is None:
        log(f"[{experiment.name}] no evaluated agent child with a checkpoint: no model logged")
        return None
    bundle = Path(setup.outputs) / "bundles" / f"{experiment.name}-{setup.profile}-best"
    export_agent(checkpoint, bundle, setup.eval_seeds, overwrite=True)
    uri = log_agent_model(bundle, pid, setup.tracking_uri, name="best_agent")
    log(
        f"[{experiment.name}] best agent {best.data.tags.get('lq.config')} seed {best.data.tags.get('lq.seed')}: "
        f"bundle {bundle}, logged model {uri}"
    )
    return uri


def run_experiment(
    experiment: Experiment, setup: Setup, log: Callable[[str], None] = _print, resume: bool = False
) -> tuple[str, dict[str, tuple[str, str]]]:
    """Train every configuration of ``experiment`` per seed as children of a parent run, then build its tables;
    returns the parent's run id and the tables (Markdown, CSV). ``resume``: continue the newest unfinished parent
    of this experiment and profile (an interrupted run), training only the children that did not finish."""
    started = time.monotonic()
    prepare(experiment.configs, setup)
    prepared = time.monotonic()
    client = _client(setup.tracking_uri)
    exp_id = experiment_id(client, experiment.name)
    pid = resumable_parent(client, experiment, setup) if resume else None
    done: set[tuple[str, str]] = set()
    if pid is not None:
        done = _reopen(client, pid, experiment, setup)
        log(f"[{experiment.name}] resuming parent run {pid}: {len(done)} children finished before")
    else:
        if resume:
            log(f"[{experiment.name}] no unfinished parent run to resume: starting a new one")
        parent = client.create_run(
            exp_id,
            run_name=f"{experiment.name}-{setup.profile}-{setup.protocol}",
            tags={
                "lq.experiment": experiment.name,
                "lq.profile": setup.profile,
                "lq.protocol": setup.protocol,
                "lq.role": "parent",
            },
        )
        pid = parent.info.run_id
        client.log_param(pid, "seeds", " ".join(map(str, setup.seeds)))
        client.log_param(pid, "encoders", " ".join(experiment.encoders))
        client.log_param(pid, "configurations", len(experiment.configs))
    try:
        agents, baselines = [], []  # run side by side (setup.jobs) once the rest is done
        for config in experiment.configs:
            for seed in setup.seeds:
                if (config.key, str(seed)) in done:
                    continue
                tags = {"mlflow.parentRunId": pid, "lq.config": config.key, "lq.seed": str(seed)}
                if config.stage == "baselines":  # after the agents, in the slot the shorter ones leave free
                    baselines.append(
                        (f"{config.key} s{seed}", partial(run_baselines, client, exp_id, config, setup, seed, tags))
                    )
                    continue
                out_dir = None
                extra: list[str] = []
                if config.stage == "pretrain":  # one encoder per seed, kept apart from the agents' encoders
                    out_dir = f"{setup.outputs}/experiments/{experiment.name}/seed-{seed}"
                    extra = _init_from(config.encoder, out_dir)  # adaptive after general: these run in order
                args = [
                    *stage_args(config, setup, seed, out_dir),
                    *extra,
                    "--trainer.logger.init_args.experiment_name",
                    f"lq-{experiment.name}",
                    "--trainer.logger.init_args.tags",
                    json.dumps(tags),
                ]
                if config.stage in ("rl", "bc"):
                    agents.append((f"{config.key} s{seed}", args))
                else:
                    log(f"[{experiment.name}] {config.key} seed {seed}")
                    _lq(*args)
        if agents or baselines:
            log(
                f"[{experiment.name}] {len(agents)} agent runs and {len(baselines)} of the baselines, "
                f"{max(1, min(setup.jobs, len(agents) + len(baselines)))} at a time"
            )
        _lq_pool(agents + baselines, setup.jobs)
        trained = time.monotonic()
        tables = build_tables(experiment, pid, setup.tracking_uri, log)
        if setup.log_model:
            log_best_model(client, experiment, pid, setup, log)
        log(
            f"[{experiment.name}] wall time: data, environment models and encoders {prepared - started:.0f} s, "
            f"child runs {trained - prepared:.0f} s, tables {time.monotonic() - trained:.0f} s "
            f"(total {time.monotonic() - started:.0f} s)"
        )
    except BaseException:
        client.set_terminated(pid, "FAILED")
        raise
    client.set_terminated(pid, "FINISHED")
    return pid, tables


def run_baselines(client, exp_id: str, config: Config, setup: Setup, seed: int, tags: dict[str, str]) -> str:
    """A child run with the baselines and the ceiling of ``config``'s ability and switch: the RL stage's agent module
    as ``setup`` configures it (its environment, switch, spaces and evaluation), each rule in place of the agent
    (``baselines/<rule>/<goal>_rate``); returns its run id."""
    from lq.lit.checkpoints import baseline_results

    module = _rl_module(config, setup, seed)
    run_id = client.create_run(exp_id, run_name=f"{config.key}-s{seed}", tags={**tags, "lq.stage": "baselines"})
    run_id = run_id.info.run_id
    try:
        results = baseline_results(module, "test", [seed])
        for key, [result] in results.items():
            for name, value in result.metrics(f"baselines/{key}/").items():
                if value == value:  # the ceiling has no speech columns (NaN)
                    client.log_metric(run_id, name, value)
    except BaseException:
        client.set_terminated(run_id, "FAILED")
        raise
    client.set_terminated(run_id, "FINISHED")
    return run_id
