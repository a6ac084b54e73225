"""Running an experiment or a stage: what its stages need first, its jobs in waves (one code path for running them
and for plans), one child run per configuration and seed under a parent run (:mod:`lq.experiments.parents`), and the
baselines' children."""

from __future__ import annotations

import dataclasses
import json
import shlex
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lq.conf.resolver import (
    AGENT_CHECKPOINT,
    AGENT_STAGES,
    ENV_STAGES,
    Resolver,
    agent_dir,
    config_threads,
    finished,
    merged_config,
)
from lq.conf.resolver import starts_from_bc as starts_from_bc_config
from lq.experiments.launchers import JobFailed, shown
from lq.experiments.parents import _child_runs, end_dead_runs, log_best_model, open_parent
from lq.experiments.reporting import _client, _print, build_tables, experiment_id
from lq.experiments.setup import Setup
from lq.experiments.specs import ENCODERS, Config, Experiment
from lq.lit.cli import run_tags


def stage_args(config: Config, setup: Setup, seed: int, out_dir: str | None = None) -> list[str]:
    """The command line of one stage run (``lq STAGE fit ...``) of ``config`` with ``seed``: the resolver's, logging
    to the setup's store, with its extra arguments."""
    resolver = setup
    if config.variant:  # a row of the deviation table: its own folder, its objective or its arguments
        out_dir = out_dir or f"{setup.stage_dir(config.stage)}/{config.variant}"
        if config.objective:
            resolver = Resolver(setup.profile, setup.protocol, config.objective, setup.data_dir, setup.outputs)
    args = resolver.stage_args(config.stage, config.encoder, seed, config.ability, config.switch, out_dir)
    args += ["--trainer.logger.init_args.tracking_uri", setup.tracking_uri]
    if config.stage in AGENT_STAGES:
        args += ["--eval_seeds", str(setup.eval_seeds)]
    return args + [*setup.extra_args.get("*", ()), *setup.extra_args.get(config.stage, ()), *config.extra_args]


@dataclass(frozen=True)
class Step:
    """A job of an experiment: its label, its ``lq`` arguments, and the file that exists once it is done (none for a
    child: MLflow knows those; a stage's checkpoint counts once its run finished, :func:`trained`)."""

    label: str
    args: Sequence[str]
    output: str | None = None
    config: Config | None = None  # a child's
    check: Callable[[], str | None] | None = None  # in place of output: the file once done, found when asked

    @property
    def done(self) -> bool:
        return self.done_as is not None

    @property
    def done_as(self) -> str | None:
        """The file that shows the step done (None: not done)."""
        output = self.check() if self.check is not None else self.output
        return output if output is not None and Path(output).exists() else None


Wave = tuple[list[Step], int]  # jobs independent of each other, and how many the local launcher runs at once


