"""Running an experiment or a stage: what its stages need first, its jobs in waves (one code path for running them
and for plans), one child run per configuration and seed under a parent run (:mod:`lq.experiments.parents`), and the
baselines' children."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass
from pathlib import Path

from lq.conf.resolver import Profile, profiles
from lq.data.outputs import finished, trained
from lq.experiments.launchers import JobFailed, Local, Task, shown
from lq.experiments.parents import end_dead_runs, open_parent, parents_to_resume, peek_parent
from lq.experiments.reporting import _client, _print, build_tables, children
from lq.experiments.setup import Setup
from lq.experiments.specs import Config, Experiment
from lq.stages import Resolver, Run, kind_of, read_config, same_run, shared_with_bc, start_differences
from lq.stages.families import flag_value, without_flag
from lq.tracking import end_run


def run_of(config: Config, setup: Setup, seed: int, out_dir: str | None = None) -> Run:
    """The :class:`Run` of ``config`` with ``seed`` under the setup: a stage's logs to the setup's store and takes the
    setup's extra arguments for it (:func:`with_extras`: the baselines' module the RL stage's); a deviation-table
    row has its own folder, objective or arguments."""
    resolver = setup
    if config.variant:  # a row of the deviation table: its own folder, its objective or its arguments
        out_dir = out_dir or f"{setup.stage_dir(config.stage)}/{config.variant}"
        if config.objective:
            resolver = Resolver(setup.profile, setup.protocol, config.objective, setup.data_dir, setup.outputs)
    run = with_extras(resolver.run(config.stage, config.encoder, config.ability, config.switch, seed, out_dir), setup,
                      config.args_for(seed, setup))  # fmt: skip
    if run.kind.trains and (folder := flag_value(run.extra, "--out_dir")):  # ARGS that name the stage's folder
        run = dataclasses.replace(run, folder=folder, extra=tuple(without_flag(run.extra, "--out_dir")))
    return run


def with_extras(run: Run, setup: Setup, more: Sequence[str] = ()) -> Run:
    """``run`` with the setup's arguments for it (``more`` after them): a stage's, logging to the setup's store and
    its extra arguments (``*``, then the stage's); a preparation job's module, the RL stage's."""
    if not run.kind.trains:
        extra = [*setup.extra_args.get("*", ()), *setup.extra_args.get("rl", ())]
    else:
        extra = ["--trainer.logger.init_args.tracking_uri", setup.tracking_uri]
        extra += ["--eval_seeds", str(setup.eval_seeds)] if run.kind.agent else []
        extra += [*setup.extra_args.get("*", ()), *setup.extra_args.get(run.stage, ())]
    return dataclasses.replace(run, extra=(*extra, *more))


def child_run(config: Config, setup: Setup, seed: int, experiment: str = "") -> Run:
    """The run of ``config`` and ``seed`` as a child of ``experiment`` (:func:`run_of`): a pretraining child in its
    seed's folder, one encoder per seed kept apart from the agents' encoders (a variant's in a folder of its own
    there); Tables 4/5's Scratch model with its profile's ``timeline_scratch.yaml`` last, where it has one."""
    if not (config.stage == "pretrain" and experiment):
        return run_of(config, setup, seed)
    folder = f"{setup.outputs}/experiments/{experiment}/seed-{seed}"
    run = run_of(config, setup, seed, f"{folder}/{config.variant}" if config.variant else folder)
    if config.encoder != "scratch":
        return run
    # Tables 4/5's Scratch model: its profile's settings for it, where it has some (tiny: the agents' Scratch encoder
    # on every training timeline, conf/profile/tiny/timeline_scratch.yaml)
    files = Profile(setup.profile).files_if_any("timeline_scratch")
    return dataclasses.replace(run, extra=(*run.extra, *(a for f in files for a in ("--config", str(f)))))


def prep(stage: str, setup: Setup, encoder: str = "", **identity) -> Run:
    """A preparation job of the setup (``calibrate``, ``spaces``, ``baselines``: :data:`lq.stages.PREPARATION`) whose
    RL run takes the RL stage's extra arguments."""
    return with_extras(dataclasses.replace(setup.run(stage, encoder), **identity), setup)


def stage_config(config: Config, setup: Setup, seed: int, out_dir: str | None = None) -> dict:
    """The resolved configuration of one stage run of ``config`` with ``seed`` (:func:`run_of`,
    :meth:`lq.stages.Stage.resolve`)."""
    return run_of(config, setup, seed, out_dir).config


@dataclass(frozen=True)
class Step:
    """A job of an experiment: its label, its ``lq`` arguments, and the file that exists once it is done (none for a
    child: MLflow knows those; a stage's checkpoint counts once its run finished, :func:`trained`)."""

    label: str
    args: Sequence[str]
    output: str | None = None
    config: Config | None = None  # a child's
    seed: int | None = None  # a child's
    check: Callable[[], str | None] | None = None  # in place of output: the file once done, found when asked
    run: Run | None = None  # the run it launches, whose resolved config it writes before it starts (Stage.write)
    # the labels of the steps it waits for, where known (an experiment's children: :func:`child_waves`); None: every
    # step of the waves before
    after: Sequence[str] | None = None
    # given the time it started, whether what the steps after it read is made while it goes on (a BC child's final
    # weights, before its evaluation: :func:`lq.data.outputs.trained`); None: once it has ended
    released: Callable[[float], bool] | None = None
    # a forced run of a stage target whose folder holds a finished run: trained beside it, in its place once it
    # finishes (:meth:`lq.stages.families.Trained.retrain_args`)
    retrain: bool = False

    def write(self) -> None:
        """What the step's run reads, written before it starts (a trained run's resolved config); a run that starts
        over (no ``--ckpt_path``) removes an earlier run's last checkpoint from its folder first, and one trained
        again beside a finished run (``retrain``) writes in the folder's ``.retrain/`` alone."""
        if self.run is not None:
            fresh = "--ckpt_path" not in self.args
            self.run.kind.write(self.run, fresh, **({"retrain": True} if self.retrain else {}))

    @property
    def done(self) -> bool:
        return self.done_as is not None

    @property
    def done_as(self) -> str | None:
        """The file that shows the step done (None: not done)."""
        output = self.check() if self.check is not None else self.output
        return output if output is not None and Path(output).exists() else None


Wave = tuple[list[Step], int]  # jobs independent of each other, and how many the local launcher runs at once


def layered(runs: Sequence[Run], needs: Callable[[Run], Sequence[Run]] = Run.needs) -> list[list[Run]]:
    """``runs`` and what they need (``needs``), in layers each after the one before: a run goes in the layer just
    before the first of the runs that need it (as late as it can; a run that nothing needs, in the last); within a
    layer, in the order they were first met. Runs are equal by identity, not by their extra arguments: a run asked
    for comes out as given."""
    height: dict[Run, int] = {}

    def visit(run: Run, h: int) -> None:
        if height.get(run, -1) >= h:
            return
        height[run] = h
        for need in needs(run):
            visit(need, h + 1)

    for run in runs:
        visit(run, 0)
    top = max(height.values(), default=-1)
    given = {run: run for run in runs}  # a run asked for as given (its extra arguments), not as another needs it
    return [[given.get(run, run) for run, h in height.items() if h == level] for level in range(top, -1, -1)]


def waves_of(layers: Sequence[Sequence[Run]], step: Callable[[Run], Step], jobs: int) -> list[Wave]:
    """Layers of runs as waves of steps: within a layer, one wave per :attr:`lq.stages.Stage.wave` of its runs' kinds,
    in order (the pretraining runs one at a time, each on every core; the dataset; the environment's models and the
    preparation a core each, two at once; the agents and the baselines ``jobs`` at a time: each kind's ``at_once``)."""
    waves = []
    for layer in layers:
        for wave in sorted({run.kind.wave for run in layer}):
            runs = [run for run in layer if run.kind.wave == wave]
            waves.append(([step(run) for run in runs], runs[0].kind.at_once or jobs))
    return waves


def preparation(
    configs: Sequence[Config], setup: Setup, experiment: str = "", done: Set[tuple[str, str]] = frozenset()
) -> list[Wave]:
    """What the configurations' runs need and do not train themselves, in waves each after the one before: the layers
    of their :meth:`Run.needs` (:func:`layered`, :func:`waves_of`): the data; the pretrained encoders (``general``
    before ``adaptive``); the partner and the DM; the partner's calibration (once per environment models, data and
    settings: agents side by side would each fit it) and each pretrained encoder's vectors of the agents' action and
    utterance spaces (each agent would otherwise encode them at its start); and the BC agents that RL agents starting
    from BC (``init_from: bc``) need, where missing or trained unlike the RL agent (another protocol, size or
    environment). ``experiment``: the experiment whose children the configurations are (its pretraining children's
    folders); ``done``: the (configuration, seed) pairs whose children finished before (a resumed parent's): they
    are not children again, but what they made and the others need (an RL child's BC start) is made again where it
    is missing (a parent imported from another machine's store, :mod:`lq.experiments.records`)."""
    runs = [
        child_run(c, setup, seed, experiment) for c in configs for seed in setup.seeds if (c.key, str(seed)) not in done
    ]
    return _preparation(runs, setup)


def _preparation(runs: Sequence[Run], setup: Setup) -> list[Wave]:
    """The waves of what ``runs`` need, less ``runs`` themselves (an RL child's BC start that is a child too)."""
    asked = set(runs)
    needed = [setup.run("data"), *(n for r in runs for n in r.needs() if n not in asked)]
    layers = layered(needed)
    present = {run for layer in layers for run in layer}

    def step(run: Run) -> Step:  # after what it needs (the partner's calibration need not wait for the encoders)
        return dataclasses.replace(_prep_step(run, setup), after=[n.label for n in run.needs() if n in present])

    return waves_of(layers, step, setup.jobs)


def _prep_step(run: Run, setup: Setup, label: str = "") -> Step:
    """The step of a run that the configurations need (with the setup's arguments for it; ``label``: its name where
    not its kind's): done when its output is there (:attr:`lq.stages.Run.done_as`, asked when its wave runs: the models
    a keyed file is named by exist by then); a BC agent (an RL agent's start, or one ``compare`` puts beside it) only
    where it was trained as that RL agent would be."""
    run.kind.check(run)
    run = with_extras(run, setup, run.extra)  # its own after the setup's (a BC start's training pool and worlds)
    if run.kind.agent:  # a BC start stopped mid-training trains again from its start: the RL figures stay exact
        return Step(label or run.label, run.args, check=lambda: _bc_start(run, setup), run=run)
    prepared = run.kind.prepared(run)
    return Step(label or run.label, prepared.args, check=lambda: run.done_as, run=prepared)


def _bc_start(bc: Run, setup: Setup) -> str | None:
    """The BC agent an RL agent of the same configuration and seed starts from (or is compared with), as the file that
    shows its step done: None (train it) where it is missing, its run did not finish (killed, interrupted), or it was
    trained unlike that RL agent would be (:func:`_trained_alike`: another protocol, size or environment)."""
    if not finished(bc.checkpoint):
        return None
    rl = rl_run(Config("rl", bc.encoder, bc.ability, bc.switch), setup, bc.seed)
    rl = dataclasses.replace(rl, extra=(*rl.extra, *shared_with_bc(bc.config)))  # its training pool, its worlds
    return bc.checkpoint if _trained_alike(bc, rl) else None


def prepare(configs: Sequence[Config], setup: Setup, experiment: str = "") -> None:
    """Make what the configurations need and the outputs lack (:func:`preparation`), through the setup's launcher."""
    _run_waves(preparation(configs, setup, experiment), setup)


def _run_waves(waves: Sequence[Wave], setup: Setup) -> None:
    """Run the steps of ``waves`` that are not done (a child always runs) through the setup's launcher: the local one
    as one graph (:func:`_tasks`: a step starts once those it waits for are done and a slot is free), any other a
    wave at a time."""
    if isinstance(setup.launcher, Local):
        _launch(setup, lambda: setup.launcher.run_graph(_tasks(waves, setup), _width(waves, setup)))
        return
    for steps, parallel in waves:
        todo = [s for s in steps if not s.done]
        if todo and todo[0].label != "data":
            _client(setup.tracking_uri).search_experiments(max_results=1)  # a new store's tables, made once
        for step in todo:
            step.write()
        _launch(setup, functools.partial(setup.launcher.run, [(s.label, s.args) for s in todo], parallel))


def resumed_waves(prep: Sequence[Wave], children: Sequence[Wave], setup: Setup) -> list[Wave]:
    """A resumed parent's preparation (``prep``: what its finished children made and this machine lacks, such as an RL
    child's BC start) and its ``children``, as the waves the setup's launcher runs. The local launcher runs them as
    one graph: the preparation's other steps first, and each BC start just before the first child that waits for it
    (:attr:`Step.after`), freeing its slot once its weights are final (:attr:`Step.released`), so that a child starts
    as soon as its own start is trained rather than after every start (the starts of a large training pool take an
    hour each); every child also waits for the preparation's other steps. Any other launcher, or starts whose labels
    do not tell them apart, run the preparation's waves, then the children's."""
    found = [s for steps, _ in prep for s in steps if s.run is not None and s.run.kind.agent]
    if not isinstance(setup.launcher, Local) or len({s.label for s in found}) < len(found):
        return [*prep, *children]
    starts = {s.label: (s, n) for steps, n in prep for s in steps if s in found}
    waves = [([s for s in steps if s.label not in starts], n) for steps, n in prep]
    waves = [wave for wave in waves if wave[0]]
    first = list(dict.fromkeys(s.label for steps, _ in waves for s in steps))
    for steps, n in children:
        for step in steps:
            for start, m in (starts.pop(a) for a in step.after or () if a in starts):
                released = functools.partial(trained, start.run.checkpoint)  # its weights final: its child may start
                waves.append(([dataclasses.replace(start, released=released)], m))
            waves.append(([dataclasses.replace(step, after=[*first, *(step.after or ())])], n))
    return waves + [([s], n) for s, n in starts.values()]  # none waits for them


def _tasks(waves: Sequence[Wave], setup: Setup) -> list[Task]:
    """The steps of ``waves`` as the local launcher's graph, in their order: each after the steps it names
    (:attr:`Step.after`), else after every step of the waves before; each holding the share of the setup's jobs its
    wave allows (a pretraining run, every one); whether it is done asked only as it could start (the models a keyed
    file is named by exist by then), and what it reads written then."""
    store = functools.cache(lambda: _client(setup.tracking_uri).search_experiments(max_results=1))  # a new store's

    def due(step: Step) -> bool:
        if step.done:
            return False
        if step.label != "data":
            store()  # its tables, made once before any child opens it
        step.write()
        return True

    width = _width(waves, setup)
    tasks: list[Task] = []
    named: dict[str, list[str]] = {}  # a label, and the tasks' own (two steps of one label: "data", "data (2)")
    for steps, parallel in waves:
        before = tuple(t.label for t in tasks)
        for step in steps:
            after = before if step.after is None else tuple(n for label in step.after for n in named.get(label, ()))
            own = step.label if step.label not in named else f"{step.label} ({len(named[step.label]) + 1})"
            named.setdefault(step.label, []).append(own)
            slots = max(1, width // max(1, parallel))
            tasks.append(Task(own, step.args, after, slots, functools.partial(due, step), step.released))
    return tasks


def _width(waves: Sequence[Wave], setup: Setup) -> int:
    """The local launcher's slots: as many as the widest wave runs at once (the environment's models two at once even
    at ``--jobs 1``); a step holds its wave's share of them (a pretraining run, every one)."""
    return max([setup.jobs, *(parallel for _, parallel in waves)])


def _launch(setup: Setup, run: Callable[[], None]) -> None:
    """Run jobs through the setup's launcher (``run``); where one is killed or fails, or on Ctrl-C, the store's runs
    whose process is gone are marked KILLED (a run killed with SIGKILL cannot end itself) before the error goes on."""
    try:
        run()
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
    force: bool = False,
) -> list[Wave]:
    """Every job of one stage (``make pretrain``, ``partner``, ``dm``, ``bc``, ``rl``), in waves each after the one
    before: what the stage needs (:func:`preparation`; for ``adaptive`` the general encoder; for RL the BC agents it
    starts from), then one run per seed (poly-encoder stages: the first seed only; the agents ``setup.jobs`` at a
    time, as an experiment's children). ``compare`` (the RL stage): then
    the BC agents of the same configuration and seeds, each where missing or trained unlike its RL agent
    (:func:`_prep_step`, as an RL agent's BC start), and all of them evaluated side by side with the baselines
    (``OUTPUTS/eval/``). A run of the stage that finished as it would be trained now is not trained again (unless
    ``force``) and one that was stopped goes on from its last checkpoint (:func:`stage_step`). What :func:`run_stage`
    runs and ``lq stage --print`` prints."""
    if compare and stage != "rl":
        raise ValueError(f"compare: the RL stage's agents are compared with BC's and the baselines, not {stage}'s")
    setup.configs(stage, encoder)  # an unknown stage or encoder named now, with the choices
    config = Config(stage, encoder, ability, switch)
    runs = stage_runs(config, setup)
    labels = {run: label for label, run in runs}
    waves = _preparation(list(labels), setup)
    waves += waves_of([list(labels)], lambda run: stage_step(labels[run], run, force), setup.jobs)
    if not compare:
        return waves
    seeds = setup.seeds
    first = run_of(config, setup, seeds[0])
    rl_dir = first.stage_dir()  # the resolver's, or one the stage's ARGS name (--out_dir)
    rl = [dataclasses.replace(first, seed=s).checkpoint for s in seeds]
    cloned = [dataclasses.replace(first, stage="bc", seed=s, folder="", extra=()) for s in seeds]
    prepared = {tuple(step.args) for steps, _ in waves for step in steps}  # RL's BC starts: the same runs
    starts = [step for bc in cloned if tuple((step := _prep_step(bc, setup, stage_label(bc))).args) not in prepared]
    bc = [run.checkpoint for run in cloned]
    # beside the RL agents' folder; named after it where ARGS chose another than the resolver's
    named = "" if Path(rl_dir) == Path(setup.stage_dir("rl")) else f"{Path(rl_dir).name}-"
    out = f"{Path(rl_dir).parent}/eval/{named}{encoder}-{ability}-{switch}"
    # under the setup's protocol: the one its agents trained and were evaluated under, whose episodes are read back
    evaluate = ["eval", *rl, *bc, "--baselines", str(len(seeds)), "--protocol", setup.protocol, "--out", out]
    evaluation = Step(f"eval {encoder}-{ability}-{switch}", evaluate)
    return [*waves, *([(starts, setup.jobs)] if starts else []), ([evaluation], 1)]


def stage_step(label: str, run: Run, force: bool = False) -> Step:
    """The step of one run of a stage target (``make pretrain``, ``make bc``, ``make rl``): done once the run finished
    as it would be trained now (:func:`finished_as`: a rerun after a sibling failed, or the same target run twice,
    leaves it be); a run that was stopped (Ctrl-C, killed, its sibling's failure) goes on from its last checkpoint
    (:func:`resumable`: RL to the uninterrupted run's figures; BC and pretraining from their last epoch, whose data
    order then differs from an uninterrupted run's). ``force``: trained again from its start whatever is there; where
    a finished run is there, beside it (in its folder's ``.retrain/``), replacing it only once it finishes, so that a
    forced run stopped midway leaves the finished one the run every later command finds."""
    if force:
        if run.kind.trains and finished(run.checkpoint):
            return Step(label, run.kind.retrain_args(run), check=lambda: None, run=run, retrain=True)
        return Step(label, run.args, check=lambda: None, run=run)
    last = resumable(run)
    # read once (its config file read and compared): run_stage names it, then its wave skips it
    check = functools.cache(lambda: finished_as(run))
    return Step(label, [*run.args, "--ckpt_path", last] if last else run.args, check=check, run=run)


def run_stage(stage: str, setup: Setup, encoder: str, *choices: str, log: Callable[[str], None] = _print,
              **options: bool) -> None:  # fmt: skip
    """Run the jobs of :func:`stage_waves` (``choices``: the ability and switch; ``options``: ``compare``, ``force``)
    that are not done, through the setup's launcher; a run of the stage itself that is done already is named with its
    checkpoint, one that goes on from its last checkpoint too."""
    waves = stage_waves(stage, setup, encoder, *choices, **options)
    own = stage_runs(Config(stage, encoder, *choices), setup)
    for step in (s for steps, _ in waves for s in steps if s.label in dict(own)):
        if done := step.done_as:
            log(f"[{step.label}] done: {done} (its run finished with these settings; FORCE=1, or --force, trains it "
                "again)")  # fmt: skip
        elif "--ckpt_path" in step.args:
            log(f"[{step.label}] goes on from {step.args[step.args.index('--ckpt_path') + 1]}")
        elif step.run is not None and not step.retrain and (other := other_profiles(step.run, setup)):
            log(f"[{step.label}] trains the {setup.profile} profile's, in {step.run.dir}; the {other[0][0]} profile's "
                f"finished one is {other[0][1]} (PROFILE={other[0][0]} uses it)")
    _run_waves(waves, setup)
    for line in stage_outcome(stage, own, setup, encoder, waves[-1][0][0] if options.get("compare") else None):
        log(line)


def other_profiles(run: Run, setup: Setup) -> list[tuple[str, str]]:
    """The finished runs of ``run``'s configuration under the other profiles (``make quickstart``'s under
    ``outputs/quick/``, which ``make pretrain`` does not use), as (profile, checkpoint)."""
    found = []
    for profile in (p for p in profiles() if p != setup.profile):
        other = dataclasses.replace(run, profile=profile, folder="", extra=())
        if other.checkpoint != run.checkpoint and finished(other.checkpoint):
            found.append((profile, other.checkpoint))
    return found


def stage_outcome(stage: str, runs: Sequence[tuple[str, Run]], setup: Setup, encoder: str,
                  evaluation: Step | None = None) -> list[str]:  # fmt: skip
    """What a stage target made, once it ran: each run's checkpoint and MLflow run (its done marker names it), the
    table ``make rl`` wrote, and the next step."""
    from lq.data.io import read_json
    from lq.data.outputs import DONE

    lines = []
    for label, run in runs:
        marker = Path(run.checkpoint).parent / DONE
        run_id = read_json(marker).get("run_id") if marker.is_file() else None
        where = f"MLflow run {run_id} in experiment lq-{stage}, {setup.tracking_uri}" if run_id else "no MLflow run"
        lines.append(f"[{label}] {run.checkpoint} ({where})")
    if evaluation is not None:
        out = evaluation.args[evaluation.args.index("--out") + 1]
        lines.append(f"[{stage}] the agents beside BC and the baselines: {out}.md and {out}.csv")
    if stage in ("pretrain", "bc", "partner", "dm"):
        then = f"ENCODER={encoder} " if stage in ("pretrain", "bc") else ""
        lines.append(f"next: make rl {then}(BC agents where missing, then RL from them, compared with the baselines)")
    lines.append("browse the runs: make ui (http://127.0.0.1:5000)")
    return lines


def shown_waves(waves: Sequence[Wave]) -> list[str]:
    """Waves as numbered steps of ``lq`` command lines (a step's lines are independent of each other; each step after
    the one before); a line whose output exists says so in a comment."""
    lines = []
    for i, (steps, _) in enumerate(waves, 1):
        names = dict.fromkeys(s.config.key if s.config else s.label for s in steps)
        lines.append(f"# step {i} of {len(waves)}: {', '.join(names)}")
        lines += [shown(s.args) + (f"  # done: {done} exists" if (done := s.done_as) else "") for s in steps]
    return lines


def _trained_alike(bc: Run, rl: Run) -> bool:
    """Whether the BC run ``bc`` finished with the sizes, data, encoder, protocol and environment the RL run ``rl``
    would start from (its resolved config file, ``RUN_DIR/config.yaml``, against ``rl``'s:
    :func:`lq.stages.start_differences`): else ``compare`` and the RL agents' BC starts train it again (a BC agent of
    another profile or context length would not compare, nor be a start)."""
    saved = read_config(bc.outputs["config"]) if finished(bc.checkpoint) else None
    return saved is not None and not start_differences(saved, rl.config)


def stage_runs(config: Config, setup: Setup) -> list[tuple[str, Run]]:
    """The runs of one stage, labelled by what tells them apart (the label names each one's log, so that no run's
    overwrites another's): one per seed for the agents, the first seed's alone for a poly-encoder stage."""
    kind = kind_of(config.stage)
    seeds = setup.seeds if kind.agent else setup.seeds[:1]
    runs = [run_of(config, setup, seed) for seed in seeds]
    return [(stage_label(run), run) for run in runs]


def stage_label(run: Run) -> str:
    """A stage target's run by its folder's name (``rl-paper``: the paper objective's RL), encoder and, for an agent,
    its ability, switch and seed."""
    name = run.kind.folder_name(run)
    return f"{name} {run.encoder}-{run.ability}-{run.switch} s{run.seed}" if run.kind.agent else f"{name} {run.encoder}"


def _rl(config: Config) -> Config:
    """The RL configuration of ``config``'s encoder (scratch for the baselines), ability, switch and variant."""
    variant = config.variant if config.stage == "rl" else ""
    return Config("rl", config.encoder or "scratch", config.ability, config.switch, variant)


def rl_run(config: Config, setup: Setup, seed: int) -> Run:
    """The RL run of ``config``'s encoder, ability and switch with ``seed`` under the setup (:func:`run_of`)."""
    return run_of(_rl(config), setup, seed)


def child_waves(experiment: Experiment, setup: Setup, pid: str, done: set[tuple[str, str]] = frozenset()) -> list[Wave]:
    """The parent's children that have not finished, in the layers of what they need of each other (:func:`layered`: an
    RL agent after the BC agent it starts from, the adaptive encoder after the general one of its seed's folder) and
    waves of them (:func:`waves_of`: pretraining one at a time on every core, the agents and the baselines
    ``setup.jobs`` at a time). Within a wave, every configuration's first seed before any configuration's second (a
    table cut short has every row), and within a seed the longest first, so that the slots end together (a pretrained
    encoder's agents before scratch's, the baselines last). Each step names the children it needs (:attr:`Step.after`;
    and a BC start it needs that is no child: :func:`resumed_waves`) and, for a child others need, when its weights are
    final (:attr:`Step.released`): the local launcher starts an RL child as soon as its BC agent has trained, while that
    agent's evaluation goes on beside it."""
    children: dict[Run, tuple[Config, int]] = {}
    for seed in setup.seeds:  # seed-major: a table cut short (a session's end, a killed job) has every row
        for config in experiment.configs:
            if (config.key, str(seed)) in done:
                continue
            run = child_run(config, setup, seed, experiment.name)
            run.kind.check(run)  # one that could not start refused now (an llm child's model), before any trains
            children[run] = (config, seed)

    def step(run: Run) -> Step:
        config, seed = children[run]
        tags = {"mlflow.parentRunId": pid, "lq.config": config.key, "lq.seed": str(seed)}
        tags.update({"lq.variant": config.variant} if config.variant else {})
        child = run.kind.child(run, experiment.name, pid, tags, setup.tracking_uri)
        args = run.kind.child_args(run, experiment.name, pid, tags, setup.tracking_uri)
        # an RL child killed mid-training goes on from its last epoch, to the same figures; BC and pretraining children
        # train again from their start (from a last epoch they would shuffle their data otherwise: a table's figures
        # would depend on where a run was stopped)
        if run.stage == "rl" and (last := resumable(run)):
            args += ["--ckpt_path", last]
        if run.kind.agent and run.config.get("zero_shot") == "reported" and not tested_alone(experiment, config):
            args += ["--zero_shot", "all"]  # a profile's (quick's) test-only evaluation, where its table reads more
        # after the children it needs; a child others need frees its slot once its weights are final (its evaluation
        # goes on beside them); one nothing waits for keeps its slot to its end (its evaluation is no less urgent)
        # (and the BC start it needs where that is no child: a resumed parent's, made again; :func:`resumed_waves`)
        after = [label(n) if n in children else n.label for n in run.needs() if n in children or n.kind.agent]
        first = dataclasses.replace(run, seed=setup.seeds[0])
        if run.kind.after_first_seed and first != run and first in children:  # it reads what the first one keeps
            after.append(label(first))
        released = functools.partial(trained, run.checkpoint) if run in needed and run.kind.trains else None
        return Step(label(run), args, config=config, seed=seed, run=child, after=after, released=released)

    def label(run: Run) -> str:
        config, seed = children[run]
        return f"{config.key} s{seed}"

    needed = {n for run in children for n in run.needs() if n in children}

    layers = layered(list(children), lambda run: [n for n in run.needs() if n in children])
    waves = waves_of(layers, step, setup.jobs)
    seeds = {s: i for i, s in enumerate(setup.seeds)}
    for steps, _ in waves:
        steps.sort(key=lambda s: (seeds[s.seed], not kind_of(s.config.stage).trains, s.config.encoder == "scratch"))
    return waves


def tested_alone(experiment: Experiment, config: Config) -> bool:
    """Whether every cell of ``config`` in ``experiment``'s tables reads a ``test/`` figure (the test quests under the
    protocol's decoding), all that ``--zero_shot reported`` evaluates; not where one reads the validation quests, the
    other decoding or the worlds never seen."""
    metrics = [c.metric for t in experiment.tables for _, cells in t.rows for c in cells.values() if c.config == config]
    return bool(metrics) and all(m.startswith("test/") for m in metrics)


def resumable(run: Run) -> str | None:
    """The last checkpoint of a trained run that was stopped mid-training (killed, interrupted: no done marker), where
    it is this run's (its folder's resolved config is the one ``run`` resolves to: :func:`lq.stages.same_run`; a run
    launched anew removes an earlier run's last.ckpt first: :meth:`Step.write`, ``StageCLI.before_fit``) and, for RL,
    holds its rollout (a run on several devices keeps none): resumed from it (``--ckpt_path``), an RL run goes on
    as the uninterrupted one would have (``tests/lit/test_rl.py``); BC and the poly-encoders go on from their last
    finished epoch. Else None."""
    last = Path(run.outputs["last"]) if run.kind.trains else None
    if last is None or run.done or not last.is_file():
        return None
    saved = read_config(run.outputs["config"])
    if saved is None or not same_run(saved, run.config):
        return None
    if run.stage == "rl":  # what the checkpoint holds, not whose it is: read only here
        import torch

        if torch.load(last, map_location="cpu", weights_only=False).get("lq_rollout") is None:
            return None
    return str(last)


def finished_as(run: Run) -> str | None:
    """The checkpoint of a trained run that finished (its done marker) with the very configuration the run would be
    trained with now (its folder's resolved config: :func:`lq.stages.same_run`), else None: a stage target run again,
    or after a sibling failed, keeps it."""
    done = run.done_as
    if done is None:
        return None
    saved = read_config(run.outputs["config"])
    return done if saved is not None and same_run(saved, run.config) else None


def plan(
    experiment: Experiment, setup: Setup, resume: bool = False, parent: str | None = None, dry_run: bool = False
) -> list[str]:
    """Every job of ``experiment`` as an ``lq`` command line, for any scheduler: the preparation, the children (under
    a parent run opened now, or the resumed one) and the tables that finish the parent, in numbered steps, each
    after the one before; the lines of one step are independent of each other. A preparation line whose output
    exists says so in a comment. ``parent``: with ``resume``, the unfinished parent run to resume (default: the
    newest). ``dry_run``: open and reopen no run (the store is only read), a new parent shown as ``PARENT``, so
    that looking at a plan beside a running campaign leaves no parent for ``--resume`` to pick."""
    client = _client(setup.tracking_uri)
    if dry_run:
        pid, done = peek_parent(client, experiment, setup, resume, parent)
        pid = pid or "PARENT"
    else:
        pid, done = open_parent(client, experiment, setup, resume, lambda _: None, parent)
    lines = [
        f"# {experiment.title}: profile {setup.profile}, protocol {setup.protocol}, objective {setup.objective}, seeds "
        f"{' '.join(map(str, setup.seeds))}; parent run {pid} in MLflow experiment lq-{experiment.name} "
        f"({setup.tracking_uri})" + ("; a dry run: no parent opened" if dry_run else "")
    ]
    waves = [*preparation(experiment.configs, setup, experiment.name, done), *child_waves(experiment, setup, pid, done)]
    if not dry_run:  # what each line reads, for the scheduler that runs them
        for step in (s for steps, _ in waves for s in steps if not s.done):
            step.write()
    finish = ["experiment", "tables", experiment.name, "--parent", pid, "--tracking-uri", setup.tracking_uri]
    finish += ["--out", f"{setup.outputs}/tables"]
    waves.append(([Step("tables", finish)], 1))
    return lines + shown_waves(waves)


def run_experiment(
    experiment: Experiment,
    setup: Setup,
    log: Callable[[str], None] = _print,
    resume: bool = False,
    parent: str | None = None,
) -> tuple[str, dict[str, tuple[str, str]]]:
    """Train every configuration of ``experiment`` per seed as children of a parent run, through the setup's
    launcher, then build its tables; returns the parent's run id and the tables (Markdown, CSV). ``resume``:
    continue the newest unfinished parent of this experiment and profile (an interrupted run, whichever launcher
    ran it), training only the children that did not finish; ``parent``: that unfinished parent instead."""
    started = time.monotonic()
    client = _client(setup.tracking_uri)
    parents_to_resume(client, experiment, setup, resume, parent)  # a wrong --parent before the long preparation
    prepare(experiment.configs, setup, experiment.name)
    prepared = time.monotonic()
    pid, done = open_parent(client, experiment, setup, resume, log, parent)
    try:
        waves = child_waves(experiment, setup, pid, done)
        log(f"[{experiment.name}] {sum(len(steps) for steps, _ in waves)} children")
        if done:  # finished children's outputs that the others need and this machine lacks (a store imported here)
            waves = resumed_waves(preparation(experiment.configs, setup, experiment.name, done), waves, setup)
        _run_waves(waves, setup)
        ran = time.monotonic()
        tables = build_tables(experiment, pid, setup.tracking_uri, log)
        log(
            f"[{experiment.name}] wall time: data, environment models and encoders {prepared - started:.0f} s, "
            f"child runs {ran - prepared:.0f} s, tables {time.monotonic() - ran:.0f} s "
            f"(total {time.monotonic() - started:.0f} s)"
        )
    except BaseException as error:
        # the children the launcher saw end badly (a kill -9 leaves its run RUNNING), then the parent
        end_dead_runs(
            client, children(client, pid, finished=False), gone=isinstance(error, (JobFailed, KeyboardInterrupt))
        )
        end_run(client, pid, "KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED")
        raise
    end_run(client, pid, "FINISHED")
    return pid, tables


def stage_graph(runs: Sequence[Run], title: str = "") -> list[str]:
    """``runs`` and every run they need (:meth:`Run.needs`, the stage kinds' answer), as a Mermaid flowchart: one node
    per run, in the layers of :func:`layered` (each after the one before), an edge from each need to the run that needs
    it; what ``lq experiment graph`` prints (docs: paste it in a ```mermaid block)."""
    layers = layered(runs)
    ids = {run: f"n{i}" for i, run in enumerate(run for layer in layers for run in layer)}
    lines = ["flowchart LR"] + ([f"  %% {title}"] if title else [])
    for run, node in ids.items():
        lines.append(f'  {node}["{run.graph_label}"]')
    for run, node in ids.items():
        lines += [f"  {ids[need]} --> {node}" for need in dict.fromkeys(run.needs()) if need in ids]
    return lines


def experiment_graph(experiment: Experiment, setup: Setup) -> list[str]:
    """The stage graph of an experiment's children (each configuration and seed of the setup) and of what they need
    (:func:`stage_graph`)."""
    runs = [child_run(c, setup, seed, experiment.name) for c in experiment.configs for seed in setup.seeds]
    return stage_graph(runs, f"{experiment.title}: profile {setup.profile}, seeds {' '.join(map(str, setup.seeds))}")
