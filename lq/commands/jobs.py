"""The jobs of ``lq experiment`` the scheduler (:mod:`lq.experiments`) launches in its own process: the preparation
(``calibrate``, ``spaces``: its kind's ``compute``, from its own inputs), the baselines' children
(:func:`run_baselines`: an RL run's environment, spaces and switch, no network) and the best agent logged on its parent
(:func:`log_best_model`). Here, above the scheduler, so that it plans and launches them without importing the trainer
(lq.lit) or the evaluation (lq.eval); the trainer is imported only by the jobs that use it, so that a preparation job
starts without Lightning (about 3 s of each such process)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from lq.data.dataset import dataset_id
from lq.eval import agent_baselines
from lq.experiments.reporting import best_agent, children, experiment_id
from lq.experiments.setup import Setup
from lq.experiments.specs import Config, Experiment
from lq.stages import Run
from lq.tracking import check_finite, commit_tag, end_run, log_dataset, model_tags, run_tags, stored

if TYPE_CHECKING:
    from lq.envs.spec import EnvSpec


def baselines_module(run: Run):
    """The RL agent module of a ``baselines`` run (:attr:`Run.module`), built from its one configuration
    (:func:`lq.lit.offline.build_module`) and never set up: its environment, spaces and switch are built where played
    (:meth:`lq.lit.agent.AgentModule.build_spaces`), its networks never."""
    from lq.lit.offline import build_module  # the trainer (Lightning) where a job uses it: a preparation job never

    return build_module(run.module)


@contextmanager
def stage_threads(run: Run) -> Iterator[None]:
    """Within: torch's CPU threads those of a preparation job's RL run (:attr:`Run.threads`, ``--threads``), as for
    the agents that read what is computed here; the caller's after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(run.threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run_preparation(run: Run) -> None:
    """Compute a preparation job's file at the agents' threads (its kind's ``compute``, from its own inputs:
    ``calibrate``, the environment's partner calibrated on the demonstrations and kept beside its checkpoint, for every
    agent that shares its partner, DM and data; ``spaces``, a pretrained encoder's vectors of the agents' action and
    utterance spaces, stored beside its checkpoint)."""
    if not hasattr(run.kind, "compute"):
        raise ValueError(f"{run!r}: not a calibration or the spaces' vectors")
    with stage_threads(run):
        run.kind.compute(run)


def run_baselines(client, experiment: str, run: Run, pid: str, validation: bool = False) -> str:
    """A child of parent run ``pid`` with the baselines and the ceiling of the ``baselines`` run ``run`` (an ability,
    a switch and a seed): its RL agent module's environment, switch, spaces and evaluation (:func:`baselines_module`:
    no network), each rule in place of the agent (``baselines/<rule>/<goal>_rate``; with ``validation``, on the
    validation quests too: ``baselines_val/...``; where its module has worlds to play, their test quests too:
    ``baselines_worlds/...``); returns its run id."""

    def play(module, child: str, log_figures) -> None:
        played = [(module, "valid", "baselines_val"), (module, "test", "baselines")][0 if validation else 1 :]
        if (worlds := module.worlds_agent(networks=False)) is not None:  # model.worlds: worlds its agents never saw
            played.append((worlds, "test", "baselines_worlds"))
        for agent, split, prefix in played:
            with stage_threads(run):
                results = agent_baselines(agent, split, [run.seed])
            for key, [result] in results.items():
                log_figures(result.metrics(f"{prefix}/{key}/"))

    return _figures_child(client, experiment, run, pid, Config("baselines", "", run.ability, run.switch), play)


def run_language_model(client, experiment: str, run: Run, pid: str, batch_size: int = 32) -> str:
    """A child of parent run ``pid`` with the language model ``run.encoder`` (:func:`lq.llm.model.model_file`) played
    zero-shot through the environment, spaces, switch and evaluation of the ``llm`` run's RL module (no network of its
    own), as an agent run logs its evaluation (:func:`lq.eval.llm.language_model_zero_shot`: ``val/``, ``test/`` and
    the other decoding's ``test_greedy/`` or ``test_sampled/``), each score's validation figures
    (``llm_val/<score>/...``) and the score chosen there (tag ``lq.llm_score``); its greedy plays are kept under
    ``OUTPUTS/eval/llm-plays/`` (:class:`lq.eval.llm.GreedyPlays`: later seeds read them). Returns its run id."""
    from lq.eval.llm import GreedyPlays, language_model_zero_shot
    from lq.llm.model import load_language_model
    from lq.llm.policy import SCORES, LanguageModelPolicy

    def play(module, child: str, log_figures) -> None:
        lm = load_language_model(run.encoder)
        policies = {s: LanguageModelPolicy(lm, s, batch_size, run.threads) for s in SCORES}
        plays = GreedyPlays(Path(run.root) / "eval" / "llm-plays", greedy_key(run, module.env_spec, lm.source))
        with stage_threads(run):
            zero_shot = language_model_zero_shot(module, policies, run.seed, plays, log=lambda s: print(f"[llm] {s}"))
        client.set_tag(child, "lq.llm_score", zero_shot.chosen)
        for score, result in zero_shot.validation.items():
            log_figures(result.metrics(f"llm_val/{score}/"))
        for prefix, result in zero_shot.played.items():
            log_figures(result.metrics(f"{prefix}/"))

    return _figures_child(client, experiment, run, pid, Config("llm", run.encoder, run.ability, run.switch), play)


