"""One run, one resolved config (:meth:`lq.stages.Stage.resolve`): ``lq stage`` and ``lq experiment`` write it to the
run's folder before the run starts, the child reads that file alone, trains what the same settings given as a command
line train, and logs the file's very bytes as its MLflow artifact."""

import dataclasses
import inspect
from pathlib import Path

import pytest
import torch
import yaml
from mlflow.tracking import MlflowClient

from lq import stages
from lq.cli import main
from lq.lit.bc import BCModule
from lq.lit.entry import STAGE_CLIS, stage_classes
from lq.lit.pretrain import PretrainModule
from lq.stages import CONFIG
from tests.lit.test_agent_cli import TINY_AGENT
from tests.stages.test_stages import trained_env_models

ROOT = Path(__file__).resolve().parents[2]


def test_a_resolved_config_alone_trains_the_run_its_command_line_would_and_is_its_mlflow_artifact(
    setup_dir, tmp_path, monkeypatch
):
    monkeypatch.chdir(ROOT)
    outputs = tmp_path / "outputs"
    trained_env_models(setup_dir, outputs)  # the partner, the DM and a pretrained general_light encoder
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    where = stages.Resolver(data_dir=str(setup_dir / "data"), outputs=str(outputs))
    extra = [*TINY_AGENT, "--model.batch_size=8", "--trainer.limit_train_batches=2", "--eval_seeds=0"]
    extra += ["--trainer.logger.init_args.tracking_uri", uri]
    run = dataclasses.replace(where.run("bc", "general_light", seed=1), extra=tuple(extra))
    config = run.config
    # every path in the file: its folder, its pretrained encoder, the environment's models; its seed
    assert config["checkpoint"] == {"dirpath": run.dir, "filename": "best"} and config["seed_everything"] == 1
    assert config["model"]["pretrained_checkpoint"] == f"{outputs}/pretrain/general_light/best.ckpt"
    assert config["model"]["env"]["partner_checkpoint"] == f"{outputs}/partner/small/best.ckpt"
    assert config["sources"] == ["agent.yaml", "bc.yaml", "encoder/general_light.yaml", "profile/tiny/bc.yaml",
                                 "protocol/paper.yaml"]  # fmt: skip

    run.kind.write(run)
    written = Path(run.outputs["config"]).read_bytes()
    assert yaml.safe_load(written) == config
    assert run.args == ["bc", "fit", "--config", f"{run.dir}/{CONFIG}"]
    assert main(run.args) == 0
    assert Path(run.outputs["config"]).read_bytes() == written  # written once: the run read it, left it be

    # what the same settings give as a command line (the config files, then each path and setting as a flag)
    flags = [a for f in run.configs for a in ("--config", str(f))]
    flags += ["--seed_everything", "1", "--checkpoint.dirpath", run.dir, "--checkpoint.filename", "best"]
    flags += ["--model.env.data_dir", run.data, "--model.ability", "act_speech", "--model.switch", "hardcoded"]
    flags += ["--model.seed", "1", "--model.pretrained_checkpoint", f"{outputs}/pretrain/general_light/best.ckpt"]
    flags += ["--model.env.partner_checkpoint", f"{outputs}/partner/small/best.ckpt"]
    flags += ["--model.env.dm_checkpoint", f"{outputs}/dm/small/best.ckpt", *extra]
    by_flags = STAGE_CLIS["bc"](*stage_classes("bc"), args=flags, run=False)
    saved = torch.load(run.checkpoint, map_location="cpu", weights_only=False)["hyper_parameters"]
    assert dict(saved) == dict(by_flags.model.hparams)
    assert by_flags.config.checkpoint.dirpath == run.dir and by_flags.config.seed_everything == 1

    # the MLflow run: the file's bytes as its artifact, its tags from the files it was merged from
    client = MlflowClient(uri)
    [logged] = client.search_runs([client.get_experiment_by_name("lq-bc").experiment_id])
    artifact = Path(client.download_artifacts(logged.info.run_id, CONFIG, str(tmp_path / "artifact")))
    assert artifact.read_bytes() == written
    assert logged.data.tags["lq.configs"] == ",".join(config["sources"]) and logged.data.params["profile"] == "tiny"


def test_a_run_given_more_than_its_resolved_config_records_what_it_parsed(setup_dir, tmp_path, monkeypatch):
    """``lq bc fit --config RUN_DIR/config.yaml --model.lr 0.1``: the file no longer says what ran, so the run's
    folder and artifact get what it parsed (the file, the flag and the defaults)."""
    monkeypatch.chdir(ROOT)
    outputs = tmp_path / "outputs"
    trained_env_models(setup_dir, outputs)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    where = stages.Resolver(data_dir=str(setup_dir / "data"), outputs=str(outputs))
    extra = [*TINY_AGENT, "--model.batch_size=8", "--trainer.limit_train_batches=2", "--eval_seeds=0"]
    extra += ["--trainer.logger.init_args.tracking_uri", uri]
    run = dataclasses.replace(where.run("bc", "scratch"), extra=tuple(extra))
    run.kind.write(run)
    assert main([*run.args, "--model.lr", "0.125"]) == 0
    recorded = yaml.safe_load(Path(run.outputs["config"]).read_text(encoding="utf-8"))
    assert recorded["model"]["lr"] == 0.125 and "sources" in recorded and "trainer" in recorded
    client = MlflowClient(uri)
    [logged] = client.search_runs([client.get_experiment_by_name("lq-bc").experiment_id])
    artifact = Path(client.download_artifacts(logged.info.run_id, CONFIG, str(tmp_path / "artifact")))
    assert artifact.read_bytes() == Path(run.outputs["config"]).read_bytes()


def _read_settings(module_class) -> list[str]:
    """The settings ``module_class`` reads: the parameters of every lq ``__init__`` on its way to Lightning's."""
    names = []
    for cls in module_class.__mro__:
        if "__init__" in vars(cls) and cls.__module__.startswith("lq."):
            params = inspect.signature(cls.__init__).parameters.items()
            names += [n for n, p in params if n != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    return list(dict.fromkeys(names))


def test_a_resolved_config_names_every_setting_its_module_reads(tmp_path):
    """Every setting of a stage's module is in its run's resolved config, for every stage, profile and objective: no
    figure of a run rests on a default in lq's Python (each has its one home in conf/); and a module without its
    learning rate is refused."""
    checked = set()
    for profile in ("tiny", "quick", "paper"):
        for objective in ("lq", "paper"):
            where = stages.Resolver(profile=profile, objective=objective, outputs=str(tmp_path / "outputs"))
            for stage, encoder in (("pretrain", "general_light"), ("pretrain", "scratch"), ("partner", ""),
                                   ("dm", ""), ("bc", "scratch"), ("bc", "general_light"), ("rl", "scratch"),
                                   ("rl", "general_light")):  # fmt: skip
                run = where.run(stage, encoder or where.env_encoder)
                module_class = stage_classes(stage)[0]
                missing = [n for n in _read_settings(module_class) if n not in run.config["model"]]
                assert missing == [], f"{stage} {encoder} {profile} {objective}: conf/ does not name {missing}"
                checked.add(module_class.__name__)
    assert checked == {"PretrainModule", "BCModule", "RLModule"}
    for module_class in (PretrainModule, BCModule):
        with pytest.raises(TypeError, match="'lr'"):
            module_class(env=None) if module_class is BCModule else module_class()
