"""What the tests of the experiment scheduler share (tests/experiments, tests/commands, tests/stages,
tests/lit/test_provenance.py): the resolved config a stage's command line reads, parents and children faked in a
store, a launcher that records the jobs it is given, and the setup of a table whose children are tiny."""

import shutil
from pathlib import Path

import yaml
from mlflow.tracking import MlflowClient

from lq import conf
from lq import experiments as X
from lq.data.outputs import mark_finished
from tests.lit.test_agent_cli import TINY_AGENT

AGENT = "/scratch/act_speech-hardcoded/seed-0"  # a scratch agent's folder under its stage's


def resolved(args) -> dict:
    """The resolved config a stage's command line reads (``lq STAGE fit --config RUN_DIR/config.yaml``, written before
    it is launched: :meth:`lq.stages.Stage.write`)."""
    return yaml.safe_load(Path(args[args.index("--config") + 1]).read_text(encoding="utf-8"))


def C(*parts: str) -> str:
    """A packaged config's path, as the stage command lines name it."""
    return str(conf.ROOT.joinpath(*parts))


def _fake_children(client: MlflowClient, experiment: X.Experiment, values: dict[str, list[float]]) -> str:
    """A parent run whose children hold ``values[metric]`` (one child per seed) for every configuration."""
    exp_id = X.experiment_id(client, experiment.name)
    parent = client.create_run(exp_id, tags={"lq.experiment": experiment.name, "lq.role": "parent"}).info.run_id
    client.log_param(parent, "encoders", " ".join(experiment.encoders))
    _log_children(client, parent, experiment, values)
    client.set_terminated(parent, "FINISHED")
    return parent


def _log_children(client: MlflowClient, parent: str, experiment: X.Experiment, values: dict[str, list[float]]) -> None:
    """Finished children of ``parent``, two seeds of every configuration, each holding ``values[metric][seed]``."""
    exp_id = client.get_run(parent).info.experiment_id
    for config in experiment.configs:
        for seed in range(2):
            tags = {
                "mlflow.parentRunId": parent,
                "lq.config": config.key,
                "lq.seed": str(seed),
                "lq.stage": config.stage,
            }
            child = client.create_run(exp_id, tags=tags).info.run_id
            client.log_param(child, "encoder", config.encoder)
            for metric, by_seed in values.items():
                client.log_metric(child, metric, by_seed[seed], step=0)
            for step in range(3):  # a learning curve
                client.log_metric(child, "rl/act_goal_rate", 0.1 * step + seed, step=step)
            client.set_terminated(child, "FINISHED")


class Recorder:
    """A launcher that runs nothing and keeps the jobs it was given, wave by wave; a BC run leaves a finished checkpoint
    where the real one would (beside the resolved config it was launched with), so that what comes after it finds
    it."""

    def __init__(self):
        self.waves, self.parallel = [], []

    def run(self, jobs, parallel):
        if jobs:
            self.waves.append([args for _, args in jobs])
            self.parallel.append(parallel)
        for _, args in jobs:
            if args[:2] == ["bc", "fit"]:
                checkpoint = Path(resolved(args)["checkpoint"]["dirpath"]) / "best.ckpt"
                checkpoint.touch()
                mark_finished(checkpoint)


# a table's children trained for a few steps
TINY_TABLE = {
    "*": TINY_AGENT,
    "rl": [
        "--model.num_envs=4",
        "--model.rollout_steps=2",
        "--model.max_steps=4",
        "--model.updates_per_epoch=2",
        "--trainer.log_every_n_steps=1",
    ],
    "bc": ["--model.batch_size=8", "--trainer.limit_train_batches=2"],
}


def _tiny_setup(setup_dir, folder: Path, calibrated: X.Setup | None = None, **kwargs) -> X.Setup:
    """A setup of its own store and outputs (the setup's partner and DM copied there), the table's children tiny;
    ``calibrated``: a setup whose partner's calibration and candidates are copied beside them (not fitted again)."""
    for name in ("partner", "dm"):
        (folder / "outputs" / name / "small").mkdir(parents=True)
        shutil.copy(setup_dir / f"{name}.ckpt", folder / "outputs" / name / "small" / "best.ckpt")
        mark_finished(folder / "outputs" / name / "small" / "best.ckpt")
        if calibrated is not None:
            shutil.copytree(
                f"{calibrated.outputs}/{name}/small/candidates", folder / "outputs" / name / "small" / "candidates"
            )
    return X.Setup(
        profile="tiny",
        data_dir=str(setup_dir / "data"),
        tracking_uri=f"sqlite:///{folder / 'mlflow.db'}",
        outputs=str(folder / "outputs"),
        **{"extra_args": TINY_TABLE, **kwargs},
    )