def greedy_key(run: Run, env: EnvSpec, model: str) -> dict[str, object]:
    """What a greedy play of a language model reads, for :class:`lq.eval.llm.GreedyPlays`: the model's file (its
    path, size and modification time), the module's configuration less what tells its seeds apart (the seed, the
    folders of its RL run and BC start, the trainer), the environment models' weights, the data's fingerprint, the
    threads and lq's commit."""
    from lq.envs.models import checkpoint_digest

    files = [Path(model)] if Path(model).is_file() else sorted(p for p in Path(model).iterdir() if p.is_file())
    stamps = [(str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
    config = {k: v for k, v in run.config.items() if k not in ("seed_everything", "trainer", "checkpoint")}
    config["model"] = {k: v for k, v in config["model"].items() if k not in ("seed", "bc_checkpoint")}  # the seed's
    digests = {name: checkpoint_digest(path) for name, path in (("partner", env.partner_checkpoint),
                                                                ("dm", env.dm_checkpoint))}  # fmt: skip
    return {"model": stamps, "config": config, "models": digests, "dataset": dataset_id(env.data_dir),
            "threads": run.threads, **commit_tag()}  # fmt: skip


def _figures_child(client, experiment: str, run: Run, pid: str, config: Config, play) -> str:
    """A finished child of parent ``pid`` for ``config`` with ``run``'s seed and identity (:func:`baselines_identity`),
    whose figures ``play(module, child_id, log_figures)`` logs (NaN figures left out, an infinite one refused), then
    its CPU time; killed or failed where ``play`` raises. Returns its run id."""
    seed, started = run.seed, time.process_time()
    module = baselines_module(run)
    tags = {"mlflow.parentRunId": pid, "lq.config": config.key, "lq.seed": str(seed), "lq.stage": config.stage}
    exp_id = experiment_id(client, experiment)
    identity, params = baselines_identity(run, module.env_spec)
    child = client.create_run(exp_id, run_name=f"{config.key}-s{seed}", tags={**tags, **identity, **run_tags()})
    child_id = child.info.run_id

    try:
        log_identity(client, child_id, params, module.data_dir)
        play(module, child_id, lambda metrics: log_figures(client, child_id, metrics))
        client.log_metric(child_id, "time/cpu_s", stored(time.process_time() - started))  # as a stage run (StageTimer)
    except BaseException as error:
        end_run(client, child_id, "KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED")
        raise
    end_run(client, child_id, "FINISHED")
    return child_id


def log_figures(client, run_id: str, metrics: Mapping[str, float], step: int = 0) -> None:
    """Evaluation figures on the run ``run_id`` at ``step``, as lq stores them (:func:`lq.tracking.stored`); a NaN
    figure is left out (the ceiling has no speech columns), an infinite one refused."""
    figures = {k: v for k, v in metrics.items() if v == v}
    check_finite(figures, step, "evaluation figure")
    for name, value in figures.items():
        client.log_metric(run_id, name, stored(value), step=step)


def baselines_identity(run: Run, env: EnvSpec) -> tuple[dict[str, str], dict[str, object]]:
    """The tags and params of a baselines or language-model child, as an agent's stage run records its own
    (:class:`lq.lit.cli.AgentCLI`), so that every child of a table says what it ran on: its stage, ability, switch,
    seed, profile, protocol, objective and threads (and the language model, ``llm``); its data (``lq.data``, as the
    setup names it) and that data's fingerprint (``lq.dataset``); the partner and DM of ``env`` (``lq.partner``,
    ``lq.dm``); the commit."""
    params = {"stage": run.stage, "ability": run.ability, "switch": run.switch, "seed": run.seed}
    params |= {"llm": run.encoder} if run.stage == "llm" else {}
    params |= {"profile": run.profile, "protocol": run.protocol, "objective": run.objective, "threads": run.threads}
    tags = {f"lq.{key}": str(params[key]) for key in ("ability", "switch", "profile", "protocol", "objective")}
    tags |= {"lq.data": str(run.data), "lq.dataset": dataset_id(env.data_dir), **model_tags(env), **commit_tag()}
    return tags, {**params, "env/data_dir": env.data_dir}


def log_identity(client, run_id: str, params: Mapping[str, object], data_dir: str) -> None:
    """``params`` on the run, and its dataset as its input (:func:`lq.lit.cli.log_dataset`: the fingerprint as the
    digest), as a stage run logs them."""
    from mlflow.entities import Param

    client.log_batch(run_id, params=[Param(key, str(value)) for key, value in params.items()])
    log_dataset(client, run_id, data_dir)


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