def preparation(configs: Sequence[Config], setup: Setup) -> list[Wave]:
    """What the configurations need before their children, in waves each after the one before: the data; the
    pretrained encoders (``general`` before ``adaptive``, each on every core); then, a core each, the partner and the
    DM; then, a core each, the partner's calibration (once per environment models, data and settings; agents side by
    side would each fit it) and each pretrained encoder's vectors of the agents' action and utterance spaces (each
    agent would otherwise encode them at its start); then, ``setup.jobs`` at a time, the BC agents that RL agents
    starting from BC (:func:`starts_from_bc`) need and the configurations do not train themselves, where missing or
    trained unlike the RL agent (another protocol, size or environment)."""
    waves: list[Wave] = [([_data_step(setup)], 1)]
    agents = [c for c in configs if c.stage in AGENT_STAGES]
    needed = {n for c in agents for n in setup.needs(c.stage, c.encoder) if n[0] == "pretrain"}
    # the paper's encoders in their order (general before adaptive), then any other
    encoders = sorted({e for _, e in needed}, key=lambda e: (ENCODERS.index(e) if e in ENCODERS else len(ENCODERS), e))
    for group in ([e for e in encoders if e != "adaptive"], [e for e in encoders if e == "adaptive"]):
        if group:  # the agents read the checkpoint only; Table 4/5 is make pretrain's and the table45 experiment's
            waves.append(([_pretrain_step(e, setup) for e in group], 1))
    if agents:
        env = [trained(stage, stage_args(Config(stage, setup.env_encoder), setup, 0), setup.checkpoint(stage))
               for stage in ENV_STAGES]  # fmt: skip
        spaces = [
            Step(
                f"{e} vectors of the agents' spaces",
                ["experiment", "spaces", "--module-args", shlex.join(args)],
                check=lambda args=args: spaces_encoded(args),
            )
            for e in encoders
            if any(c.encoder == e for c in agents)  # not general for adaptive's sake alone
            for args in [_module_args(Config("rl", e), setup, 0)]
        ]
        module_args = _module_args(Config("rl"), setup, 0)
        calibration = ["experiment", "calibrate", "--module-args", shlex.join(module_args)]
        check = lambda: calibrated(module_args)  # noqa: E731 (asked when the wave runs: the models exist by then)
        # the calibration beside the spaces' vectors: it needs the partner and the DM, they only the encoders
        waves += [(env, 2), ([Step("the partner's calibration", calibration, check=check), *spaces], 2)]
    # the BC agents the RL agents start from, where the configurations do not train them (an experiment's BC
    # children go before its RL children: child_waves)
    cloned = {c for c in configs if c.stage == "bc"}
    # one per BC configuration and seed, whichever RL variants start from it
    needed = dict.fromkeys(
        bc
        for c in agents
        if c.stage == "rl"
        and (bc := dataclasses.replace(c, stage="bc", variant="")) not in cloned
        and starts_from_bc(c, setup)
    )
    starts = [
        Step(f"bc {bc.key[3:]} s{seed} (the RL agent's start)", stage_args(bc, setup, seed), _bc_start(bc, setup, seed))
        for bc in needed
        for seed in setup.seeds
    ]
    if starts:
        waves.append((starts, setup.jobs))
    return waves


def starts_from_bc(config: Config, setup: Setup) -> bool:
    """Whether the RL agents of ``config`` start from the BC agent of their configuration and seed (``init_from: bc``,
    conf/rl.yaml's default, unless the setup's extra arguments say otherwise)."""
    return starts_from_bc_config(merged_config(_module_args(config, setup, setup.seeds[0])))  # no CLI parsed


def _bc_start(config: Config, setup: Setup, seed: int) -> str | None:
    """The BC agent an RL agent of ``config`` and ``seed`` starts from, as a step's output: None (train it) where it is
    missing, its run did not finish (killed, interrupted), or it was trained unlike that RL agent would be
    (:func:`_trained_alike`: another protocol, size or environment)."""
    checkpoint = setup.agent_checkpoint("bc", config.encoder, config.ability, config.switch, seed)
    if not finished(checkpoint):
        return None
    return checkpoint if _trained_alike(checkpoint, rl_module(_module_args(config, setup, seed)).hparams) else None


def trained(label: str, args: Sequence[str], checkpoint: str) -> Step:
    """A step that trains a stage run whose checkpoint is ``checkpoint``: done once that run finished
    (:func:`lq.conf.resolver.finished`), not when a killed run left its checkpoint."""
    return Step(label, args, checkpoint, check=lambda: checkpoint if finished(checkpoint) else None)


def _data_step(setup: Setup) -> Step:
    """The dataset: the embedded default data is generated where it is missing (seconds); another must exist."""
    manifest = f"{setup.data_dir}/manifest.json"
    if not Path(manifest).exists() and Path(setup.data_dir) != Path("data/default"):
        raise FileNotFoundError(
            f"{manifest}: no dataset in {setup.data_dir}; lq data generate {setup.data_dir} writes the embedded "
            "default data there, lq data download DEST fetches the release"
        )
    return Step("data", ["data", "generate", setup.data_dir], manifest)


def _pretrain_step(encoder: str, setup: Setup) -> Step:
    args = [*stage_args(Config("pretrain", encoder), setup, 0), "--tables.enabled", "false"]
    return trained(f"pretrain {encoder}", args, setup.checkpoint("pretrain", encoder))


def prepare(configs: Sequence[Config], setup: Setup) -> None:
    """Make what the configurations need and the outputs lack (:func:`preparation`), through the setup's launcher."""
    _run_waves(preparation(configs, setup), setup)


def _run_waves(waves: Sequence[Wave], setup: Setup) -> None:
    """Run the steps of ``waves`` that are not done (a child always runs), a wave at a time, through the setup's
    launcher."""
    for steps, parallel in waves:
        todo = [s for s in steps if not s.done]
        if todo and todo[0].label != "data":
            _client(setup.tracking_uri).search_experiments(max_results=1)  # a new store's tables, made once
        _launch(setup, [(s.label, s.args) for s in todo], parallel)


def _launch(setup: Setup, jobs: Sequence[tuple[str, Sequence[str]]], parallel: int) -> None:
    """Run ``jobs`` through the setup's launcher; where one is killed or fails, or on Ctrl-C, the store's runs whose
    process is gone are marked KILLED (a run killed with SIGKILL cannot end itself) before the error goes on."""
    try:
        setup.launcher.run(jobs, parallel)
    except (JobFailed, KeyboardInterrupt):
        client = _client(setup.tracking_uri)
        ids = [e.experiment_id for e in client.search_experiments()]
        end_dead_runs(client, client.search_runs(ids, "attributes.status = 'RUNNING'") if ids else [])
        raise


def stage_waves(
    stage: str,
    setup: Setup,
    encoder: str,
    ability: str = "act_speech",
    switch: str = "hardcoded",
    compare: bool = False,
) -> list[Wave]:
    """Every job of one stage (``make pretrain``, ``partner``, ``dm``, ``bc``, ``rl``), in waves each after the one
    before: what the stage needs (:func:`preparation`; for ``adaptive`` the general encoder; for RL the BC agents it
    starts from), then one run per seed (poly-encoder stages: the first seed only). ``compare`` (the RL stage): then
    the BC agents of the same configuration and seeds, each where missing or trained unlike its RL agent (asked when
    its wave comes, the RL agents trained by then), and all of them evaluated side by side with the baselines
    (``OUTPUTS/eval/``). What :func:`run_stage` runs and ``lq stage --print`` prints."""
    if compare and stage != "rl":
        raise ValueError(f"compare: the RL stage's agents are compared with BC's and the baselines, not {stage}'s")
    setup.configs(stage, encoder)  # an unknown stage or encoder named now, with the choices
    config = Config(stage, encoder, ability, switch)
    waves = preparation([config], setup)  # an agent's needs; a pretraining run's (adaptive: general) below
    if stage == "pretrain":
        waves += [([_pretrain_step(e, setup)], 1) for _, e in setup.needs(stage, encoder)]
    waves.append(([Step(label, args) for label, args in stage_runs(config, setup)], 1))  # always trained
    if not compare:
        return waves
    seeds = setup.seeds
    rl_dir = out_dir_of(stage_args(config, setup, seeds[0]))  # the resolver's, or one the stage's ARGS name
    rl = [f"{agent_dir(rl_dir, encoder, ability, switch, s)}/{AGENT_CHECKPOINT['rl']}" for s in seeds]
    bc = [setup.agent_checkpoint("bc", encoder, ability, switch, s) for s in seeds]
    plain = dataclasses.replace(setup, extra_args={})  # not the RL stage's extras
    cloned = Config("bc", encoder, ability, switch)
    prepared = {tuple(step.args) for steps, _ in waves for step in steps}  # RL's BC starts: the same runs
    starts = [
        Step(f"bc s{s}", args, check=lambda b=b, r=r: b if _trained_alike(b, r) else None)
        for s, b, r in zip(seeds, bc, rl, strict=True)
        if tuple(args := stage_args(cloned, plain, s)) not in prepared
    ]
    # beside the RL agents' folder; named after it where ARGS chose another than the resolver's
    named = "" if Path(rl_dir) == Path(setup.stage_dir("rl")) else f"{Path(rl_dir).name}-"
    out = f"{Path(rl_dir).parent}/eval/{named}{encoder}-{ability}-{switch}"
    evaluation = Step("eval", ["eval", *rl, *bc, "--baselines", str(len(seeds)), "--out", out])
    return [*waves, *([(starts, 1)] if starts else []), ([evaluation], 1)]


def run_stage(stage: str, setup: Setup, encoder: str, *choices: str, **options: bool) -> None:
    """Run the jobs of :func:`stage_waves` (``choices``: the ability and switch; ``options``: ``compare``) that are not
    done, through the setup's launcher."""
    _run_waves(stage_waves(stage, setup, encoder, *choices, **options), setup)


def shown_waves(waves: Sequence[Wave]) -> list[str]:
    """Waves as numbered steps of ``lq`` command lines (a step's lines are independent of each other; each step after
    the one before); a line whose output exists says so in a comment."""
    lines = []
    for i, (steps, _) in enumerate(waves, 1):
        names = dict.fromkeys(s.config.key if s.config else s.label for s in steps)
        lines.append(f"# step {i} of {len(waves)}: {', '.join(names)}")
        lines += [shown(s.args) + (f"  # done: {done} exists" if (done := s.done_as) else "") for s in steps]
    return lines


def out_dir_of(args: Sequence[str]) -> str:
    """The folder a stage run writes to: the last ``--out_dir`` of its command line (the last one counts, as for
    every argument LightningCLI reads)."""
    where = [i for i, a in enumerate(args) if a == "--out_dir" or a.startswith("--out_dir=")]
    if not where:
        raise ValueError(f"no --out_dir in the stage's command line: {shown(args)}")
    last = args[where[-1]]
    return args[where[-1] + 1] if last == "--out_dir" else last.split("=", 1)[1]


# what else an agent's evaluation depends on: the protocol and the environment's partner and DM
ENVIRONMENT = ("env.protocol", "env.context_length", "env.partner_calibration", "env.partner_checkpoint",
               "env.dm_checkpoint")  # fmt: skip


def _trained_alike(bc_checkpoint: str, rl: str | Mapping) -> bool:
    """Whether a BC agent is there and has the sizes, data, encoder, protocol and environment of an RL agent (its
    checkpoint, or the hyperparameters of one about to be trained): else ``compare`` and the RL agents' BC starts
    train it again (a BC agent of another profile or context length would not compare, nor be a start)."""
    from lq.lit.agent import SAME_AGENT, hparams_at, read_checkpoint

    if not finished(bc_checkpoint):  # missing, or its run was killed before the end
        return False
    if isinstance(rl, str) and not Path(rl).exists():
        return True
    ours = read_checkpoint(rl).get("hyper_parameters", {}) if isinstance(rl, str) else rl
    theirs = read_checkpoint(bc_checkpoint).get("hyper_parameters", {})
    keys = (*SAME_AGENT, *ENVIRONMENT)
    return hparams_at(theirs, keys) == hparams_at(ours, keys)


def stage_runs(config: Config, setup: Setup) -> list[tuple[str, list[str]]]:
    """The runs of one stage: one per seed for the agents, the first seed's alone for a poly-encoder stage."""
    seeds = setup.seeds if config.stage in AGENT_STAGES else setup.seeds[:1]
    return [(f"{config.stage} s{seed}", stage_args(config, setup, seed)) for seed in seeds]


def _module_args(config: Config, setup: Setup, seed: int) -> list[str]:
    """The RL stage's arguments for ``config``'s encoder, ability and switch (after ``rl fit``): what builds the agent
    module the baselines and the spaces' vectors are computed with."""
    variant = config.variant if config.stage == "rl" else ""
    rl = Config("rl", config.encoder or "scratch", config.ability, config.switch, variant)
    return stage_args(rl, setup, seed)[2:]


def rl_module(module_args: Sequence[str]):
    """The RL stage's agent module built from its command line (not set up: nothing built yet)."""
    from lq.lit.cli import STAGES, stage_classes

    cli = STAGES["rl"](*stage_classes("rl"), args=list(module_args), parse_only=True)
    return cli.parser.instantiate(cli.config).model


@contextmanager
def stage_threads(module_args: Sequence[str]) -> Iterator[None]:
    """Within: torch's CPU threads those of the RL stage's run (``--threads``), as for the agents that read what is
    computed here; the caller's after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(config_threads(merged_config(module_args)))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def calibrate_environment(module_args: Sequence[str]) -> None:
    """The environment's partner calibrated on the demonstrations (:mod:`lq.envs.calibration`) and kept beside its
    checkpoint, for the agents built from ``module_args`` and any other that share its partner, DM and data (at the
    agents' threads)."""
    with stage_threads(module_args):
        rl_module(module_args).eval_env("valid")


def calibrated(module_args: Sequence[str]) -> str | None:
    """The file of the calibration :func:`calibrate_environment` fits (one per environment models, data and settings:
    :meth:`lq.envs.spec.EnvSpec.calibration_file`), or None while its data or models are missing."""
    spec = rl_module(module_args).env_spec
    if not Path(spec.data_dir, "manifest.json").exists() or not all(
        finished(m) for m in (spec.partner_checkpoint, spec.dm_checkpoint)
    ):
        return None
    return str(spec.calibration_file())


def spaces_encoded(module_args: Sequence[str]) -> str | None:
    """The last file :func:`encode_agent_spaces` writes (:meth:`lq.lit.agent.AgentModule.space_stores`), or None while
    its data or pretrained encoder is missing."""
    module = rl_module(module_args)
    if not Path(module.data_dir, "manifest.json").exists() or not finished(module.hparams.pretrained_checkpoint):
        return None
    return str(module.space_stores()[-1])


def encode_agent_spaces(module_args: Sequence[str]) -> None:
    """A pretrained encoder's vectors of the agents' action and utterance spaces, stored beside its checkpoint (a
    store already there with the same weights and texts is read, not encoded again), at the agents' threads."""
    with stage_threads(module_args):
        rl_module(module_args).build_agent()


def child_waves(experiment: Experiment, setup: Setup, pid: str, done: set[tuple[str, str]] = frozenset()) -> list[Wave]:
    """The parent's children that have not finished, in waves each after the one before: pretraining children (the
    adaptive encoder after the general one of its seed's folder, which it starts from; one at a time on every core),
    then, ``setup.jobs`` at a time, the BC agents (the RL agents' start, where they start from BC) and the baselines,
    then the RL agents. Within a wave, every configuration's first seed comes before any configuration's second."""
    waves: list[list[Step]] = [[], [], [], []]
    # seed-major: a table cut short (a session's end, a killed job) has every row at its first seeds
    for seed in setup.seeds:
        for config in experiment.configs:
            if (config.key, str(seed)) in done:
                continue
            tags = {"mlflow.parentRunId": pid, "lq.config": config.key, "lq.seed": str(seed)}
            tags.update({"lq.variant": config.variant} if config.variant else {})
            label = f"{config.key} s{seed}"
            if config.stage == "baselines":
                args = [
                    "experiment",
                    "baselines",
                    experiment.name,
                    "--config",
                    config.key,
                    "--seeds",
                    str(seed),
                    "--parent",
                    pid,
                    "--tracking-uri",
                    setup.tracking_uri,
                    "--module-args",
                    shlex.join(_module_args(config, setup, seed)),
                ]
                waves[2].append(Step(label, args, config=config))  # beside the BC agents: they need none
                continue
            # one encoder per seed, kept apart from the agents' encoders
            out_dir = (
                f"{setup.outputs}/experiments/{experiment.name}/seed-{seed}" if config.stage == "pretrain" else None
            )
            args = [
                *stage_args(config, setup, seed, out_dir),
                "--trainer.logger.init_args.experiment_name",
                f"lq-{experiment.name}",
                "--trainer.logger.init_args.tags",
                json.dumps(tags),
            ]
            wave = {"rl": 3, "bc": 2}.get(config.stage, 1 if config.encoder == "adaptive" else 0)
            waves[wave].append(Step(label, args, config=config))
    # the longest first, so that the slots end together: a pretrained encoder before scratch, the baselines last
    for wave in waves[2:]:
        wave.sort(key=lambda s: (s.config.stage == "baselines", s.config.encoder == "scratch"))
    return [(steps, setup.jobs if i >= 2 else 1) for i, steps in enumerate(waves) if steps]


def plan(experiment: Experiment, setup: Setup, resume: bool = False) -> list[str]:
    """Every job of ``experiment`` as an ``lq`` command line, for any scheduler: the preparation, the children (under
    a parent run opened now, or the resumed one) and the tables that finish the parent, in numbered steps, each
    after the one before; the lines of one step are independent of each other. A preparation line whose output
    exists says so in a comment."""
    client = _client(setup.tracking_uri)
    pid, done = open_parent(client, experiment, setup, resume, lambda _: None)
    lines = [
        f"# {experiment.title}: profile {setup.profile}, protocol {setup.protocol}, objective {setup.objective}, seeds "
        f"{' '.join(map(str, setup.seeds))}; parent run {pid} in MLflow experiment lq-{experiment.name} "
        f"({setup.tracking_uri})"
    ]
    waves = [*preparation(experiment.configs, setup), *child_waves(experiment, setup, pid, done)]
    finish = ["experiment", "tables", experiment.name, "--parent", pid, "--tracking-uri", setup.tracking_uri]
    finish += ["--out", f"{setup.outputs}/tables"]
    waves.append(([Step("tables", finish)], 1))
    return lines + shown_waves(waves)


def run_experiment(
    experiment: Experiment, setup: Setup, log: Callable[[str], None] = _print, resume: bool = False
) -> tuple[str, dict[str, tuple[str, str]]]:
    """Train every configuration of ``experiment`` per seed as children of a parent run, through the setup's
    launcher, then build its tables; returns the parent's run id and the tables (Markdown, CSV). ``resume``:
    continue the newest unfinished parent of this experiment and profile (an interrupted run, whichever launcher
    ran it), training only the children that did not finish."""
    started = time.monotonic()
    prepare(experiment.configs, setup)
    prepared = time.monotonic()
    client = _client(setup.tracking_uri)
    pid, done = open_parent(client, experiment, setup, resume, log)
    try:
        waves = child_waves(experiment, setup, pid, done)
        log(f"[{experiment.name}] {sum(len(steps) for steps, _ in waves)} children")
        _run_waves(waves, setup)
        ran = time.monotonic()
        tables = build_tables(experiment, pid, setup.tracking_uri, log)
        if setup.log_model:
            log_best_model(client, experiment, pid, setup, log)
        log(
            f"[{experiment.name}] wall time: data, environment models and encoders {prepared - started:.0f} s, "
            f"child runs {ran - prepared:.0f} s, tables {time.monotonic() - ran:.0f} s "
            f"(total {time.monotonic() - started:.0f} s)"
        )
    except BaseException as error:
        # the children the launcher saw end badly (a kill -9 leaves its run RUNNING), then the parent
        end_dead_runs(client, _child_runs(client, pid), gone=isinstance(error, (JobFailed, KeyboardInterrupt)))
        client.set_terminated(pid, "KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED")
        raise
    client.set_terminated(pid, "FINISHED")
    return pid, tables


def run_baselines(client, experiment: str, config: Config, module_args: Sequence[str], seed: int, pid: str) -> str:
    """A child of parent run ``pid`` with the baselines and the ceiling of ``config``'s ability and switch: the RL
    stage's agent module built from ``module_args`` (its environment, switch, spaces and evaluation), each rule in
    place of the agent (``baselines/<rule>/<goal>_rate``); returns its run id."""
    from lq.lit.checkpoints import agent_baselines

    module = rl_module(module_args)
    tags = {"mlflow.parentRunId": pid, "lq.config": config.key, "lq.seed": str(seed), "lq.stage": "baselines"}
    exp_id = experiment_id(client, experiment)
    run_id = client.create_run(exp_id, run_name=f"{config.key}-s{seed}", tags={**tags, **run_tags()}).info.run_id
    try:
        with stage_threads(module_args):
            results = agent_baselines(module, "test", [seed])
        for key, [result] in results.items():
            for name, value in result.metrics(f"baselines/{key}/").items():
                if value == value:  # the ceiling has no speech columns (NaN)
                    client.log_metric(run_id, name, value)
    except BaseException as error:
        client.set_terminated(run_id, "KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED")
        raise
    client.set_terminated(run_id, "FINISHED")
    return run_id
