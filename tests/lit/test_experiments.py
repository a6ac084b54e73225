"""Experiment drivers: parent and child MLflow runs, tables from the store, learning curves."""

import dataclasses
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml
from mlflow.tracking import MlflowClient

from lq import conf
from lq import experiments as X
from lq.cli import main
from lq.commands.jobs import log_best_model
from lq.data.outputs import TRAINED, finished, mark_finished, mark_trained
from lq.experiments import launchers
from lq.experiments.launchers import Local, Submitit, Task
from lq.lit.offline import build_module
from lq.stages.calibrate import Calibrate
from lq.stages.data import light_db
from tests.lit.stopping import stop_once
from tests.lit.test_agent_cli import TINY_AGENT
from tests.lit.test_stages import trained_env_models
from tests.samples import parsed_cli, written

ROOT = Path(__file__).resolve().parents[2]


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


def test_tables_are_means_and_stds_over_the_children_and_rebuild_from_the_store(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = X.table1(["scratch", "general_light"])
    parent = _fake_children(
        client,
        experiment,
        {
            "test/act_goal_rate": [0.2, 0.4],
            "test/speech_goal_rate": [0.0, 0.1],
            "test/act_and_speech_goal_rate": [0.0, 0.0],
        },
    )
    tables = X.build_tables(experiment, parent, uri, log=lambda _: None)
    md, csv = tables["table1"]
    assert "| Scratch | 0.300 ± 0.100 | 0.050 ± 0.050 | 0.000 ± 0.000 | 0.300 ± 0.100 | 0.000 ± 0.000 | 2 |" in md
    assert "| General+Light |" in md
    assert csv.splitlines()[1] == '"Scratch",0.3000,0.1000,0.0500,0.0500,0.0000,0.0000,0.3000,0.1000,0.0000,0.0000,2'
    artifacts = {a.path for a in client.list_artifacts(parent, "tables")} | {
        a.path for a in client.list_artifacts(parent, "curves")
    }
    assert artifacts == {
        *(f"tables/{t}.{x}" for t in ("table1", "table1_baselines") for x in ("md", "csv")),
        "curves/rl.png",
    }
    # the cells on the parent as metrics, so that two parents compare in the UI
    metrics = client.get_run(parent).data.metrics
    assert metrics["table1/scratch/rl_act_goals/mean"] == pytest.approx(0.3)
    assert metrics["table1/scratch/rl_act_goals/std"] == pytest.approx(0.1)
    assert metrics["table1/general_light/rl_speech_goals/mean"] == pytest.approx(0.05)
    assert metrics["table1/general_light/bc_act_goals/mean"] == pytest.approx(0.3)
    assert len(metrics) == 2 * 2 * 5  # rows x columns x (mean, std); the baselines' children logged no baselines/*
    assert client.get_experiment(client.get_run(parent).info.experiment_id).tags["mlflow.experimentKind"] == (
        "custom_model_development"
    )

    # `lq experiment tables`: the latest parent, its experiment read back from the run, the same table
    assert X.latest_parent(uri, "table1") == parent
    assert X.latest_parent(uri, "table1", profile="quick") is None  # the parent has no profile tag
    again = X.build_tables(X.experiment_for(client, parent), parent, uri, log=lambda _: None)
    assert again == tables
    out = tmp_path / "tables"
    assert main(["experiment", "tables", "table1", "--tracking-uri", uri, "--out", str(out)]) == 0
    assert (out / "table1.md").read_text() == md and (out / "table1.csv").read_text() == csv


def test_tables_finish_a_planned_parent_but_leave_one_whose_children_still_run(tmp_path, capsys):
    """``lq experiment tables --parent P`` finishes a parent whose children ran elsewhere; while one of them is still
    running (its driver at work), it shows the tables and leaves the parent running, for the driver to resume."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    parent = client.create_run(X.experiment_id(client, "table1"), tags={"lq.experiment": "table1"}).info.run_id
    child = client.create_run(
        X.experiment_id(client, "table1"),
        tags={"mlflow.parentRunId": parent, "lq.config": "rl-scratch-act_speech-hardcoded", "lq.seed": "0"},
    ).info.run_id
    tables = ["experiment", "tables", "table1", "--parent", parent, "--tracking-uri", uri, "--out", str(tmp_path)]
    assert main(tables) == 0
    assert client.get_run(parent).info.status == "RUNNING"
    assert f"parent run {parent} left running (1 of its children still run)" in capsys.readouterr().out
    client.set_terminated(child, "FINISHED")
    assert main(tables) == 0
    assert client.get_run(parent).info.status == "FINISHED"


def test_the_best_agents_transcripts_go_on_the_parent(tmp_path):
    """The agent child with the best act & speech rate (ties broken by act goals) has its test transcripts copied."""
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp_id = X.experiment_id(client, "table1")
    parent = client.create_run(exp_id).info.run_id
    rates = {  # config, seed: act goals, speech goals, act & speech
        ("rl-scratch-act_speech-hardcoded", 0): (0.9, 0.0, 0.0),
        ("rl-general-act_speech-hardcoded", 1): (0.3, 0.5, 0.2),
        ("bc-general-act_speech-hardcoded", 0): (0.4, 0.5, 0.2),  # same act & speech, more act goals: the best
        ("pretrain-general", 0): (1.0, 1.0, 1.0),  # not an agent
    }
    for (config, seed), values in rates.items():
        child = client.create_run(
            exp_id, tags={"mlflow.parentRunId": parent, "lq.config": config, "lq.seed": str(seed)}
        )
        for (_, metric), value in zip(X.GOALS, values, strict=True):
            client.log_metric(child.info.run_id, metric, value)
        client.log_text(child.info.run_id, f"episodes of {config}", "transcripts/test_seed0.txt")
        client.set_terminated(child.info.run_id, "FINISHED")
    line = X.log_best_transcripts(client, X.children(client, parent), parent, str(tmp_path))
    assert line.startswith("Best agent: bc-general-act_speech-hardcoded seed 0 (run ")
    assert line.endswith("act goals 0.400, speech goals 0.500, act & speech 0.200")
    text = Path(client.download_artifacts(parent, "transcripts/best_agent.txt", str(tmp_path / "dl"))).read_text()
    assert text == f"{line}\n\nepisodes of bc-general-act_speech-hardcoded"
    assert X.log_best_transcripts(client, [], parent, str(tmp_path)) is None


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


def test_resume_trains_only_the_children_an_interrupted_parent_lacks(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    outputs = tmp_path / "outputs"
    for name in ("partner", "dm"):  # prepare() finds the environment's models and the partner's calibration
        (outputs / name / "small" / "candidates").mkdir(parents=True)
        (outputs / name / "small" / "best.ckpt").touch()
        mark_finished(outputs / name / "small" / "best.ckpt")
    calibration = outputs / "partner" / "small" / "candidates" / "partner-calibration-completions-0123.pt"
    calibration.touch()  # the file of its key (found by hashing the models' weights: these are empty files)
    monkeypatch.setattr(Calibrate, "file", lambda self, run: calibration)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "manifest.json").touch()
    launcher = Recorder()
    setup = X.Setup(
        seeds=(0, 1), data_dir=str(tmp_path / "data"), tracking_uri=uri, outputs=str(outputs), launcher=launcher
    )
    experiment = X.table1(["scratch"])

    # an interrupted run: the parent and one child still RUNNING (their process died), one child finished
    exp_id = X.experiment_id(client, "table1")
    tags = {"lq.experiment": "table1", **X.parents.parent_identity(setup), "lq.role": "parent"}
    parent = client.create_run(exp_id, tags=tags)
    pid = parent.info.run_id
    client.log_param(pid, "seeds", "0 1")
    client.log_param(pid, "encoders", "scratch")
    rl = "rl-scratch-act_speech-hardcoded"
    finished = client.create_run(exp_id, tags={"mlflow.parentRunId": pid, "lq.config": rl, "lq.seed": "0"})
    client.set_terminated(finished.info.run_id, "FINISHED")
    dead = client.create_run(exp_id, tags={"mlflow.parentRunId": pid, "lq.config": rl, "lq.seed": "1"})

    with pytest.raises(ValueError, match="ran seeds '0 1', not '0 1 2': resume with the same seeds"):
        X.run_experiment(experiment, X.Setup(**{**setup.__dict__, "seeds": (0, 1, 2)}), log=print, resume=True)
    assert X.run_experiment(experiment, setup, log=lambda _: None, resume=True)[0] == pid
    # nothing to prepare (the environment's models and the data are there); the BC child that the RL child left
    # starts from, then the RL child, beside the other BC child and the baselines (they need nothing of the others)
    start, children = launcher.waves
    trained = [[(a[0], resolved(a)["seed_everything"]) for a in w if a[0] != "experiment"] for w in launcher.waves]
    assert trained == [[("bc", 1)], [("bc", 0), ("rl", 1)]]
    baselines = [a for a in children if a[:2] == ["experiment", "baselines"]]
    assert [a[a.index("--seeds") + 1] for a in baselines] == ["0", "1"]  # their children had not finished either
    assert all(a[a.index("--parent") + 1] == pid for a in baselines)
    assert client.get_run(dead.info.run_id).info.status == "KILLED"
    assert client.get_run(pid).info.status == "FINISHED"
    # nothing left to resume: a new parent
    assert X.run_experiment(experiment, setup, log=lambda _: None, resume=True)[0] != pid


def test_resuming_a_parent_from_another_machine_makes_again_the_bc_start_its_rl_child_needs(tmp_path, monkeypatch):
    """A parent whose BC child finished on another machine and whose RL child did not, its record exported there and
    imported here (no checkpoint): resumed, the BC agent is trained again as the RL agent's start, not as a child,
    then the RL child."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    outputs = tmp_path / "outputs"
    for name in ("partner", "dm"):
        (outputs / name / "small").mkdir(parents=True)
        (outputs / name / "small" / "best.ckpt").touch()
        mark_finished(outputs / name / "small" / "best.ckpt")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "manifest.json").touch()
    monkeypatch.setattr(Calibrate, "file", lambda self, run: tmp_path / "data" / "manifest.json")  # it is there
    launcher = Recorder()
    setup = X.Setup(seeds=(0,), data_dir=str(tmp_path / "data"), tracking_uri=uri, outputs=str(outputs),
                    launcher=launcher)  # fmt: skip
    experiment = X.table1(["scratch"])
    there = MlflowClient(f"sqlite:///{tmp_path / 'there.db'}")  # the other machine's store
    exp_id = X.experiment_id(there, "table1")
    tags = {"lq.experiment": "table1", **X.parents.parent_identity(setup), "lq.role": "parent"}
    origin = there.create_run(exp_id, tags=tags).info.run_id  # RUNNING when its machine was given back
    there.log_param(origin, "seeds", "0")
    there.log_param(origin, "encoders", "scratch")
    for config in ("bc-scratch-act_speech-hardcoded", "baselines-act_speech-hardcoded"):
        kid = there.create_run(exp_id, tags={"mlflow.parentRunId": origin, "lq.config": config, "lq.seed": "0"})
        there.set_terminated(kid.info.run_id, "FINISHED")
    there.create_run(exp_id, tags={"mlflow.parentRunId": origin, "lq.config": "rl-scratch-act_speech-hardcoded",
                                   "lq.seed": "0"})  # fmt: skip
    records = tmp_path / "unfinished"
    argv = ["experiment", "export", "--parent", origin, "--tracking-uri", there.tracking_uri, "--records", str(records)]
    assert main(argv) == 0
    assert main(["experiment", "import", "--tracking-uri", uri, "--records", str(records)]) == 0
    [imported] = X.parent_runs(client, "table1")
    pid = imported.info.run_id
    statuses = sorted(r.info.status for r in X.children(client, pid, finished=False))
    assert imported.info.status == "KILLED" and statuses == ["FINISHED", "FINISHED", "KILLED"]  # its processes: gone

    assert X.run_experiment(experiment, setup, log=lambda _: None, resume=True)[0] == pid
    start, child = launcher.waves
    logged = resolved(start[0])["trainer"]["logger"]["init_args"]
    assert [a[:2] for a in start] == [["bc", "fit"]] and "tags" not in logged
    assert [a[:2] for a in child] == [["rl", "fit"]]  # the one child that had not finished, from that start
    assert resolved(child[0])["trainer"]["logger"]["init_args"]["tags"]["mlflow.parentRunId"] == pid
    assert len(X.children(client, pid)) == 2  # the Recorder logs nothing: no second BC child
    lines = X.plan(experiment, setup)  # a new parent: the BC agent is its child, not a start
    assert not [line for line in lines if "the RL agent's start" in line]


def test_a_stage_makes_what_it_needs_first_and_make_rl_compares_with_bc(tmp_path):
    """``lq stage rl --encoder adaptive --compare`` (make rl) on empty outputs: general before adaptive, the partner,
    the DM and the spaces' vectors, the BC agent the RL agent starts from, the RL agent, then both evaluated with the
    baselines; the stage's extra arguments reach the RL run only."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "manifest.json").touch()
    launcher = Recorder()
    setup = X.Setup(
        seeds=(3,),
        data_dir=str(tmp_path / "data"),
        tracking_uri=f"sqlite:///{tmp_path / 'm.db'}",
        outputs=str(tmp_path / "o"),
        extra_args={"rl": ["--model.num_envs=4"]},
        launcher=launcher,
    )
    X.run_stage("rl", setup, "adaptive", compare=True)
    firsts = [[a[:2] if a[0] != "pretrain" else resolved(a)["model"]["encoder"]["name"] for a in wave]
              for wave in launcher.waves]  # fmt: skip
    assert firsts == [
        ["general"],
        ["adaptive"],
        [["partner", "fit"], ["dm", "fit"]],
        [["experiment", "calibrate"], ["experiment", "spaces"]],  # once, before the agents that share the partner
        [["bc", "fit"]],
        [["rl", "fit"]],
        [["eval", setup.agent_checkpoint("rl", "adaptive", "act_speech", "hardcoded", 3)]],
    ]
    bc, rl = resolved(launcher.waves[4][0]), resolved(launcher.waves[5][0])
    assert rl["model"]["bc_checkpoint"] == setup.agent_checkpoint("bc", "adaptive", "act_speech", "hardcoded", 3)
    assert rl["model"]["num_envs"] == 4 and "num_envs" not in bc["model"]
    assert launcher.waves[6][0][2] == setup.agent_checkpoint("bc", "adaptive", "act_speech", "hardcoded", 3)
    assert launcher.parallel == [1, 1, 2, 2, 1, 1, 1]  # the jobs: 1 by default


def test_make_rl_trains_its_seeds_jobs_at_a_time_and_pretraining_on_every_core(tmp_path, monkeypatch, capsys):
    """``lq stage --jobs 2`` (make bc, make rl: ``JOBS``) trains two seeds' agents side by side, as an experiment's
    children; a pretraining stage stays one run on every core."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "manifest.json").touch()
    setup = X.Setup(seeds=(0, 1, 2), data_dir=str(tmp_path / "data"), tracking_uri=f"sqlite:///{tmp_path / 'm.db'}",
                    outputs=str(tmp_path / "o"), launcher=Recorder(), jobs=2)  # fmt: skip
    X.run_stage("rl", setup, "scratch", compare=True)
    kinds = [wave[0][0] for wave in setup.launcher.waves]
    assert list(zip(kinds, setup.launcher.parallel, strict=True)) == [
        ("partner", 2), ("experiment", 2), ("bc", 2), ("rl", 2), ("eval", 1)
    ]  # fmt: skip
    assert [len(wave) for wave in setup.launcher.waves][2:4] == [3, 3]
    pretraining = dataclasses.replace(setup, launcher=Recorder())
    X.run_stage("pretrain", pretraining, "general")
    assert pretraining.launcher.parallel == [1]
    monkeypatch.chdir(tmp_path)
    assert main(["stage", "rl", "--jobs", "2", "--print", "--data", str(tmp_path / "data")]) == 0
    assert "lq rl fit" in capsys.readouterr().out
    with pytest.raises(ValueError, match="compare: the RL stage's agents"):
        X.run_stage("bc", setup, "scratch", compare=True)


def test_the_rl_agents_bc_starts_are_trained_first_unless_they_start_from_their_encoder(tmp_path):
    """Table 2 has no BC row: its RL agents' BC starts (one per ability and seed) are preparation steps, after the
    partner's calibration; one trained unlike its RL agent (here: under another protocol) is trained again. Under the
    paper's objective there are none."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "manifest.json").touch()
    setup = X.Setup(seeds=(0, 1), data_dir=str(tmp_path / "data"), outputs=str(tmp_path / "o"))
    for seed, protocol in ((0, "paper"), (1, "restricted")):  # the act agents' BC starts, seed 1's another protocol
        bc = X.running.run_of(X.Config("bc", "scratch", "act"), dataclasses.replace(setup, protocol=protocol), seed)
        bc.kind.write(bc)
        Path(bc.checkpoint).touch()
        mark_finished(bc.checkpoint)
    steps, jobs = X.preparation(X.table2(["scratch"]).configs, setup)[-1]
    starts = [(s.run.config["model"]["ability"], s.run.config["model"]["seed"]) for s in steps]
    abilities = ("act_speech", "act", "speech", "speech_no_speech_goals")
    assert starts == [(ability, seed) for ability in abilities for seed in (0, 1)]
    assert all(s.args[:2] == ["bc", "fit"] for s in steps) and jobs == setup.jobs
    assert [s.done for s in steps] == [False, False, True, False, False, False, False, False]
    paper = dataclasses.replace(setup, objective="paper")
    assert X.preparation(X.table2(["scratch"]).configs, paper)[-1][0][0].label == "the partner's calibration"


def test_the_plan_of_table2_under_the_papers_objective_trains_no_bc_start(tmp_path, capsys):
    """``--objective`` reaches the RL runs alone (their last config file), and under the paper's no BC agent is planned;
    every line of the plan, and its header, carries the objective."""
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    common = ["experiment", "plan", "table2", "--encoders", "scratch", "--tracking-uri", uri]
    assert main([*common, "--seeds", "0"]) == 0
    out = capsys.readouterr().out
    assert " bc fit " in out and "objective lq" in out.splitlines()[0]  # lq's objective: each RL agent's BC start
    rl_lines = [shlex.split(line) for line in out.splitlines() if " rl fit " in line]
    assert len(rl_lines) == 4 and all("objective/lq.yaml" in resolved(line)["sources"] for line in rl_lines)
    assert main([*common, "--seeds", "0", "--objective", "paper"]) == 0
    out = capsys.readouterr().out
    lines = [shlex.split(line) for line in out.splitlines() if " rl fit " in line or " bc fit " in line]
    assert len(lines) == 4 and all(line[1] == "rl" and "objective/paper.yaml" in resolved(line)["sources"]
                                   for line in lines)  # fmt: skip
    assert "objective paper" in out.splitlines()[0]
    assert main([*common, "--objective", "bogus"]) == 2
    assert "no such objective (OBJECTIVE=bogus); choose from lq, paper" in capsys.readouterr().err


def test_a_dry_run_plan_opens_no_parent_and_shows_the_one_resume_would_take(tmp_path, capsys):
    """``plan --dry-run`` beside a campaign leaves the store as it was (no new parent for ``--resume`` to pick); with
    ``--resume`` it shows the unfinished parent and only the children still to train; a parent of other seeds is
    refused as a resume would refuse it."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = X.table1(["scratch"])
    setup = X.Setup(seeds=(0, 1, 2), tracking_uri=uri, outputs=str(tmp_path / "o"))
    pid, _ = X.parents.open_parent(client, experiment, setup, False, print)
    _log_children(client, pid, experiment, {"test/act_goal_rate": [0.1, 0.2]})  # seeds 0 and 1 finished
    client.set_terminated(pid, "KILLED")

    def store() -> list[tuple[str, str]]:
        exp_id = client.get_experiment_by_name("lq-table1").experiment_id
        return sorted((r.info.run_id, r.info.status) for r in client.search_runs([exp_id], max_results=1000))

    before = store()
    common = ["experiment", "plan", "table1", "--encoders", "scratch", "--tracking-uri", uri, "--dry-run"]
    assert main([*common, "--seeds", "0", "1", "2", "--outputs", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "parent run PARENT in MLflow experiment lq-table1" in out.splitlines()[0] and "--parent PARENT" in out
    assert main([*common, "--seeds", "0", "1", "2", "--outputs", str(tmp_path / "o"), "--resume"]) == 0
    out = capsys.readouterr().out
    assert f"parent run {pid} in MLflow experiment lq-table1" in out.splitlines()[0]
    commands = [line for line in out.splitlines()[1:] if line.startswith("lq ") and " experiment tables " not in line]
    kids = [line for line in commands if "/seed-" in line or f"--parent {pid}" in line]  # the agents' folders
    assert len(kids) == len(experiment.configs)  # seed 2's BC, RL and baselines children; seeds 0 and 1 finished
    assert all("/seed-2/config.yaml" in line or "--seeds 2" in line for line in kids), kids
    assert not list((tmp_path / "o").rglob("config.yaml"))  # a dry run writes no child's config either
    assert store() == before  # nothing opened, reopened or marked KILLED
    assert main([*common, "--seeds", "0", "1", "--resume"]) == 1
    assert f"parent run {pid} ran seeds '0 1 2', not '0 1'" in capsys.readouterr().err
    assert store() == before


def test_parents_of_two_objectives_stay_apart_in_tables_and_resume(tmp_path, capsys):
    """One store, Table 1 run under both objectives: two parents, each table built from its own children and naming
    its objective; ``lq experiment tables --objective`` picks each one; ``--resume`` under one objective never reopens
    the other's parent, and reopening it by hand is refused."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    parents = {}
    for objective, rate in (("paper", [0.1, 0.2]), ("lq", [0.7, 0.8])):
        experiment = X.table1(["scratch"], objective=objective)
        setup = X.Setup(seeds=(0, 1), tracking_uri=uri, outputs=str(tmp_path / "o"), objective=objective)
        pid, _ = X.parents.open_parent(client, experiment, setup, False, print)
        _log_children(client, pid, experiment, {"test/act_goal_rate": rate})
        client.set_terminated(pid, "FINISHED")
        parents[objective] = pid
    assert parents["paper"] != parents["lq"]
    for objective, mean in (("paper", "0.150"), ("lq", "0.750")):
        assert main(["experiment", "tables", "table1", "--objective", objective, "--tracking-uri", uri,
                     "--out", str(tmp_path / objective)]) == 0  # fmt: skip
        out = capsys.readouterr().out
        assert f"from parent run {parents[objective]}, profile tiny, protocol paper, objective {objective}" in out
        md = (tmp_path / objective / ("table1.md" if objective == "lq" else "table1-paper.md")).read_text()
        title = X.specs.rl_title(objective)
        assert f"{title} Act goals" in md and f"| Scratch | {mean} ± " in md
    # without --objective: each objective's newest parent, as the results page shows them, in files side by side
    assert main(["experiment", "tables", "table1", "--tracking-uri", uri, "--out", str(tmp_path / "both")]) == 0
    out = capsys.readouterr().out
    assert all(f"from parent run {parents[o]}, profile tiny, protocol paper, objective {o}" in out for o in parents)
    assert (tmp_path / "both" / "table1.md").read_text() == (tmp_path / "lq" / "table1.md").read_text()
    assert (tmp_path / "both" / "table1-paper.md").read_text() == (tmp_path / "paper" / "table1-paper.md").read_text()
    assert sorted(p.name for p in (tmp_path / "both").iterdir()) == sorted(
        f"{t}{o}.{x}" for t in ("table1", "table1_baselines") for o in ("", "-paper") for x in ("csv", "md")
    )
    assert main(["experiment", "tables", "--parent", parents["lq"], "--tracking-uri", uri]) == 2  # which experiment?
    assert "name the one experiment the parent run belongs to" in capsys.readouterr().err
    # an unfinished parent under the paper objective is not what an lq-objective run resumes
    paper_setup = X.Setup(seeds=(0, 1), tracking_uri=uri, outputs=str(tmp_path / "o"), objective="paper")
    client.update_run(parents["paper"], status="RUNNING")
    lq_setup = dataclasses.replace(paper_setup, objective="lq")
    assert X.parents.unfinished_parents(client, X.table1(["scratch"]), lq_setup) == []
    resumable = X.parents.unfinished_parents(client, X.table1(["scratch"], "paper"), paper_setup)
    assert [r.info.run_id for r in resumable] == [parents["paper"]]
    with pytest.raises(ValueError, match="ran objective 'paper', not 'lq': .*resume it with OBJECTIVE=paper"):
        X.parents._reopen(client, parents["paper"], X.table1(["scratch"]), lq_setup)
    with pytest.raises(ValueError, match="its tables name the paper objective, its runs would train under lq"):
        X.parents.open_parent(client, X.table1(["scratch"], "paper"), lq_setup, False, print)


def test_make_rl_trains_again_a_bc_agent_of_other_sizes_than_the_rl_agents(tmp_path):
    """A BC agent already there is reused only if it has the RL agent's sizes and environment: one of another context
    length (an older profile) would neither compare nor be the RL agent's start, so it is trained again, before RL."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "manifest.json").touch()
    launcher = Recorder()
    setup = X.Setup(
        seeds=(0, 1),
        data_dir=str(tmp_path / "data"),
        tracking_uri=f"sqlite:///{tmp_path / 'm.db'}",
        outputs=str(tmp_path / "o"),
        launcher=launcher,
    )
    for seed, extra in ((0, ()), (1, ("--model.context_length", "64"))):  # seed 1's BC agent: an older profile's
        run = X.running.run_of(X.Config("bc", "scratch"), setup, seed)
        run = dataclasses.replace(run, extra=(*run.extra, *extra))
        run.kind.write(run)
        Path(run.checkpoint).touch()
        mark_finished(run.checkpoint)
    X.run_stage("rl", setup, "scratch", compare=True)
    runs = [(i, args) for i, wave in enumerate(launcher.waves) for args in wave]
    bc = [(i, resolved(args)["model"]["seed"]) for i, args in runs if args[:2] == ["bc", "fit"]]
    [rl_wave] = {i for i, args in runs if args[:2] == ["rl", "fit"]}
    assert [seed for _, seed in bc] == [1] and bc[0][0] < rl_wave  # before RL, which starts from it


def test_make_rl_compares_the_agents_where_its_args_put_them(tmp_path):
    """``make rl ARGS="--out_dir DIR"`` (a recipe beside the paper's agents): the agents of DIR are evaluated, and the
    table is written under a name of its own, not over the paper's agents' table."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "manifest.json").touch()
    launcher = Recorder()
    recipe = str(tmp_path / "o" / "rl-recipe")
    setup = X.Setup(
        seeds=(0,),
        data_dir=str(tmp_path / "data"),
        tracking_uri=f"sqlite:///{tmp_path / 'm.db'}",
        outputs=str(tmp_path / "o"),
        extra_args={"rl": ["--out_dir", str(tmp_path / "elsewhere"), f"--out_dir={recipe}"]},
        launcher=launcher,
    )
    X.run_stage("rl", setup, "scratch", compare=True)
    [evaluation] = launcher.waves[-1]
    assert evaluation[1] == f"{recipe}/scratch/act_speech-hardcoded/seed-0/agent.ckpt"
    assert evaluation[2] == setup.agent_checkpoint("bc", "scratch", "act_speech", "hardcoded", 0)
    assert evaluation[evaluation.index("--out") + 1] == f"{tmp_path}/o/eval/rl-recipe-scratch-act_speech-hardcoded"


def test_lq_stage_refuses_bad_input_with_the_fix(tmp_path, capsys):
    assert main(["stage", "bc", "--compare"]) == 2
    assert main(["stage", "rl", "--encoder", "bert"]) == 2
    assert main(["stage", "rl", "--encoder", "scratch", "--data", str(tmp_path / "none")]) == 2
    assert main(["stage", "rl", "--profile", "huge"]) == 2
    assert main(["stage", "rl", "--launcher-args", "partition"]) == 2
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    assert main(["experiment", "run", "table1", "--data", str(tmp_path / "none"), "--tracking-uri", uri]) == 2
    err = capsys.readouterr().err
    assert "--compare compares RL agents with BC's and the baselines: lq stage rl, not bc" in err
    assert "--encoder bert (ENCODER=bert): unknown; choose from scratch, general, light, general_light, adaptive" in err
    assert "no dataset in" in err and "lq data generate" in err
    assert "no such profile (PROFILE=huge); choose from paper, quick, tiny" in err
    assert "the local launcher takes none" in err
    assert not (tmp_path / "none").exists()  # nothing written


def test_a_stage_target_keeps_a_run_that_finished_with_its_settings_and_resumes_one_that_stopped(tmp_path, capsys):
    """make pretrain twice: the second names the finished encoder and trains nothing (FORCE=1: from its start again); a
    checkpoint of other settings is trained again; a BC run stopped mid-training goes on from its own last.ckpt."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "manifest.json").touch()
    setup = X.Setup(seeds=(0,), data_dir=str(tmp_path / "data"), tracking_uri=f"sqlite:///{tmp_path / 'm.db'}",
                    outputs=str(tmp_path / "o"), launcher=Recorder())  # fmt: skip
    [(label, run)] = X.running.stage_runs(X.Config("pretrain", "general_light"), setup)
    assert label == "pretrain general_light"
    run.kind.write(run)  # what the run read
    Path(run.checkpoint).touch()
    mark_finished(run.checkpoint, run_id="abc123")
    lines = []
    X.run_stage("pretrain", setup, "general_light", log=lines.append)
    assert setup.launcher.waves == []  # nothing trained
    assert lines[0] == (f"[pretrain general_light] done: {run.checkpoint} (its run finished with these settings; "
                        "FORCE=1, or --force, trains it again)")  # fmt: skip
    assert f"[pretrain general_light] {run.checkpoint} (MLflow run abc123 in experiment lq-pretrain" in lines[1]
    assert lines[2].startswith("next: make rl ENCODER=general_light")
    X.run_stage("pretrain", setup, "general_light", force=True, log=lines.append)
    [[forced]] = setup.launcher.waves
    assert "--ckpt_path" not in forced
    # beside the finished run, which stays done with its own config until the forced one finishes (lq pretrain fit
    # --retrain: tests/lit/test_agent_cli.py)
    assert forced[-2:] == ["--config", run.kind.retrain_config(run)] and finished(run.checkpoint)
    assert X.running.finished_as(run) == run.checkpoint
    assert yaml.safe_load(Path(run.kind.retrain_config(run)).read_text()) == {**run.config, "retrain": True}
    other = dataclasses.replace(run, extra=(*run.extra, "--model.lr", "1.0"))  # trained with other settings
    other.kind.write(other)
    assert not finished(run.checkpoint)  # a folder written for a run is not done until that run finishes
    mark_finished(run.checkpoint)
    assert X.running.finished_as(run) is None

    [(label, bc)] = X.running.stage_runs(X.Config("bc", "scratch"), setup)
    assert label == "bc scratch-act_speech-hardcoded s0"
    bc.kind.write(bc)
    Path(bc.outputs["last"]).touch()
    [step] = X.running.stage_waves("bc", setup, "scratch")[-1][0]
    assert step.args[-2:] == ["--ckpt_path", bc.outputs["last"]] and not step.done
    other = dataclasses.replace(bc, extra=(*bc.extra, "--model.lr", "1.0"))  # another run's last checkpoint
    other.kind.write(other)
    [step] = X.running.stage_waves("bc", setup, "scratch")[-1][0]
    assert "--ckpt_path" not in step.args


def test_make_pretrain_after_the_quickstart_says_it_trains_another_profiles_encoder_and_where_the_other_is(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "manifest.json").touch()
    setup = X.Setup(seeds=(0,), data_dir=str(tmp_path / "data"), tracking_uri=f"sqlite:///{tmp_path / 'm.db'}",
                    outputs=str(tmp_path / "o"), launcher=Recorder())  # fmt: skip
    [(_, run)] = X.running.stage_runs(X.Config("pretrain", "general_light"), setup)
    quick = dataclasses.replace(run, profile="quick")  # the quickstart's encoder, finished
    Path(quick.checkpoint).parent.mkdir(parents=True)
    Path(quick.checkpoint).touch()
    mark_finished(quick.checkpoint)
    lines = []
    X.run_stage("pretrain", setup, "general_light", log=lines.append)
    assert lines[0] == (
        f"[pretrain general_light] trains the tiny profile's, in {run.dir}; the quick profile's finished one is "
        f"{quick.checkpoint} (PROFILE=quick uses it)"
    )
    assert len(setup.launcher.waves) == 1  # and trains it


def test_lq_stage_refuses_a_mistyped_choice_in_one_line_before_any_child_starts(tmp_path, capsys, monkeypatch):
    """make rl ABILITY=act_speach SWITCH=hardcode, make pretrain ENCODER=general_lihgt: refused at once, each with the
    choice it was likely meant to be and only the valid choices (no environment model among the encoders)."""
    started = []
    monkeypatch.setattr(launchers.Local, "run_graph", lambda self, tasks, width: started.extend(tasks))
    monkeypatch.chdir(tmp_path)
    assert main(["stage", "rl", "--encoder", "scratch", "--ability", "act_speach", "--switch", "hardcode"]) == 2
    assert main(["stage", "pretrain", "--encoder", "general_lihgt"]) == 2
    assert main(["stage", "bc", "--encoder", "small"]) == 2
    rl, pretrain, bc = capsys.readouterr().err.strip().splitlines()
    assert rl == (
        "error: --ability act_speach (ABILITY=act_speach): unknown (did you mean act_speech?); choose from act_speech, "
        "act, speech, speech_no_speech_goals; --switch hardcode (SWITCH=hardcode): unknown (did you mean hardcoded?); "
        "choose from hardcoded, ratio"
    )
    assert "(did you mean general_light?)" in pretrain and "small" not in pretrain
    assert bc.startswith("error: --encoder small (ENCODER=small): unknown;")
    assert started == [] and not (tmp_path / "data").exists()  # nothing ran, nothing written


def test_a_killed_child_ends_the_driver_with_one_line_naming_it_its_log_and_how_to_go_on(monkeypatch, capsys, tmp_path):
    def killed(*args, **kwargs):
        raise launchers.JobFailed([launchers.Failure("rl-scratch s1", ["rl", "fit"], -9, "outputs/logs/rl-s1.log")])

    monkeypatch.setattr(X, "run_experiment", killed)
    argv = ["experiment", "run", "table1", "--encoders", "scratch", "--seeds", "1", "--jobs", "2"]
    assert main(argv) == 1
    assert capsys.readouterr().err == (
        "error: rl-scratch s1 was killed by SIGKILL (its log: outputs/logs/rl-s1.log); go on with: lq experiment run "
        "table1 --encoders scratch --seeds 1 --jobs 2 --resume\n"
    )
    monkeypatch.setattr(X, "run_stage", killed)
    assert main(["stage", "rl", "--encoder", "scratch"]) == 1  # a stage's finished steps are kept: the same command
    assert capsys.readouterr().err.endswith("; go on with: lq stage rl --encoder scratch\n")
    log = tmp_path / "rl-s1.log"
    log.write_text("Seed set to 1\n\nTraceback (most recent call last):\nValueError: boom\n")

    def failed(*args, **kwargs):  # the end of its log shown, and how to go on on a line of its own
        raise launchers.JobFailed([launchers.Failure("rl-scratch s1", ["rl", "fit"], 1, str(log))])

    monkeypatch.setattr(X, "run_stage", failed)
    assert main(["stage", "rl", "--encoder", "scratch"]) == 1
    assert capsys.readouterr().err == (
        f"error: rl-scratch s1 failed (exit status 1) (its log: {log}), which ends:\n    Seed set to 1\n"
        "    Traceback (most recent call last):\n    ValueError: boom\ngo on with: lq stage rl --encoder scratch\n"
    )

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(X, "run_experiment", interrupted)
    assert main([*argv, "--resume"]) == 130
    assert capsys.readouterr().err == (
        "interrupted: the runs stopped are marked KILLED; go on with: lq experiment run table1 --encoders scratch "
        "--seeds 1 --jobs 2 --resume\n"
    )
    # run by make (the Makefile exports the command typed): the make command, RESUME=1 for an experiment, no FORCE
    monkeypatch.setenv("LQ_MAKE", "make quickstart JOBS=1")
    assert main(argv) == 130
    assert capsys.readouterr().err.endswith("; go on with: make quickstart JOBS=1 RESUME=1\n")
    monkeypatch.setattr(X, "run_stage", interrupted)
    monkeypatch.setenv("LQ_MAKE", "make rl FORCE=1 ENCODER=scratch SEEDS=0\\ 1")
    assert main(["stage", "rl", "--encoder", "scratch", "--seeds", "0", "1", "--force"]) == 130
    assert capsys.readouterr().err == (
        "interrupted: the runs stopped are marked KILLED, the finished ones kept as they were; go on with: make rl "
        "ENCODER=scratch 'SEEDS=0 1'\n"
    )


def test_resume_names_the_other_unfinished_parents_and_resumes_the_one_parent_names(tmp_path, capsys):
    """A parent opened by `plan` and never run is newer than the one a killed driver left: resume takes the newest but
    names the other with its finished children, and --parent resumes that one; a finished or unknown parent is
    refused by name."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = X.table1(["scratch"])
    setup = X.Setup(seeds=(0, 1), tracking_uri=uri, outputs=str(tmp_path / "o"))
    worked, _ = X.parents.open_parent(client, experiment, setup, False, print)
    _log_children(client, worked, experiment, {"test/act_goal_rate": [0.1, 0.2]})
    client.set_terminated(worked, "KILLED")
    planned, _ = X.parents.open_parent(client, experiment, setup, False, print)
    finished, _ = X.parents.open_parent(client, experiment, setup, False, print)
    client.set_terminated(finished, "FINISHED")
    logged = []
    pid, done = X.parents.open_parent(client, experiment, setup, True, logged.append)
    assert pid == planned and not done
    n = 2 * len(experiment.configs)
    assert logged[-1].startswith(f"[table1] other unfinished parents of this identity, newest first: {worked} ({n} ")
    pid, done = X.parents.open_parent(client, experiment, setup, True, logged.append, parent=worked)
    assert pid == worked and len(done) == n
    for other in (finished, "0" * 32):
        with pytest.raises(ValueError, match=f"--parent {other}: not an unfinished table1 parent run .* those there: "):
            X.parents.open_parent(client, experiment, setup, True, print, parent=other)
    argv = ["experiment", "run", "table1", "table2", "--resume", "--parent", worked, "--tracking-uri", uri]
    assert main(argv) == 2 and "name the one experiment the parent run belongs to" in capsys.readouterr().err
    # refused before the preparation (which would generate the missing dataset first)
    argv = ["experiment", "run", "table1", "--resume", "--parent", finished, "--tracking-uri", uri, "--data",
            str(tmp_path / "data")]  # fmt: skip
    assert main(argv) == 1 and f"--parent {finished}: not an unfinished" in capsys.readouterr().err
    assert not (tmp_path / "data").exists()


def test_a_campaign_imported_on_a_new_machine_resumes_by_the_id_its_parent_had_where_it_ran(tmp_path, capsys):
    """An unfinished parent's record imported into a new store (a machine given back): --resume --parent takes the id
    it had where it ran as well as its id here, reopens the imported parent and trains none of its finished children
    again; an id of neither kind is refused."""
    uri, other = (f"sqlite:///{tmp_path / name}" for name in ("ran.db", "new.db"))
    client = MlflowClient(uri)
    experiment = X.table1(["scratch"])
    setup = X.Setup(seeds=(0, 1), tracking_uri=uri, outputs=str(tmp_path / "o"))
    ran, _ = X.parents.open_parent(client, experiment, setup, False, print)
    _log_children(client, ran, experiment, {"test/act_goal_rate": [0.1, 0.2]})
    client.set_terminated(ran, "KILLED")
    records = tmp_path / "records"
    assert main(["experiment", "export", "--tracking-uri", uri, "--parent", ran, "--records", str(records)]) == 0
    assert main(["experiment", "import", "--tracking-uri", other, "--records", str(records)]) == 0
    moved = dataclasses.replace(setup, tracking_uri=other)
    store = MlflowClient(other)
    [here] = [r.info.run_id for r in X.parent_runs(store, "table1")]
    assert here != ran
    for named in (ran, here):
        pid, done = X.parents.open_parent(store, experiment, moved, True, print, parent=named)
        assert pid == here and len(done) == 2 * len(experiment.configs)
        assert X.parents.peek_parent(store, experiment, moved, True, named) == (here, done)
    with pytest.raises(ValueError, match=f"--parent {'1' * 32}: not an unfinished table1 parent run .* those there: "
                                         f"{here} \\(ran as {ran}\\)"):  # fmt: skip
        X.parents.open_parent(store, experiment, moved, True, print, parent="1" * 32)


def test_a_run_whose_process_is_gone_is_marked_killed_and_one_still_running_blocks_a_resume(tmp_path):
    client = MlflowClient(f"sqlite:///{tmp_path / 'm.db'}")
    exp_id = X.experiment_id(client, "table1")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    here = {"lq.host": socket.gethostname()}
    dead = client.create_run(exp_id, tags={**here, "lq.pid": gone.stdout.strip()})
    living = client.create_run(exp_id, tags={**here, "lq.pid": str(os.getpid())})
    elsewhere = client.create_run(exp_id, tags={"lq.host": "another-host", "lq.pid": "1"})
    done = client.create_run(exp_id, tags=here)
    client.set_terminated(done.info.run_id, "FINISHED")
    runs = client.search_runs([exp_id])
    assert [r.info.run_id for r in X.parents.end_dead_runs(client, runs)] == [dead.info.run_id]
    status = {r.info.run_id: r.info.status for r in client.search_runs([exp_id])}
    assert status == {
        dead.info.run_id: "KILLED",
        living.info.run_id: "RUNNING",  # its process is there
        elsewhere.info.run_id: "RUNNING",  # cannot be told from here
        done.info.run_id: "FINISHED",
    }
    # a parent whose child still runs here (its driver alone was killed) is not resumed beside it
    setup = X.Setup(seeds=(0,), tracking_uri=f"sqlite:///{tmp_path / 'm.db'}", outputs=str(tmp_path / "o"))
    tags = {"lq.experiment": "table1", **X.parents.parent_identity(setup), "lq.role": "parent"}
    pid = client.create_run(exp_id, tags=tags).info.run_id
    client.log_param(pid, "seeds", "0")
    client.log_param(pid, "encoders", "scratch")
    child = {**here, "lq.pid": str(os.getpid()), "mlflow.parentRunId": pid, "lq.config": "rl-scratch", "lq.seed": "0"}
    client.create_run(exp_id, tags=child)
    with pytest.raises(ValueError, match=rf"its child rl-scratch s0 is still running \(process {os.getpid()}\)"):
        X.parents.open_parent(client, X.table1(["scratch"]), setup, True, print)


def test_a_bc_agent_whose_run_did_not_finish_is_trained_again_before_rl_starts_from_it(tmp_path):
    """A BC checkpoint left by a killed or interrupted run (no done.json beside it) is no RL start: make rl trains it
    again first, and the RL module refuses to start from it."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "manifest.json").touch()
    launcher = Recorder()
    setup = X.Setup(
        seeds=(0, 1), data_dir=str(tmp_path / "data"), tracking_uri=f"sqlite:///{tmp_path / 'm.db'}",
        outputs=str(tmp_path / "o"), launcher=launcher,
    )  # fmt: skip
    module = build_module(X.running.rl_run(X.Config("rl", "scratch"), setup, 0))
    for seed in (0, 1):
        bc = X.running.run_of(X.Config("bc", "scratch"), setup, seed)
        bc.kind.write(bc)
        Path(bc.checkpoint).touch()
    mark_finished(setup.agent_checkpoint("bc", "scratch", "act_speech", "hardcoded", 1))  # seed 0's was killed
    unfinished = setup.agent_checkpoint("bc", "scratch", "act_speech", "hardcoded", 0)
    refused = r"did not finish its training \(killed or interrupted: neither done.json nor trained.json beside it\)"
    with pytest.raises(ValueError, match=refused):
        module.start_checkpoint  # noqa: B018 (the property checks)
    mark_trained(unfinished)  # its training ended, its evaluation goes on: its weights are final, a start
    assert module.start_checkpoint == unfinished
    Path(unfinished).parent.joinpath(TRAINED).unlink()
    X.run_stage("rl", setup, "scratch")
    agents = [(i, args) for i, wave in enumerate(launcher.waves) for args in wave if args[0] in ("bc", "rl")]
    runs = [(i, args[:2], resolved(args)["model"]["seed"]) for i, args in agents]
    bc = [(i, seed) for i, stage, seed in runs if stage == ["bc", "fit"]]
    rl_waves = {i for i, stage, _ in runs if stage == ["rl", "fit"]}
    assert [seed for _, seed in bc] == [0] and bc[0][0] < min(rl_waves)
    assert finished(unfinished)  # the Recorder's BC run finished it


def test_drivers_starting_at_once_on_a_new_sqlite_store_lose_no_run_and_print_no_error(tmp_path):
    """Three processes open one new store at once (each would make its tables) and write 15 runs each."""
    uri = f"sqlite:///{tmp_path / 'new' / 'mlflow.db'}"
    script = (
        "import sys\n"
        "from lq.experiments.reporting import _client, experiment_id\n"
        f"client = _client({uri!r})\n"
        "for i in range(15):\n"
        "    run = client.create_run(experiment_id(client, 'stress'), tags={'w': sys.argv[1]}).info.run_id\n"
        "    client.log_metric(run, 'm', i)\n"
        "    client.set_terminated(run, 'FINISHED')\n"
    )
    writers = [
        subprocess.Popen([sys.executable, "-c", script, str(w)], stderr=subprocess.PIPE, text=True, cwd=ROOT)
        for w in range(3)
    ]
    errors = [w.communicate()[1] for w in writers]
    assert [w.returncode for w in writers] == [0, 0, 0], errors
    assert not any("Traceback" in e or "locked" in e for e in errors), errors
    client = MlflowClient(uri)
    runs = client.search_runs([X.experiment_id(client, "stress")], max_results=100)
    assert sorted(r.data.tags["w"] for r in runs) == sorted(str(w) for w in range(3) for _ in range(15))


def test_stage_runs_starting_at_once_on_a_store_without_their_experiment_all_log_to_it(tmp_path):
    """Three children start at once on a new store that has no ``lq-bc`` experiment (make rl's BC seeds side by side):
    each stage logger makes it or finds it, and every run lands in the one experiment (each used to create it and all
    but one die on MLflow's unique name)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    go = tmp_path / "go"
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from lq.lit.loggers import StageLogger\n"
        f"Path({str(tmp_path)!r}, 'ready-' + sys.argv[1]).touch()\n"
        f"while not Path({str(go)!r}).exists():\n"
        "    time.sleep(0.01)\n"
        f"logger = StageLogger(experiment_name='lq-bc', tracking_uri={uri!r}, tags={{'w': sys.argv[1]}})\n"
        "logger.log_metrics({'m': 1.0})\n"
        "logger.end('FINISHED')\n"
    )
    children = [
        subprocess.Popen([sys.executable, "-c", script, str(w)], stderr=subprocess.PIPE, text=True, cwd=ROOT)
        for w in range(3)
    ]
    deadline = time.monotonic() + 120  # once each has imported Lightning, so that they start together
    while len(list(tmp_path.glob("ready-*"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    go.touch()
    errors = [c.communicate(timeout=120)[1] for c in children]
    assert [c.returncode for c in children] == [0] * 3, errors
    client = MlflowClient(uri)
    [experiment] = [e for e in client.search_experiments() if e.name == "lq-bc"]
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(r.data.tags["w"] for r in runs) == ["0", "1", "2"]
    assert experiment.tags["mlflow.experimentKind"]  # marked so that the UI opens it on its runs table


def test_ctrl_c_reaches_the_running_children_which_stop_before_the_driver(tmp_path, monkeypatch):
    script = (
        "import signal, sys, time\n"
        "def stop(*_):\n"
        "    open(sys.argv[1], 'w').write('stopped cleanly')\n"
        "    sys.exit(130)\n"
        "signal.signal(signal.SIGINT, stop)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    monkeypatch.setattr(launchers, "command", lambda args: [sys.executable, "-c", script, *args])
    ctrl_c = threading.Timer(3, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    ctrl_c.start()  # Ctrl-C, as the driver's main thread gets it (not the children: the test's own terminal's)
    with pytest.raises(KeyboardInterrupt):
        Local().run([(f"j{i}", [str(tmp_path / f"j{i}")]) for i in range(3)], 2)
    assert [(tmp_path / f"j{i}").read_text() for i in range(2)] == ["stopped cleanly"] * 2
    assert not (tmp_path / "j2").exists()  # never started


def test_the_local_launcher_runs_jobs_side_by_side_with_their_output_prefixed_and_kept(tmp_path, capsys):
    first, second, logs = tmp_path / "a", tmp_path / "b", tmp_path / "logs"
    jobs = [(f"data {d.name}", ["data", "generate", str(d), "--scale", "tiny"]) for d in (first, second)]
    Local(str(logs)).run(jobs, 2)
    assert (first / "manifest.json").is_file() and (second / "manifest.json").is_file()
    out = capsys.readouterr().out
    assert "\n[data a] wrote " in out and "\n[data b] wrote " in out  # each line of a child under its job's label
    assert f"\nwrote {first} " in (logs / "data_a.log").read_text()  # and kept, unprefixed
    with pytest.raises(launchers.JobFailed) as failed:  # one fails: said after both end
        Local(str(logs)).run(
            [("data", ["data", "generate", str(first), "--scale", "tiny"]), ("s", ["data", "stats", str(second)])], 2
        )
    [failure] = failed.value.failures
    assert (failure.label, failure.status, failure.killed) == ("data", 1, False)
    assert str(failure).startswith(f"data failed (exit status 1) (its log: {logs / 'data.log'}), which ends:\n    ")
    assert "already exists" in (logs / "data.log").read_text()  # the child's own error, kept
    assert "already exists" in str(failure).splitlines()[-1]  # and shown where the failure is reported


def test_the_local_launcher_starts_a_job_once_what_it_waits_for_released_its_slot(tmp_path, monkeypatch):
    """On one slot: ``bc`` writes its marker (its weights final) and then waits for ``rl``, which starts after it;
    ``rl`` can start only if the launcher freed ``bc``'s slot at the marker, and ``bc`` goes on 10 nicer. A job after
    a failed one never starts."""
    script = (
        "import os, sys, time\n"
        "name, d = sys.argv[1], sys.argv[2]\n"
        "open(f'{d}/{name}.started', 'w').close()\n"
        "if name == 'bc':\n"
        "    open(f'{d}/bc.marker', 'w').close()\n"
        "    for _ in range(300):\n"
        "        if os.path.exists(f'{d}/rl.started'):\n"
        "            break\n"
        "        time.sleep(0.05)\n"
        "    open(f'{d}/bc.seen', 'w').write(f'{os.path.exists(d + \"/rl.started\")} {os.nice(0)}')\n"
        "sys.exit(3 if name == 'broken' else 0)\n"
    )
    monkeypatch.setattr(launchers, "command", lambda args: [sys.executable, "-c", script, *args])
    marker = tmp_path / "bc.marker"

    def released(started: float) -> bool:
        return marker.exists() and marker.stat().st_mtime >= started

    base = os.nice(0)
    tasks = [Task("bc", ["bc", str(tmp_path)], released=released), Task("rl", ["rl", str(tmp_path)], after=["bc"])]
    Local(poll=0.05).run_graph(tasks, 1)
    assert (tmp_path / "bc.seen").read_text() == f"True {min(19, base + launchers.RELEASED_NICENESS)}"

    with pytest.raises(launchers.JobFailed) as failed:
        Local(poll=0.05).run_graph([Task("broken", ["broken", str(tmp_path)]),
                                    Task("after", ["after", str(tmp_path)], after=["broken"])], 2)  # fmt: skip
    assert [f.label for f in failed.value.failures] == ["broken"] and not (tmp_path / "after.started").exists()
    with pytest.raises(ValueError, match="jobs after nothing, which no job is"):
        Local().run_graph([Task("a", ["a"], after=["nothing"])], 1)
    with pytest.raises(ValueError, match="jobs after themselves: a"):
        Local().run_graph([Task("a", ["a"], after=["a"])], 1)

    def broken_step() -> bool:
        raise OSError("its config cannot be written")

    with pytest.raises(launchers.JobFailed) as failed:  # a step's error as it is due: its failure, no other starts
        Local(poll=0.05).run_graph([Task("w", ["w", str(tmp_path)], due=broken_step),
                                    Task("z", ["z", str(tmp_path)])], 1)  # fmt: skip
    assert str(failed.value) == "w failed (OSError: its config cannot be written)"
    assert not (tmp_path / "z.started").exists()


def test_the_quick_profiles_test_only_evaluation_is_kept_where_a_table_reads_test_figures_alone(tmp_path):
    """The quick profile evaluates its agents on the test quests alone (``zero_shot: reported``): Table 1's children
    so, an experiment whose tables read the validation quests or the worlds never seen evaluates all of it."""
    setup = X.Setup(seeds=(0,), profile="quick", tracking_uri=f"sqlite:///{tmp_path / 'm.db'}",
                    outputs=str(tmp_path / "o"))  # fmt: skip

    def evaluations(experiment: X.Experiment) -> dict[str, str]:
        steps = [s for wave, _ in X.running.child_waves(experiment, setup, "pid") for s in wave if s.run.kind.agent]
        return {s.label: "all" if s.args[-2:] == ["--zero_shot", "all"] else s.run.config["zero_shot"] for s in steps}

    assert set(evaluations(X.table1(["scratch"])).values()) == {"reported"}
    generalisation = evaluations(X.EXPERIMENTS["generalisation"]())
    assert len(generalisation) > 2 and set(generalisation.values()) == {"all"}


def test_an_rl_child_waits_for_its_bc_childs_final_weights_not_its_evaluation(tmp_path):
    """The children's graph: each RL child after the BC child it starts from, the baselines after none; a BC child
    releases its slot once trained.json beside its checkpoint is newer than its start (the run removed an older one
    as it began, :func:`lq.data.outputs.unfinished`)."""
    setup = X.Setup(seeds=(0,), tracking_uri=f"sqlite:///{tmp_path / 'm.db'}", outputs=str(tmp_path / "o"))
    steps = {s.label: s for wave, _ in X.running.child_waves(X.table1(["scratch"]), setup, "pid") for s in wave}
    bc, rl = steps["bc-scratch-act_speech-hardcoded s0"], steps["rl-scratch-act_speech-hardcoded s0"]
    assert rl.after == [bc.label] and bc.after == []
    # only a child others wait for frees its slot early: the RL child and the baselines keep theirs to their end
    assert [label for label, s in steps.items() if s.released is not None] == [bc.label]
    checkpoint = Path(bc.run.checkpoint)
    checkpoint.parent.mkdir(parents=True)
    checkpoint.touch()
    started = time.time() - 1  # (a file's time may trail the clock by a tick)
    assert not bc.released(started)
    mark_trained(checkpoint)
    assert bc.released(started) and not bc.released(time.time() + 60)
    tasks = X.running._tasks(X.running.child_waves(X.table1(["scratch"]), setup, "pid"), setup)
    assert {t.label: list(t.after) for t in tasks}["rl-scratch-act_speech-hardcoded s0"] == [bc.label]
    # the preparation's steps wait for what they need, not for the whole wave before: the partner's calibration for
    # the environment's models (not the pretraining), the encoder's vectors for the pretraining (not the partner)
    two = dataclasses.replace(setup, jobs=2)
    prep = {t.label: t for t in X.running._tasks(X.running.preparation(X.table1(["general_light"]).configs, two), two)}
    assert set(prep["the partner's calibration"].after) == {"data", "partner small", "dm small"}
    assert set(prep["general_light vectors of the agents' spaces"].after) == {"data", "pretrain general_light"}
    assert prep["pretrain general_light"].slots == 2 and prep["partner small"].slots == 1  # on every core; one
    for jobs, width, pretraining in ((1, 2, 2), (3, 3, 3)):  # the partner and the DM two at once whatever the jobs
        at = dataclasses.replace(setup, jobs=jobs)
        waves = X.running.preparation(X.table1(["general_light"]).configs, at)
        slots = {t.label: t.slots for t in X.running._tasks(waves, at)}
        assert X.running._width(waves, at) == width and (slots["pretrain general_light"], slots["dm small"]) == (
            pretraining, 1
        )  # fmt: skip
    # two steps of one label (a table's worlds have their own data and partner) are two tasks, each waited for
    step = X.running.Step("data", ["data", "generate"])
    tasks = X.running._tasks([([step], 1), ([dataclasses.replace(step, args=["w"])], 1),
                              ([dataclasses.replace(step, label="p", after=["data"])], 1)], setup)  # fmt: skip
    assert [(t.label, list(t.after)) for t in tasks] == [
        ("data", []), ("data (2)", ["data"]), ("p", ["data", "data (2)"])
    ]  # fmt: skip


def test_the_local_launcher_says_which_child_was_killed_and_by_what(tmp_path, monkeypatch):
    script = "import os, signal, sys; print('started', flush=True); os.kill(os.getpid(), int(sys.argv[1]))"
    monkeypatch.setattr(launchers, "command", lambda args: [sys.executable, "-c", script, *args])
    with pytest.raises(launchers.JobFailed) as failed:
        Local(str(tmp_path)).run([("rl s0", ["9"])], 1)
    [failure] = failed.value.failures
    log = tmp_path / "rl_s0.log"
    assert failure.killed and str(failure) == f"rl s0 was killed by SIGKILL (its log: {log}), which ends:\n    started"
    assert (tmp_path / "rl_s0.log").read_text() == "started\n"


def test_the_local_launcher_pins_one_gpu_per_child_and_leaves_the_threads_to_the_runs(tmp_path, monkeypatch):
    """Where there are GPUs, each of the jobs side by side sees one of them, a different one; on a CPU none is set.
    The CPU threads are each run's own (``--threads``): the launcher sets none, whatever the job count."""
    seen = tmp_path / "seen"
    seen.mkdir()
    env = "os.environ.get('CUDA_VISIBLE_DEVICES', '-') + ' ' + os.environ.get('OMP_NUM_THREADS', '-')"
    script = f"import os, sys; open(sys.argv[1], 'w').write({env})"
    monkeypatch.setattr(launchers, "command", lambda args: [sys.executable, "-c", script, *args])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    Local().run([(f"j{i}", [str(seen / str(i))]) for i in range(4)], 2)
    pinned = [(seen / str(i)).read_text().split() for i in range(4)]
    # two slots, one GPU each: every child sees one GPU, the first two (started together) different ones
    assert {g for g, _ in pinned} == {"2", "5"} and {t for _, t in pinned} == {"-"}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU visible: nothing pinned
    Local().run([("j", [str(seen / "cpu")])], 1)
    assert (seen / "cpu").read_text() == " -"


def test_a_missing_cell_reads_n_a_and_bad_names_are_refused(tmp_path):
    table = X.table7(["scratch"]).tables[0]
    md, csv = X.render(table, {("Scratch, Learned switch", "Act goals"): [0.5]})
    assert "| Scratch, Learned switch | 0.500 | n/a | n/a | 0 |" in md  # one seed's figure: no "± 0.000"
    md, _ = X.render(table, {("Scratch, Learned switch", "Act goals"): [0.5, 0.5]})
    assert "| Scratch, Learned switch | 0.500 ± 0.000 | n/a | n/a | 0 |" in md  # two seeds that agree
    assert csv.splitlines()[2].startswith('"Scratch, Hardcoded switch",,,')
    with pytest.raises(ValueError, match="unknown encoder bogus"):
        X.table1(["bogus"])
    with pytest.raises(ValueError, match="the light encoder does not pretrain on ATOMIC-LIGHT: nothing to replace"):
        X.specs.pretrain_args("light", "atomic")
    known = "quests12, quests25, quests50, atomic"
    with pytest.raises(ValueError, match=f"unknown pretraining variant quests7: choose from {known}"):
        X.specs.pretrain_args("scratch", "quests7")
    assert main(["experiment", "tables", "table9", "--tracking-uri", f"sqlite:///{tmp_path / 'm.db'}"]) == 2
    with pytest.raises(FileNotFoundError, match="no such profile .PROFILE=huge.; choose from paper, quick, tiny"):
        X.Setup(profile="huge")


def test_the_paper_tables_have_their_configurations():
    assert len(X.table1().configs) == 10 + 1  # 5 encoders x (RL, BC), and the baselines
    assert len(X.table2().configs) == 8 + 4  # 4 abilities x (scratch, adaptive), and the baselines of each ability
    baselines = X.table2().tables[1]
    # per ability: 2 rules x (whole spaces, valid candidates), the two replays and the ceiling
    assert baselines.name == "table2_baselines" and len(baselines.rows) == 4 * 7
    assert [row for row, _ in baselines.rows[:7]] == [
        "Random (whole spaces), Act+Speech, hardcoded switch",
        "Random (valid candidates), Act+Speech, hardcoded switch",
        "Word overlap (whole spaces), Act+Speech, hardcoded switch",
        "Word overlap (valid candidates), Act+Speech, hardcoded switch",
        "Demonstrations replayed, Act+Speech, hardcoded switch",
        "Demonstrations' self turns with the environment's partner, Act+Speech, hardcoded switch",
        "Ceiling (goal in the action space), Act+Speech, hardcoded switch",
    ]
    assert {c.switch for c in X.table7().configs} == {"ratio", "hardcoded"}
    t45 = X.table45()
    # five encoders, General+Light on ATOMIC without domain adaptation, Scratch on 12, 25 and 50 quests and
    # General+Light on 12 and 25
    assert [t.name for t in t45.tables] == ["table4", "table5", "quests"] and len(t45.configs) == 5 + 1 + 3 + 2
    # no agent plays Tables 4/5: the line under their titles says Hits@k, not an episode protocol
    from lq.experiments.reporting import evaluated_line

    assert evaluated_line(t45, "paper").startswith("Evaluated as Hits@k of 100") and "episodes" not in t45.evaluated
    assert evaluated_line(X.table1(), "paper").startswith("Evaluated under protocol paper: choice among the whole")
    env_model = X.stage_config(X.Config("partner", "small"), X.Setup(data_dir="d"), 0)
    assert env_model["data"]["data_dir"] == "d" and "ability" not in env_model["model"]
    assert {"profile/tiny/env.yaml", "encoder/small.yaml"} <= set(env_model["sources"])
    agent = X.stage_config(X.Config("rl", "scratch"), X.Setup(data_dir="data/default", profile="paper"), 0)
    assert agent["model"]["env"]["partner_checkpoint"] == "outputs/partner/general/best.ckpt"
    # another dataset's checkpoints are kept apart, under its folder's name
    agent = X.stage_config(X.Config("rl", "scratch"), X.Setup(data_dir="data/release", profile="paper"), 0)
    assert agent["model"]["env"]["partner_checkpoint"] == "outputs/release/partner/general/best.ckpt"


def test_the_quick_profile_trains_every_stage_less_than_tiny_and_apart_from_it(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    quick = X.Setup(profile="quick")
    config = X.stage_config(X.Config("rl", "general"), quick, 0)
    assert config["sources"][-4:] == [
        "profile/tiny/rl.yaml",
        "profile/quick/rl.yaml",
        "protocol/paper.yaml",
        "objective/lq.yaml",  # RL's objective last: it may set sizes of its own
    ]
    assert config["model"]["env"]["partner_checkpoint"] == "outputs/quick/partner/small/best.ckpt"
    assert config["model"]["pretrained_checkpoint"] == "outputs/quick/pretrain/general/best.ckpt"
    assert config["checkpoint"]["dirpath"] == "outputs/quick/rl/general/act_speech-hardcoded/seed-0"  # not over tiny's
    for stage, encoder, epochs in (("rl", "scratch", 2), ("bc", "scratch", 2), ("partner", "small", 2)):
        config = parsed_cli(stage, written(X.stage_config(X.Config(stage, encoder), quick, 0), tmp_path)).config
        assert config.trainer.max_epochs == epochs  # tiny's 8, 5 and 6
        if stage == "partner":  # tiny's sizes: the partner and DM read 64 word pieces, the agents 128
            assert config.data.context_length == 64
        else:
            assert (config.model.context_length, config.model.env.context_length) == (128, 64)
    args = written(X.stage_config(X.Config("pretrain", "general_light"), quick, 0), tmp_path)
    assert parsed_cli("pretrain", args).config.data.max_train_examples == 128


def test_prepare_encodes_the_agents_spaces_once_for_every_agent_of_a_pretrained_encoder(
    setup_dir, tmp_path, monkeypatch, capsys
):
    """With the partner, the DM and a pretrained encoder there, preparing trains nothing and leaves the encoder's
    vectors of the action and utterance spaces beside its checkpoint, where the agents' build reads them."""
    monkeypatch.chdir(ROOT)
    outputs = tmp_path / "outputs"
    trained_env_models(setup_dir, outputs)
    setup = X.Setup(seeds=(0,), data_dir=str(setup_dir / "data"), outputs=str(outputs), extra_args={"*": TINY_AGENT})
    X.prepare(X.table1(["general_light"]).configs, setup)
    out = capsys.readouterr().out
    assert " experiment spaces --profile tiny " in out and " --encoders general_light " in out and " fit " not in out
    stores = outputs / "pretrain" / "general_light" / "candidates"
    assert sorted(p.name.rsplit("-", 1)[0] for p in stores.iterdir()) == ["agent-actions", "agent-utterances"]
    assert X.preparation(X.table1(["general_light"]).configs, setup)[3][0][-1].done  # found by its key
    written = {p.name: p.stat().st_mtime_ns for p in stores.iterdir()}
    module = build_module(X.running.rl_run(X.Config("bc", "general_light"), setup, 0))
    module.build_agent()  # an agent of that encoder: its key matches, so it reads the stores and writes none
    assert {p.name: p.stat().st_mtime_ns for p in stores.iterdir()} == written
    saved = torch.load(next(stores.glob("agent-actions-*.pt")), weights_only=True)["embeddings"]
    assert torch.equal(module.agent.actions.frozen, saved) and len(saved) == len(module.action_space)


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


def _cells(setup: X.Setup, parent: str, experiment: X.Experiment) -> dict:
    client = MlflowClient(setup.tracking_uri)
    assert client.get_run(parent).info.status == "FINISHED"
    runs = X.children(client, parent)
    return {
        (table.name, row, column): X.cell_values(client, runs, cell)
        for table in experiment.tables
        for row, cells in table.rows
        for column, cell in cells.items()
    }


def test_the_plan_of_table1_names_every_preparation_step_and_child_as_a_command(tmp_path, monkeypatch):
    """30 agents (RL and BC, five encoders, three seeds), the baselines per seed, the preparation in order (general
    before adaptive, the environment's models and the spaces' vectors after them) and the tables; every agent line
    parses as its stage's command line."""
    monkeypatch.chdir(ROOT)
    setup = X.Setup(data_dir="data/default", tracking_uri=f"sqlite:///{tmp_path / 'm.db'}", outputs=str(tmp_path / "o"))
    lines = X.plan(X.table1(), setup)
    steps = [line for line in lines[1:] if line.startswith("# step")]
    assert steps == [
        "# step 1 of 8: data",
        "# step 2 of 8: pretrain general",  # adaptive starts from it
        "# step 3 of 8: pretrain light, pretrain general_light, pretrain adaptive",
        "# step 4 of 8: partner small, dm small",
        "# step 5 of 8: the partner's calibration, general vectors of the agents' spaces, light vectors of the agents' "
        "spaces, general_light vectors of the agents' spaces, adaptive vectors of the agents' spaces",
        "# step 6 of 8: bc-general-act_speech-hardcoded, bc-light-act_speech-hardcoded, "
        "bc-general_light-act_speech-hardcoded, bc-adaptive-act_speech-hardcoded, bc-scratch-act_speech-hardcoded",
        "# step 7 of 8: rl-general-act_speech-hardcoded, rl-light-act_speech-hardcoded, "
        "rl-general_light-act_speech-hardcoded, rl-adaptive-act_speech-hardcoded, rl-scratch-act_speech-hardcoded, "
        "baselines-act_speech-hardcoded",  # beside the RL agents: they need no BC agent
        "# step 8 of 8: tables",
    ]
    commands = [shlex.split(line.split("  # done")[0]) for line in lines if not line.startswith("#")]
    assert all(c[0] == "lq" for c in commands) and len(commands) == 1 + 4 + 6 + 1 + 33 + 1
    agents = [c[1:] for c in commands if c[1] in ("rl", "bc")]
    assert (
        len(agents) == 30
        and len({(a[0], resolved(a)["model"]["encoder"]["name"], resolved(a)["model"]["seed"]) for a in agents}) == 30
    )
    parent = re.search(r"parent run (\w+)", lines[0]).group(1)
    for args in agents[:2]:  # two parse fully (every one is built by the same function)
        config = parsed_cli(args[0], args[2:]).config
        assert config.trainer.logger.init_args.tags["mlflow.parentRunId"] == parent
    assert [c[1:3] for c in commands].count(["experiment", "baselines"]) == 3
    assert commands[-1][1:5] == ["experiment", "tables", "table1", "--parent"] and commands[-1][5] == parent
    assert MlflowClient(setup.tracking_uri).get_run(parent).info.status == "RUNNING"  # the tables line finishes it


def _outcomes(setup: X.Setup, parent: str) -> dict:
    """Every figure of a parent's children, by configuration and seed: the agents' zero-shot rates under both
    decodings (``test/``, ``test_greedy/``) and the baselines'."""
    client = MlflowClient(setup.tracking_uri)
    assert client.get_run(parent).info.status == "FINISHED"
    prefixes = ("test/", "test_greedy/", "test_sampled/", "baselines/")
    return {
        (r.data.tags["lq.config"], r.data.tags["lq.seed"]): {
            k: v for k, v in r.data.metrics.items() if k.startswith(prefixes)
        }
        for r in X.children(client, parent)
    }


def _check_tabulated(client, parent: str, tables: dict, setup: X.Setup, tmp_path: Path) -> None:
    """A finished Table 1 parent of the scratch encoder and two seeds: its table and the baselines' (two seeds each),
    its curves, the best agent's transcript, and that agent as a bundle logged on the parent, an MLflow model that
    plays quests."""
    md = Path(client.download_artifacts(parent, "tables/table1.md", str(tmp_path))).read_text()
    # the artifact: the same rows under short, distinct headers (the UI's artifact viewer cuts long ones)
    rows = [line for line in tables["table1"][0].splitlines() if line.startswith("| Scratch |")]
    assert rows and rows == [line for line in md.splitlines() if line.startswith("| Scratch |")] and "n/a" not in md
    header = next(line for line in md.splitlines() if line.startswith("|  |")).split(" | ")
    assert len(set(header)) == len(header) and "RL Act & Speech" in header and "RL from BC" not in md.split("\n\n")[1]
    baselines = tables["table1_baselines"][0]
    assert "n/a" not in baselines and "| Ceiling (goal in the action space) |" in baselines
    assert "| Random (valid candidates) | " in baselines and "| Demonstrations replayed | " in baselines
    assert baselines.count(" | 2 |") == 7  # two seeds each
    assert "Evaluated under protocol paper: choice among the whole spaces" in md
    assert {a.path for a in client.list_artifacts(parent, "curves")} == {"curves/rl.png", "curves/bc.png"}
    best = Path(client.download_artifacts(parent, "transcripts/best_agent.txt", str(tmp_path))).read_text()
    assert best.startswith("Best agent: ") and "=== Self act completion transcripts: " in best
    assert "\nSetting " in best and "\nMotivation " in best
    # the best agent, as a bundle logged on the parent: an MLflow model that plays quests
    import mlflow

    mlflow.set_tracking_uri(setup.tracking_uri)
    exp_id = client.get_run(parent).info.experiment_id
    (model,) = mlflow.search_logged_models(experiment_ids=[exp_id], output_format="list")
    assert model.name == "best_agent" and model.source_run_id == parent
    assert (Path(setup.outputs) / "bundles" / "table1-tiny-best" / "bundle.json").exists()
    played = mlflow.pyfunc.load_model(f"models:/{model.model_id}").predict(pd.DataFrame({"quest_id": ["test_00006"]}))
    assert list(played["quest_id"]) == ["test_00006"] and "Quest test_00006" in played["transcript"][0]


@pytest.mark.slow
def test_a_table_gives_the_same_cells_whatever_the_job_count_or_launcher(setup_dir, tmp_path, monkeypatch):
    """Table 1 for the scratch encoder two ways: the local launcher, two seeds, two children side by side (then the
    table, the curves, the best agent's transcript and its bundle as the parent's MLflow logged model); and seed 0
    alone, each job a job of submitit's local executor (real jobs, local processes). Every figure of every child (BC
    and RL, sampled and greedy, the baselines) is the same, to the last digit: each run sets its own threads
    (``threads`` param), whatever runs beside it. (The plan's lines and make rl's way: the next test.)"""
    monkeypatch.chdir(ROOT)
    experiment = X.table1(["scratch"])
    two = _tiny_setup(setup_dir, tmp_path / "two", seeds=(0, 1), jobs=2)
    parent, tables = X.run_experiment(experiment, two, log=lambda _: None)
    log_best_model(MlflowClient(two.tracking_uri), experiment, parent, two, lambda _: None)  # --log-model
    both_seeds, cells = _outcomes(two, parent), _cells(two, parent, experiment)
    assert len(cells) == 5 + 7 * 3 - 2 and all(len(v) == 2 for v in cells.values())  # every cell filled, both seeds
    expected = {k: v for k, v in both_seeds.items() if k[1] == "0"}
    assert sorted(both_seeds) == sorted([*expected, *((c, "1") for c, _ in expected)])
    agents = [k for k in expected if k[0].startswith(("rl-", "bc-"))]
    both = {"test/act_goal_rate", "test_greedy/act_goal_rate"}
    assert len(agents) == 2 and all(both <= set(expected[k]) for k in agents)
    client = MlflowClient(two.tracking_uri)
    kids = X.children(client, parent)
    assert {r.data.params.get("threads") for r in kids if r.data.tags["lq.stage"] != "baselines"} == {"1"}
    assert all(r.data.metrics["time/cpu_s"] > 0 for r in kids)  # what the table cost: every child, the baselines too
    _check_tabulated(client, parent, tables, two, tmp_path)

    jobs = Submitit(str(tmp_path / "jobs"), {"cluster": "local", "timeout_min": 30})
    submitted = _tiny_setup(setup_dir, tmp_path / "submitit", two, seeds=(0,), launcher=jobs)
    assert _outcomes(submitted, X.run_experiment(experiment, submitted, log=lambda _: None)[0]) == expected
    assert len(list((tmp_path / "jobs").glob("*_log.out"))) == 3  # RL, BC, baselines (the calibration: two's copied)


@pytest.mark.slow
def test_the_plans_lines_run_by_a_shell_and_make_rl_give_the_same_figures(setup_dir, tmp_path, monkeypatch):
    """Table 1 for the scratch encoder, seed 0, as every line ``lq experiment plan`` prints, run by a shell as printed,
    one after another (what runs is what the plan prints: ``test_what_a_plan_prints_is_what_runs``); then ``lq stage
    rl`` (make rl) on the same calibration: its BC and RL runs' figures, sampled and greedy, are the plan's children's
    to the last digit."""
    monkeypatch.chdir(ROOT)
    experiment = X.table1(["scratch"])
    planned = _tiny_setup(setup_dir, tmp_path / "plan", seeds=(0,))
    lines = X.plan(experiment, planned)
    parent = re.search(r"parent run (\w+)", lines[0]).group(1)
    commands = [line for line in lines if not line.startswith("#") and "# done:" not in line]
    assert [c.split()[1:3] for c in commands] == [
        ["experiment", "calibrate"],  # a calibration is kept beside the partner it was fit for, not copied with it
        ["bc", "fit"],
        ["rl", "fit"],  # after the BC agent it starts from
        ["experiment", "baselines"],  # beside the RL agent: they need nothing of each other
        ["experiment", "tables"],
    ]  # the data, partner and DM are there: their lines say "done"
    assert sum("# done: " in line for line in lines) == 3
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "OMP_NUM_THREADS": "2"}
    for command in commands:
        assert subprocess.run(["bash", "-c", command], env=env, cwd=ROOT, check=False).returncode == 0, command
    expected = _outcomes(planned, parent)
    cells = _cells(planned, parent, experiment)
    assert len(cells) == 5 + 7 * 3 - 2 and all(len(v) == 1 for v in cells.values())  # every cell filled
    kinds = ("baselines", "bc-scratch", "rl-scratch")
    assert sorted(c for c, _ in expected) == [f"{k}-act_speech-hardcoded" for k in kinds]
    assert (tmp_path / "plan" / "outputs" / "tables" / "table1.md").is_file()

    # make rl's way (lq stage rl): the BC agent it starts from, then the RL agent, as runs of lq-bc and lq-rl
    staged = _tiny_setup(setup_dir, tmp_path / "stage", planned, seeds=(0,))
    X.run_stage("rl", staged, "scratch")
    client = MlflowClient(staged.tracking_uri)
    for stage in ("bc", "rl"):
        [run] = client.search_runs([client.get_experiment_by_name(f"lq-{stage}").experiment_id])
        figures = {k: v for k, v in run.data.metrics.items() if k.startswith(("test/", "test_greedy/"))}
        assert figures == expected[(f"{stage}-scratch-act_speech-hardcoded", "0")], stage


class RecordingLocal(Local):
    """The local launcher, keeping the labels and arguments of every job it ran."""

    def __init__(self, logs: str | None = None):
        super().__init__(logs)
        self.ran: list[tuple[str, list[str]]] = []

    def run_graph(self, tasks, width):
        def recorded(task):
            def due():
                if task.due is None or task.due():
                    self.ran.append((task.label, list(task.args)))
                    return True
                return False

            return dataclasses.replace(task, due=due)

        super().run_graph([recorded(task) for task in tasks], width)


@pytest.mark.slow
def test_make_rl_stopped_in_one_seeds_rl_goes_on_from_its_last_checkpoint_and_keeps_the_finished_seed(
    setup_dir, tmp_path, monkeypatch
):
    """make rl SEEDS="0 1" JOBS=2 on a new store (its BC, then RL children create lq-bc and lq-rl side by side);
    Ctrl-C reaches seed 0's RL after its first epoch and the run fails there, while seed 1 finishes. Run again
    (make rl, or make rl RESUME=1: the same), only seed 0's RL runs, from its last checkpoint, to the uninterrupted
    run's curve and figures; nothing finished is trained again, and the table reads the episodes each agent's run
    played after fitting and logged (val and test goal rates, transcripts) instead of playing them again."""
    monkeypatch.chdir(ROOT)

    def setup(name: str, flag: Path, seeds: tuple[int, ...], calibrated: X.Setup | None = None) -> X.Setup:
        rl = [*TINY_TABLE["rl"], "--trainer.max_epochs=2", stop_once(flag, 2, seed=0)]  # SIGINT: Ctrl-C
        kwargs = {"seeds": seeds, "jobs": 2, "extra_args": {**TINY_TABLE, "rl": rl}, "launcher": RecordingLocal()}
        return _tiny_setup(setup_dir, tmp_path / name, calibrated, **kwargs)

    never = tmp_path / "never"
    never.write_text("")
    whole = setup("whole", never, (0,))
    X.run_stage("rl", whole, "scratch")

    stopped = setup("stopped", tmp_path / "ctrl-c", (0, 1), calibrated=whole)
    with pytest.raises(launchers.JobFailed) as failed:
        X.run_stage("rl", stopped, "scratch", compare=True)
    assert [f.label for f in failed.value.failures] == ["rl scratch-act_speech-hardcoded s0"]
    rl = {seed: Path(stopped.agent_checkpoint("rl", "scratch", "act_speech", "hardcoded", seed)) for seed in (0, 1)}
    assert finished(rl[1]) and not finished(rl[0])
    kept = rl[1].stat().st_mtime_ns
    first = len(stopped.launcher.ran)

    lines = []
    X.run_stage("rl", stopped, "scratch", compare=True, log=lines.append)
    again = stopped.launcher.ran[first:]
    assert [label for label, _ in again] == ["rl scratch-act_speech-hardcoded s0", "eval scratch-act_speech-hardcoded"]
    assert again[0][1][-2:] == ["--ckpt_path", str(rl[0].parent / "last.ckpt")]
    assert f"[rl scratch-act_speech-hardcoded s0] goes on from {rl[0].parent / 'last.ckpt'}" in lines
    assert rl[1].stat().st_mtime_ns == kept and finished(rl[0])

    client = MlflowClient(stopped.tracking_uri)
    logs = Path(stopped.outputs, "logs", "tiny")
    resumed_log = (logs / "rl_scratch-act_speech-hardcoded_s0.log").read_text()
    assert "Restoring states from the checkpoint path at " in resumed_log
    evaluation = (logs / "eval_scratch-act_speech-hardcoded.log").read_text()
    assert evaluation.count("read, not played again") == 4  # two RL and two BC agents: computed once, by their runs

    def runs(store: MlflowClient, stage: str) -> dict[str, object]:
        found = store.search_runs([store.get_experiment_by_name(f"lq-{stage}").experiment_id], "status = 'FINISHED'")
        return {r.data.tags["lq.seed"]: r for r in found}

    reference = MlflowClient(whole.tracking_uri)
    [expected], done = runs(reference, "rl").values(), runs(client, "rl")
    assert sorted(done) == ["0", "1"] and sorted(runs(client, "bc")) == ["0", "1"]
    resumed = done["0"]
    for metric in ("rl/return", "rl/act_goal_rate"):
        history = {p.step: p.value for p in client.get_metric_history(resumed.info.run_id, metric)}
        whole_history = {p.step: p.value for p in reference.get_metric_history(expected.info.run_id, metric)}
        assert history and history == {step: whole_history[step] for step in history}, metric
    for run in [*done.values(), *runs(client, "bc").values()]:  # what a table needs, on each child run
        assert {"val/act_and_speech_goal_rate", "test/act_goal_rate", "test/speech_goal_rate",
                "test/act_and_speech_goal_rate", "test_greedy/act_goal_rate"} <= set(run.data.metrics)  # fmt: skip
        assert "transcripts/test_seed0.html" in [a.path for a in client.list_artifacts(run.info.run_id, "transcripts")]
    figures = {k: v for k, v in resumed.data.metrics.items() if k.startswith(("test/", "test_greedy/", "val/"))}
    assert figures == {k: v for k, v in expected.data.metrics.items() if k in figures}


@pytest.mark.slow
def test_a_child_killed_mid_training_is_marked_killed_and_resuming_gives_the_uninterrupted_figures(
    setup_dir, tmp_path, monkeypatch
):
    """kill -9 of the BC child after its first epoch (its best.ckpt written): the driver says which child, with its
    log; MLflow holds it KILLED, not RUNNING; its checkpoint does not count as done and no RL run starts; --resume
    trains it again, then RL, killed in turn after its first epoch; a second --resume goes on from RL's last
    checkpoint, and every figure equals the uninterrupted run's."""
    monkeypatch.chdir(ROOT)
    experiment = X.table1(["scratch"])

    def setup(name: str, flag: Path, rl_flag: Path, calibrated: X.Setup | None = None) -> X.Setup:
        bc = [*TINY_TABLE["bc"], "--trainer.max_epochs=2", stop_once(flag, 9)]  # the flag there: nothing stops
        rl = [*TINY_TABLE["rl"], "--trainer.max_epochs=2", stop_once(rl_flag, 9)]
        extra = {**TINY_TABLE, "bc": bc, "rl": rl}
        return _tiny_setup(setup_dir, tmp_path / name, calibrated, seeds=(0,), extra_args=extra)

    never = tmp_path / "never"
    never.write_text("")
    whole = setup("whole", never, never)
    expected = _outcomes(whole, X.run_experiment(experiment, whole, log=lambda _: None)[0])

    killed = setup("killed", tmp_path / "kill-bc", tmp_path / "kill-rl", calibrated=whole)  # the same calibration
    with pytest.raises(launchers.JobFailed) as failed:
        X.run_experiment(experiment, killed, log=lambda _: None)
    [failure] = failed.value.failures
    log = tmp_path / "killed" / "outputs" / "logs" / "tiny" / "bc-scratch-act_speech-hardcoded_s0.log"
    assert str(failure).startswith(f"bc-scratch-act_speech-hardcoded s0 was killed by SIGKILL (its log: {log})")
    assert log.read_text().startswith("Seed set to 0\n")  # the child's own output
    client = MlflowClient(killed.tracking_uri)
    [parent] = X.parent_runs(client, "table1")
    runs = client.search_runs([parent.info.experiment_id])
    status = {r.data.tags.get("lq.config", "parent"): r.info.status for r in runs}
    assert status == {"parent": "FAILED", "bc-scratch-act_speech-hardcoded": "KILLED"}  # the RL child never started
    bc = Path(killed.agent_checkpoint("bc", "scratch", "act_speech", "hardcoded", 0))
    assert bc.is_file() and not finished(bc)  # its first epoch's checkpoint, not a finished agent

    # resumed: BC trained again to the end, then the RL child, killed after its first epoch
    with pytest.raises(launchers.JobFailed, match="rl-scratch-act_speech-hardcoded s0 was killed by SIGKILL"):
        X.run_experiment(experiment, killed, log=lambda _: None, resume=True)
    assert finished(bc)
    pid = X.run_experiment(experiment, killed, log=lambda _: None, resume=True)[0]
    assert pid == parent.info.run_id
    log = (tmp_path / "killed" / "outputs" / "logs" / "tiny" / "rl-scratch-act_speech-hardcoded_s0.log").read_text()
    assert "Restoring states from the checkpoint path at " in log  # Lightning's: it went on, not from the start
    assert _outcomes(killed, pid) == expected
    # the RL child killed and resumed is one MLflow run (not a KILLED and a FINISHED one), whose history is whole:
    # every training metric at every step as the uninterrupted run logged it
    histories = []
    for store in (whole, killed):
        client = MlflowClient(store.tracking_uri)
        runs = client.search_runs([client.get_experiment_by_name("lq-table1").experiment_id], "tags.lq.stage = 'rl'")
        assert [r.info.status for r in runs] == ["FINISHED"]
        keys = [k for k in runs[0].data.metrics if not k.startswith("time/")]  # the wall and CPU times differ
        history = client.get_metric_history
        histories.append({k: [(m.step, m.value) for m in history(runs[0].info.run_id, k)] for k in keys})
    assert histories[1] == histories[0] and any(len(h) > 1 for h in histories[0].values())


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("chromium") is None, reason="Debian's chromium is not installed (apt-get install chromium)"
)
def test_the_mlflow_ui_shows_the_parent_its_children_and_the_table_in_a_real_browser(tmp_path, monkeypatch):
    import importlib.util

    monkeypatch.chdir(tmp_path)  # the store's artifacts go under tmp_path/mlruns
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    experiment = X.table1(["scratch"])
    parent = _fake_children(MlflowClient(uri), experiment, {"test/act_goal_rate": [0.2, 0.4]})
    X.build_tables(experiment, parent, uri, log=lambda _: None)
    spec = importlib.util.spec_from_file_location("ui_screenshot", ROOT / "experiments" / "ui_screenshot.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    # an agent run's HTML transcript, as every BC and RL run logs it
    from lq.eval import transcripts_html

    client = MlflowClient(uri)
    agent = client.create_run(client.get_run(parent).info.experiment_id).info.run_id
    episode = {
        "card": {"quest_id": "q1", "goal": "hug dragon", "setting": "A cave.", "motivation": "I want a hug."},
        "turns": [
            {"side": "partner", "name": "dragon", "kind": "speech", "text": "Who goes there?"},
            {
                "side": "self",
                "name": "knight",
                "kind": "action",
                "text": "hug dragon",
                "result": "You hug the dragon.",
                "reached_goal": True,
            },
        ],
        "act_goal_by": "self",
        "speech_goal": False,
        "steps": 1,
    }
    client.log_text(agent, transcripts_html([episode] * 40, "RL scratch, test, seed 0"), "transcripts/test_seed0.html")
    client.set_terminated(agent, "FINISHED")
    out = tmp_path / "ui"
    argv = ["--tracking-uri", uri, "--experiment", "table1", "--out", str(out), "--transcript-run", agent]
    assert script.main(argv) == 0
    from PIL import Image

    for name in ("runs", "parent", "table", "compare", "transcript"):
        for width in (1366, 1600):  # a laptop's and a desktop's screen
            data = (out / f"{name}-{width}.png").read_bytes()
            assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
            assert Image.open(out / f"{name}-{width}.png").width == width
    # the page itself is painted where the UI shows the artifact (not just the UI's frame around an empty iframe)
    artifact_view = Image.open(out / "transcript-1366.png").convert("L").crop((460, 200, 1160, 900))
    assert len(set(artifact_view.get_flattened_data())) > 20


def test_the_claims_verdicts_by_hand():
    from lq.experiments.claims import verdict

    assert verdict([0.5, 0.6, 0.7], [0.1, 0.2, 0.3]) == "holds"
    assert verdict([0.1, 0.2, 0.3], [0.5, 0.6, 0.7]) == "does not hold"
    # a difference of 0.02 against a standard error of sqrt(2 * 0.01 / 3) = 0.082
    assert verdict([0.42, 0.52, 0.62], [0.40, 0.50, 0.60]) == "within noise"
    assert verdict([0.9], [0.1]) == "not tested (one seed)" and verdict([], [0.1, 0.2]) == "not run"


def test_the_results_page_is_generated_from_the_store_the_same_twice_with_each_ordering_marked(tmp_path, capsys):
    """Table 1 under both objectives in one store: the page holds both parents' tables, each with its identity, and
    marks RL against BC per objective; a second build from the same store writes the same bytes."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    rates = {"paper": {"rl": [0.10, 0.12, 0.14], "bc": [0.30, 0.32, 0.34]},
             "lq": {"rl": [0.50, 0.52, 0.54], "bc": [0.30, 0.32, 0.34]}}  # fmt: skip
    for objective in ("paper", "lq"):
        experiment = X.table1(["scratch"], objective=objective)
        setup = X.Setup(seeds=(0, 1, 2), tracking_uri=uri, outputs=str(tmp_path / "o"), objective=objective)
        pid, _ = X.parents.open_parent(client, experiment, setup, False, print)
        exp_id = client.get_run(pid).info.experiment_id
        for config in experiment.configs:
            for seed in range(3):
                tags = {"mlflow.parentRunId": pid, "lq.config": config.key, "lq.seed": str(seed)}
                child = client.create_run(exp_id, tags=tags).info.run_id
                if config.stage in ("rl", "bc"):
                    client.log_metric(child, "test/act_and_speech_goal_rate", rates[objective][config.stage][seed])
                else:
                    client.log_metric(child, "baselines/overlap_all/act_and_speech_goal_rate", 0.3)
                client.set_terminated(child, "FINISHED")
        client.set_terminated(pid, "FINISHED")
    page = tmp_path / "docs" / "current.md"
    argv = ["experiment", "report", "--tracking-uri", uri, "--page", str(page)]
    assert main(argv) == 0
    first = page.read_bytes()
    assert main(argv) == 0 and page.read_bytes() == first
    text = first.decode()
    sections = {part.splitlines()[0]: part for part in text.split("\n## ")[1:]}
    paper = sections["Table 1: encoder types, RL (paper objective)"]
    lq = sections["Table 1: encoder types, RL from BC + imitation (lq objective)"]
    assert "profile `tiny`, protocol `paper`, objective `paper`" in paper and "objective `lq`" in lq
    # a marked line quotes its cells as the table above prints them (population std: 0.016 for 0.10, 0.12, 0.14)
    row = next(line for line in paper.splitlines() if line.startswith("| Scratch |"))
    assert "| 0.120 ± 0.016 |" in row and "| 0.320 ± 0.016 |" in row
    assert (
        "- RL above BC (Scratch, act & speech goals): 0.120 ± 0.016 against 0.320 ± 0.016: **does not hold**" in paper
    )
    assert "- RL above BC (Scratch, act & speech goals): 0.520 ± 0.016 against 0.320 ± 0.016: **holds**" in lq
    assert "## Not run yet at this profile and protocol" in text and "- table2 (lq objective)" in text
    # an experiment is listed under the objectives its spec runs (the others it refuses), Tables 4/5 under none
    assert "- generalisation (lq objective)" in text and "- generalisation (paper objective)" not in text
    assert "- table45\n" in text and "- deviations (paper objective)" in text and "deviations (lq" not in text


def test_the_deviation_table_adds_each_of_lqs_departures_to_the_paper_objective_alone(tmp_path):
    """Row 1 is the paper objective, each further row one departure on top of it (its own folder), the last lq's
    objective; every row's command line parses to the paper's settings but for what it names."""
    setup = X.Setup(seeds=(0,), objective="paper", outputs=str(tmp_path / "o"))
    experiment = X.EXPERIMENTS["deviations"](objective="paper")
    rows = [row for row, _ in experiment.tables[0].rows]
    assert rows[0] == "RL (paper objective)" and rows[-2:] == ["RL from BC + imitation (lq objective)", "BC"]
    columns = list(experiment.tables[0].rows[0][1])
    assert columns[:3] == ["Val act goals", "Val speech goals", "Val act & speech"] and columns[3] == "Act goals"
    paper = dict(build_module(X.running.rl_run(X.Config("rl", "scratch"), setup, 0)).hparams)
    changed = {}
    for config in (c for c in experiment.configs if c.stage == "rl"):
        hparams = dict(build_module(X.running.rl_run(config, setup, 0)).hparams)
        changed[config.variant] = {k for k in hparams if hparams[k] != paper[k]} - {"bc_checkpoint"}
        folder = X.stage_config(config, setup, 0)["checkpoint"]["dirpath"]
        assert folder == f"{tmp_path}/o/rl-paper" + f"/{config.variant}" * bool(config.variant) + AGENT
    assert changed["bc_start"] == {"init_from"} and changed["valid_mean"] == {"valid_reduction"}
    assert changed["lr"] == {"lr", "adam_betas"} and changed["turns30"] == {"max_steps"}
    assert changed["gain_lr"] == {"gain_lr_scale"}
    assert changed["no_exact_match"] == {"agent"} and changed["no_objects"] == {"env"}
    assert {"init_from", "valid_reduction", "normalize_advantages", "lr", "num_envs", "coefficients"} <= changed["lq"]
    assert changed[""] == set() and all(changed[v] for v in changed if v)
    # the rows that start from BC start from the experiment's own BC children: no BC start of a variant is prepared
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "manifest.json").touch()
    prepared = X.preparation(experiment.configs, dataclasses.replace(setup, data_dir=str(tmp_path / "data")))
    assert not [s.label for wave, _ in prepared for s in wave if s.label.startswith("bc ")]
    with pytest.raises(ValueError, match="run it with --objective paper, not lq"):
        X.EXPERIMENTS["deviations"](objective="lq")


def test_the_candidates_table_adds_each_sharper_agent_change_to_lqs_objective_alone(tmp_path):
    """lq's default is chosen among its objective and each candidate added to it (its own folder under lq's RL
    folder); each row parses to lq's settings but for what its candidate names; BC and the baselines beside."""
    setup = X.Setup(seeds=(0,), objective="lq", outputs=str(tmp_path / "o"))
    experiment = X.EXPERIMENTS["candidates"]()
    rows = [row for row, _ in experiment.tables[0].rows]
    assert (
        rows[0] == "RL from BC + imitation (lq objective)"
        and rows[-1] == "BC"
        and len(rows) == 2 + len(X.specs.CANDIDATES)
    )
    assert list(experiment.tables[0].rows[0][1])[:3] == ["Val act goals", "Val speech goals", "Val act & speech"]
    lq = dict(build_module(X.running.rl_run(X.Config("rl", "scratch"), setup, 0)).hparams)
    changed = {}
    for config in (c for c in experiment.configs if c.stage == "rl"):
        hparams = dict(build_module(X.running.rl_run(config, setup, 0)).hparams)
        changed[config.variant] = {k: hparams[k] for k in hparams if hparams[k] != lq[k]}
        folder = X.stage_config(config, setup, 0)["checkpoint"]["dirpath"]
        assert folder == f"{tmp_path}/o/rl" + f"/{config.variant}" * bool(config.variant) + AGENT
    assert changed.pop("") == {} and list(changed) == list(X.specs.CANDIDATES)
    for variant, hparams in changed.items():  # what its arguments name, and something lq's objective does not have
        named = {arg.removeprefix("--model.").split(".")[0] for arg in X.specs.DEPARTURES[variant][1][::2]}
        assert hparams and set(hparams) <= named, variant
    with pytest.raises(ValueError, match="run it with --objective lq, not paper"):
        X.EXPERIMENTS["candidates"](objective="paper")


def test_a_parent_keeps_its_rows_variants_so_its_table_reads_back_as_it_ran(tmp_path):
    """The candidates and deviation tables' rows change as defaults are chosen: a parent records the variants it ran
    (param ``variants``), its tables are read back with those rows whatever today's list, and it resumes only with
    the same ones."""
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'm.db'}"
    client = MlflowClient(uri)
    setup = X.Setup(seeds=(0,), objective="lq", tracking_uri=uri, outputs=str(tmp_path / "o"))
    ran = X.EXPERIMENTS["candidates"](variants=["temperature"])
    pid, _ = X.parents.open_parent(client, ran, setup, False, print)
    assert client.get_run(pid).data.params["variants"] == "temperature"
    rows = [row for row, _ in X.experiment_for(client, pid).tables[0].rows]
    assert rows == [
        "RL from BC + imitation (lq objective)",
        "+ a learned temperature per head, with the gain, at 30 times the learning rate",
        "BC",
    ]
    with pytest.raises(ValueError, match="ran variants 'temperature', not 'valid_positives'"):
        X.parents.open_parent(client, X.EXPERIMENTS["candidates"](), setup, True, print)
    with pytest.raises(ValueError, match="unknown variant sharper: choose from bc_start"):
        X.EXPERIMENTS["candidates"](variants=["sharper"])


def test_a_tables_rl_children_run_seed_by_seed_so_a_table_cut_short_has_every_row(tmp_path):
    """Every configuration's first seed is trained before any configuration's second: a table stopped half-way (a
    session's end) has every row at one seed rather than some rows at three and others at none."""
    setup = X.Setup(seeds=(0, 1, 2), objective="paper", outputs=str(tmp_path / "o"))
    experiment = X.EXPERIMENTS["deviations"](objective="paper")
    waves = X.running.child_waves(experiment, setup, "pid", done={("rl-scratch-act_speech-hardcoded", "0")})
    rl = [step.label for steps, _ in waves for step in steps if step.config.stage == "rl"]
    seeds = [int(label.rsplit(" s", 1)[1]) for label in rl]
    rows = len({step.config.key for steps, _ in waves for step in steps if step.config.stage == "rl"})
    assert seeds == sorted(seeds) and seeds.count(0) == rows - 1 and seeds.count(2) == rows
    assert rl[0] != "rl-scratch-act_speech-hardcoded s0"  # the finished child is not trained again


def test_a_child_that_another_needs_keeps_its_own_arguments(tmp_path):
    """An RL child needs the BC child it starts from (one run, whoever names it): the BC child's command line is its
    own, with the setup's extra arguments, whichever of the two the layers meet first."""
    setup = X.Setup(seeds=(0,), outputs=str(tmp_path / "o"), extra_args={"*": ["--model.candidate_dim=16"]})
    experiment = X.table1(["scratch"])
    experiment.configs = [c for c in experiment.configs if c.stage == "rl"] + [
        c for c in experiment.configs if c.stage != "rl"
    ]
    waves = X.running.child_waves(experiment, setup, "pid")
    [bc] = [s for steps, _ in waves for s in steps if s.config.stage == "bc"]
    assert bc.run.config["model"]["candidate_dim"] == 16 and bc.run.config["eval_seeds"] == setup.eval_seeds
    assert [s.config.stage for s in waves[0][0]] == ["bc"]  # before the RL agent that starts from it


def test_table45_of_adaptive_alone_pretrains_the_general_encoder_of_each_seeds_folder(tmp_path):
    """The adaptive encoder starts from the general one of its seed's folder: where the table has no general row,
    preparing it trains that one per seed (its seed, its folder), not the agents' general encoder."""
    setup = X.Setup(seeds=(0, 1), outputs=str(tmp_path / "o"))
    experiment = X.EXPERIMENTS["table45"](["adaptive"])
    waves = X.preparation(experiment.configs, setup, experiment.name)
    pretrained = [s.run.config for steps, _ in waves for s in steps if s.label == "pretrain general"]
    assert [(c["checkpoint"]["dirpath"], c["seed_everything"]) for c in pretrained] == [
        (f"{tmp_path}/o/experiments/table45/seed-{seed}/general", seed) for seed in (0, 1)
    ]
    children = X.running.child_waves(experiment, setup, "pid")
    assert [s.label for steps, _ in children for s in steps] == ["pretrain-adaptive s0", "pretrain-adaptive s1"]


def test_table45_trains_scratch_on_the_timelines_and_each_variant_in_its_own_folder(tmp_path):
    """Tables 4/5's Scratch model learns the two timeline tasks alone; a quest-count child cuts the training quests;
    the ATOMIC child trains General+Light's tasks with ATOMIC in place of ATOMIC-LIGHT; each variant has a folder of
    its own beside its seed's encoders (never over them) and a child name of its own."""
    setup = X.Setup(seeds=(0,), outputs=str(tmp_path / "o"))
    experiment = X.table45(["scratch", "general_light"])
    runs = {c.key: X.running.child_run(c, setup, 0, experiment.name) for c in experiment.configs}
    assert sorted(runs) == [
        "pretrain-general_light", "pretrain-general_light-atomic", "pretrain-general_light-quests12",
        "pretrain-general_light-quests25", "pretrain-scratch", "pretrain-scratch-quests12", "pretrain-scratch-quests25",
        "pretrain-scratch-quests50"
    ]  # fmt: skip

    def arg(key, name):
        value = runs[key].config
        for part in name.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value

    def extra(key, name):  # what the child's own arguments say (not its config files)
        args = runs[key].extra
        return args[len(args) - 1 - args[::-1].index(name) + 1] if name in args else None  # the last one counts

    seed = f"{tmp_path}/o/experiments/table45/seed-0"
    assert arg("pretrain-scratch", "checkpoint.dirpath") == f"{seed}/scratch"
    assert arg("pretrain-scratch-quests12", "checkpoint.dirpath") == f"{seed}/quests12/scratch"
    assert arg("pretrain-scratch-quests12", "model.encoder.tasks") == X.specs.SCRATCH_TASKS
    assert {k: arg(k, "data.max_train_quests") for k in runs} == {
        "pretrain-scratch": None, "pretrain-general_light": None, "pretrain-general_light-atomic": None,
        "pretrain-scratch-quests12": 12, "pretrain-scratch-quests25": 25, "pretrain-scratch-quests50": 50,
        "pretrain-general_light-quests12": 12, "pretrain-general_light-quests25": 25}  # fmt: skip
    atomic = arg("pretrain-general_light-atomic", "model.encoder.tasks")
    tasks = X.specs.encoder_tasks("general_light")
    assert "atomic_light" in tasks and atomic == {("atomic" if t == "atomic_light" else t): w for t, w in tasks.items()}
    assert extra("pretrain-general_light", "--model.encoder.tasks") is None  # its config's own tasks
    assert arg("pretrain-general_light", "model.encoder.tasks") == tasks
    assert arg("pretrain-general_light-atomic", "checkpoint.dirpath") == f"{seed}/atomic/general_light"
    labels = [s.label for steps, _ in X.running.child_waves(experiment, setup, "pid") for s in steps]
    assert sorted(labels) == sorted(f"{k} s0" for k in runs)
    # at the tiny profile (and its overlay quick) Scratch learns every training timeline with the agents' Scratch
    # encoder, its file read last; a profile without the file (paper) trains conf/encoder/scratch.yaml as it is
    for profile, files in (("tiny", True), ("quick", True), ("paper", False)):
        at = dataclasses.replace(setup, profile=profile)
        for key, config in ((c.key, c) for c in experiment.configs):
            read = X.running.child_run(config, at, 0, experiment.name).config["sources"]
            reads_it = key.startswith("pretrain-scratch") and files
            named = "profile/tiny/timeline_scratch.yaml"
            assert read.count(named) == reads_it and (read[-1] == named) == reads_it, (profile, key)


def test_an_rl_child_stopped_mid_training_resumes_from_its_own_last_checkpoint_only(tmp_path):
    """A killed RL child's last.ckpt is resumed from (``--ckpt_path``) where it holds the rollout and the very
    hyperparameters the child would be built with; another run's, one without its rollout or a finished run's is not."""
    setup = X.Setup(seeds=(0,), outputs=str(tmp_path / "o"))
    experiment = X.table1(["scratch"])
    run = X.running.run_of(X.Config("rl", "scratch"), setup, 0)
    last = Path(run.outputs["last"])

    def rl_step() -> list[str]:
        waves = X.running.child_waves(experiment, setup, "pid")
        [step] = [s for steps, _ in waves for s in steps if s.config.stage == "rl"]
        return list(step.args)

    # the child as it was launched: its resolved config, under its parent's tags (what only reports does not count)
    child = run.kind.child(run, experiment.name, "pid", {"mlflow.parentRunId": "pid"}, setup.tracking_uri)
    child.kind.write(child)
    torch.save({"lq_rollout": torch.zeros(1)}, last)
    assert X.running.resumable(run) == str(last) and rl_step()[-2:] == ["--ckpt_path", str(last)]
    other = dataclasses.replace(run, extra=(*run.extra, "--model.lr", "1.0"))
    other.kind.write(other)
    assert X.running.resumable(run) is None and "--ckpt_path" not in rl_step()  # another run's: trained anew
    run.kind.write(run)
    torch.save({}, last)
    assert X.running.resumable(run) is None  # no rollout to go on from: it would not give the same figures
    torch.save({"lq_rollout": torch.zeros(1)}, last)
    (last.parent / "agent.ckpt").touch()
    mark_finished(last.parent / "agent.ckpt")
    assert X.running.resumable(run) is None  # finished: nothing to resume


def test_a_child_launched_anew_and_stopped_at_once_is_not_resumed_from_an_earlier_runs_last_checkpoint(tmp_path):
    """Two parents share a configuration's folder (a deviation table's first row is Table 1's Scratch): the second
    parent's child, launched anew where the first's finished, and killed before its first checkpoint, is trained
    anew on resume, not resumed from the first run's last.ckpt (it would report that run's weights as its own)."""
    setup = X.Setup(seeds=(0,), outputs=str(tmp_path / "o"))
    experiment = X.table1(["scratch"])
    run = X.running.run_of(X.Config("rl", "scratch"), setup, 0)
    last = Path(run.outputs["last"])

    def rl_step() -> X.running.Step:
        waves = X.running.child_waves(experiment, setup, "second")
        [step] = [s for steps, _ in waves for s in steps if s.config.stage == "rl"]
        return step

    run.kind.write(run)  # the first parent's child: trained to its end, its last.ckpt (with its rollout) kept
    torch.save({"lq_rollout": torch.zeros(1)}, last)
    Path(run.checkpoint).touch()
    mark_finished(run.checkpoint)
    step = rl_step()
    assert "--ckpt_path" not in step.args  # finished: the second parent's child starts anew
    step.write()  # launched, then killed before it saved a checkpoint
    assert not last.exists() and X.running.resumable(run) is None and "--ckpt_path" not in rl_step().args
    torch.save({"lq_rollout": torch.zeros(1)}, last)  # its own last.ckpt, once saved: resumed from, and kept so
    step = rl_step()
    assert step.args[-2:] == ["--ckpt_path", str(last)]
    step.write()
    assert last.exists()


def test_the_deviation_tables_reading_marks_which_departure_moves_which_column():
    from lq.experiments.claims import departure_matrix

    experiment = X.EXPERIMENTS["deviations"](objective="paper")
    base, bc_start = experiment.tables[0].rows[0][0], experiment.tables[0].rows[1][0]
    values = {(base, "Act goals"): [0.50, 0.52, 0.54], (bc_start, "Act goals"): [0.70, 0.72, 0.74],
              (base, "Speech goals"): [0.20, 0.22, 0.24], (bc_start, "Speech goals"): [0.21, 0.23, 0.25],
              (base, "Act & Speech"): [0.20, 0.22, 0.24], (bc_start, "Act & Speech"): [0.10, 0.12, 0.14]}  # fmt: skip

    def cells() -> list[str]:
        row = next(line for line in departure_matrix(experiment, values) if line.startswith(f"| {bc_start} |"))
        return row.removesuffix(" |").split(" | ")[4:7]

    # act goals up, speech goals within noise, act & speech down; in brackets the difference over its standard error:
    # 0.2 / sqrt(2 * 0.0004 / 3) = 12.2, 0.01 / 0.0163 = 0.6
    assert cells() == ["+ (+12.2)", "· (+0.6)", "− (−6.1)"]
    values[(bc_start, "Speech goals")] = [0.19, 0.22, 0.25]  # the same mean: no difference, and no sign on it
    assert cells()[1] == "· (0.0)"
    values[(bc_start, "Act goals")] = [0.70]
    assert cells()[0] == "?"  # one seed: no verdict and no distance


def test_a_tables_identity_names_the_partner_and_dm_its_children_played_and_says_where_they_differ():
    """The identity line's environment models come from the children's ``lq.partner`` and ``lq.dm`` tags: nothing for
    children from before they were tagged, one pair where all agree, each pair counted where they do not."""
    from types import SimpleNamespace

    from lq.experiments.claims import environment_models

    def child(**tags):
        return SimpleNamespace(data=SimpleNamespace(tags={f"lq.{k}": v for k, v in tags.items()}))

    assert environment_models([child(), child()]) == ""
    same = [child(partner="aa", dm="bb"), child(partner="aa", dm="bb")]
    assert environment_models(same) == ", partner `aa`, DM `bb`"
    assert environment_models([*same, child(partner="cc", dm="bb"), child()]) == (
        ", children against different environment models: partner `aa`, DM `bb` (2 children); "
        "partner `cc`, DM `bb` (1 child); not recorded (1 child)"
    )


def test_the_budget_reading_names_the_first_budget_that_passes_each_bar_on_validation_and_its_test_figures():
    """Chosen on validation, reported on test: the first budget whose validation act & speech goals are above the bar
    by one standard error; at none where every budget with two seeds is not; one seed's figures given without a
    verdict; lq's objective has no 1M row (no seed of it goes there)."""
    from lq.experiments.claims import budget_reading

    experiment = X.EXPERIMENTS["budget"](objective="paper")
    assert "RL (lq objective), 1M interactions" not in [row for row, _ in experiment.tables[0].rows]
    paper = "RL (paper objective), {} interactions".format
    val, test = "Val act & speech", "Act & Speech"
    budget = {("BC", val): [0.12, 0.13, 0.14], ("BC", test): [0.10, 0.10, 0.10],
              (paper("32k"), val): [0.05, 0.06, 0.07], (paper("100k"), val): [0.12, 0.14, 0.13],
              (paper("320k"), val): [0.30, 0.31, 0.32], (paper("320k"), test): [0.20, 0.21, 0.22],
              (paper("1M"), val): [0.50]}  # fmt: skip
    overlap = {("Word overlap (whole spaces)", val): [0.40, 0.41, 0.42]}
    lines = budget_reading(experiment, {"budget": budget, "budget_baselines": overlap})
    said = [line for line in lines if line.startswith("- ")]
    assert said == [
        "- RL (paper objective), act & speech above BC on validation: first at 320k interactions (0.310 ± 0.008 "
        "against 0.130 ± 0.008); on test there 0.210 ± 0.008 against 0.100 ± 0.000: **holds**.",
        "- RL (paper objective), act & speech above word overlap on validation: at none of 32k, 100k, 320k; at 1M one "
        "seed: 0.500 against 0.410 ± 0.008.",
        "- RL (lq objective), act & speech above BC on validation: not tested yet.",
        "- RL (lq objective), act & speech above word overlap on validation: not tested yet.",
    ]
    row = next(line for line in lines if line.startswith(f"| {paper('32k')} |"))
    assert row.split(" | ")[1:3] == ["− (−8.6)", "− (−42.9)"]  # 0.07 / sqrt(2 * 0.0001 / 3); 0.35 / 0.00816
    assert next(line for line in lines if line.startswith(f"| {paper('100k')} |")).split(" | ")[1] == "· (0.0)"


def test_the_candidates_table_names_its_choice_by_the_rule_fixed_before_it_ran():
    """The candidate above lq's objective in validation act & speech goals by one standard error, and below it in no
    validation column, is chosen; of two, the higher; none while a candidate has one seed; none if none passes."""
    from lq.experiments.claims import choice

    experiment = X.EXPERIMENTS["candidates"](variants=["gain_lr", "temperature", "valid_positives"])
    base, gain, temperature, positives, bc = (row for row, _ in experiment.tables[0].rows)
    flat = [0.20, 0.22, 0.24]
    values = {(row, c): flat for row in (base, gain, temperature, positives, bc) for c in
              ("Val act goals", "Val speech goals", "Val act & speech")}  # fmt: skip
    values[(bc, "Val act & speech")] = [0.9, 0.91, 0.92]  # BC is no candidate
    assert choice(experiment, values).endswith("none: no candidate is above RL from BC + imitation (lq objective) "
                                               "by the rule; its objective stays.")  # fmt: skip
    values[(gain, "Val act & speech")] = [0.30, 0.32, 0.34]
    values[(temperature, "Val act & speech")] = [0.40, 0.42, 0.44]
    values[(temperature, "Val act goals")] = [0.10, 0.11, 0.12]  # above in act & speech, below in act goals
    assert f"** {gain} (val act & speech 0.320 ± 0.016 against 0.220 ± 0.016;" in choice(experiment, values)
    values[(temperature, "Val act goals")] = flat
    assert f"** {temperature} (val act & speech 0.420" in choice(experiment, values)
    values[(positives, "Val act & speech")] = [0.5]
    assert choice(experiment, values).endswith("not yet: 1 of 3 candidates have fewer than two seeds.")


RUN_ID = re.compile(r"\b[0-9a-f]{32}\b")


def _printed_jobs(out: str) -> list[str]:
    """The command lines a plan printed that a run would launch: not those whose output exists (``# done``), not the
    tables line (the driver builds the tables itself); run ids as RUN."""
    lines = [line for line in out.splitlines() if line.startswith("lq ") and "  # done: " not in line]
    return [RUN_ID.sub("RUN", line) for line in lines if not line.startswith("lq experiment tables ")]


@pytest.mark.parametrize(
    "command",
    [
        *(
            ["stage", stage, "--encoder", encoder]
            for stage, encoder in (
                ("pretrain", "adaptive"),
                ("partner", "small"),
                ("dm", "small"),
                ("bc", "light"),
                ("rl", "scratch"),
            )
        ),
        ["stage", "rl", "--encoder", "general", "--compare"],
        ["stage", "rl", "--encoder", "scratch", "--compare", "--objective", "paper"],
        *(["experiment", name] for name in X.EXPERIMENTS
          if name not in ("deviations", "budget", "generalisation", "generalisation_long")),  # the last: see its test
        pytest.param(["experiment", "generalisation"], marks=pytest.mark.skipif(
            not (light_db() / "rooms.json").is_file(), reason=f"no LIGHT environment DB at {light_db()}")),
        ["experiment", "deviations", "--objective", "paper"],  # its tables name the paper objective
        ["experiment", "budget", "--objective", "paper"],
    ],
    ids=" ".join,
)
def test_what_a_plan_prints_is_what_runs(command, tmp_path, monkeypatch, capsys):
    """``lq stage --print`` and ``lq experiment plan`` print the jobs that ``lq stage`` and ``lq experiment run``
    launch, in the same waves: the three share one code path (the waves of :func:`stage_waves`, :func:`preparation`
    and :func:`child_waves`). Every stage and table, on empty outputs, the launcher a recorder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data" / "default").mkdir(parents=True)
    (tmp_path / "data" / "default" / "manifest.json").touch()
    recorder = Recorder()
    monkeypatch.setattr(launchers, "launcher", lambda *a, **k: recorder)
    common = ["--seeds", "0", "1", "--tracking-uri", f"sqlite:///{tmp_path / 'm.db'}"]
    kind, rest = command[0], command[1:]
    printing = [kind, *(["plan"] if kind == "experiment" else []), *rest, *common, *(["--print"] * (kind == "stage"))]
    assert main(printing) == 0
    printed = _printed_jobs(capsys.readouterr().out)
    assert main([kind, *(["run"] if kind == "experiment" else []), *rest, *common]) == 0
    capsys.readouterr()
    launched = [RUN_ID.sub("RUN", launchers.shown(args)) for wave in recorder.waves for args in wave]
    assert printed == launched and launched


def test_a_tables_records_rebuild_the_same_page_in_a_new_store_once(tmp_path, capsys):
    """Export the parents the page shows, import them into an empty store: the same page, byte for byte, and the same
    records again; a second import makes nothing; a broken record names its file and field and makes nothing; the
    page's export removes the campaign's own record of a parent it shows (one parent, one record)."""
    uri, other = (f"sqlite:///{tmp_path / name}" for name in ("ran.db", "new.db"))
    client = MlflowClient(uri)
    experiment = X.table1(["scratch"])
    setup = X.Setup(seeds=(0, 1, 2), tracking_uri=uri, outputs=str(tmp_path / "o"))
    pid, _ = X.parents.open_parent(client, experiment, setup, False, print)
    exp_id = client.get_run(pid).info.experiment_id
    for config in experiment.configs:
        for seed in range(3):
            tags = {"mlflow.parentRunId": pid, "lq.config": config.key, "lq.seed": str(seed)}
            child = client.create_run(exp_id, tags=tags, run_name=f"{config.key}-s{seed}").info.run_id
            client.log_param(child, "seed", seed)
            for step in range(3):  # a curve, and the CPU time growing over epochs
                client.log_metric(child, "rl/act_goal_rate", 0.1 * step + seed, step=step)
                client.log_metric(child, "time/cpu_s", 100.0 * (step + 1) + seed, step=step)
            for metric in ("test/act_and_speech_goal_rate", "baselines/overlap_all/act_and_speech_goal_rate"):
                client.log_metric(child, metric, 0.2 + 0.1 * seed + (config.stage == "rl") * 0.3)
            client.set_terminated(child, "KILLED" if (config.stage, seed) == ("rl", 2) else "FINISHED")
    client.set_terminated(pid, "FINISHED")

    records, again = tmp_path / "records", tmp_path / "again"
    assert main(["experiment", "export", "--tracking-uri", uri, "--records", str(records)]) == 0
    [written] = sorted(records.iterdir())
    assert written.name == "tiny-paper-table1-lq.json.gz"
    assert main(["experiment", "import", "--tracking-uri", other, "--records", str(records)]) == 0
    assert f"{written}: imported as parent run " in capsys.readouterr().out
    [imported] = X.parent_runs(MlflowClient(other), "table1")
    assert imported.info.run_id != pid and imported.data.tags["lq.origin_run_id"] == pid
    page, rebuilt = (tmp_path / f"{name}.md" for name in ("page", "rebuilt"))
    assert main(["experiment", "report", "--tracking-uri", uri, "--page", str(page)]) == 0
    assert main(["experiment", "report", "--tracking-uri", other, "--page", str(rebuilt)]) == 0
    assert rebuilt.read_bytes() == page.read_bytes()
    assert f"Parent run `{pid}`" in page.read_text() and "Cost: " in page.read_text()
    assert "2 of them killed or failed" not in page.read_text()  # one RL seed killed: said once, as in the store
    assert "1 of them killed or failed" in page.read_text()
    assert main(["experiment", "export", "--tracking-uri", other, "--records", str(again)]) == 0
    assert (again / written.name).read_bytes() == written.read_bytes()  # wherever it is written from
    moved = imported.info.run_id  # one parent's record, by its id where it ran or where it was imported (resumed)
    for store, parent_id in ((uri, pid), (other, moved)):
        exported = ["experiment", "export", "--tracking-uri", store, "--parent", parent_id, "--records", str(again)]
        assert main(exported) == 0
    assert sorted(p.name for p in again.iterdir()) == sorted([written.name, f"table1-{pid}.json.gz"])
    assert main(["experiment", "export", "--tracking-uri", other, "--records", str(again)]) == 0  # the page's again:
    assert [p.name for p in again.iterdir()] == [written.name]  # the campaign's record of its parent is superseded

    runs = len(MlflowClient(other).search_runs([imported.info.experiment_id]))
    assert main(["experiment", "import", "--tracking-uri", other, "--records", str(records)]) == 0
    assert "0 of 1 records" in capsys.readouterr().out
    assert main(["experiment", "import", "--tracking-uri", uri, "--records", str(records)]) == 0  # where it ran
    assert len(MlflowClient(other).search_runs([imported.info.experiment_id])) == runs

    killed = next(r for r in X.children(client, pid, finished=False) if r.info.status == "KILLED")
    client.log_metric(killed.info.run_id, "test/act_and_speech_goal_rate", 0.9)  # the parent's record, later
    client.set_terminated(killed.info.run_id, "FINISHED")
    assert main(["experiment", "export", "--tracking-uri", uri, "--records", str(records)]) == 0
    assert main(["experiment", "import", "--tracking-uri", other, "--records", str(records)]) == 0
    assert "1 of 1 records" in capsys.readouterr().out  # it replaces the runs the earlier record made
    assert len(MlflowClient(other).search_runs([imported.info.experiment_id])) == runs
    assert main(["experiment", "report", "--tracking-uri", uri, "--page", str(page)]) == 0
    assert main(["experiment", "report", "--tracking-uri", other, "--page", str(rebuilt)]) == 0
    assert rebuilt.read_bytes() == page.read_bytes() and "killed or failed" not in page.read_text()

    import gzip
    import json

    data = json.loads(gzip.decompress(written.read_bytes()))
    del data["children"][3]["status"]
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "x.json.gz").write_bytes(gzip.compress(json.dumps(data).encode()))
    empty = f"sqlite:///{tmp_path / 'empty.db'}"
    assert main(["experiment", "import", "--tracking-uri", empty, "--records", str(broken)]) == 1
    err = capsys.readouterr().err
    assert str(broken / "x.json.gz") in err and "children[3]" in err and "'status'" in err

    # a parent's id where it ran names it where it was imported too (tables, export); an id neither holds is refused
    tables = ["experiment", "tables", "table1", "--tracking-uri", other, "--out", str(tmp_path / "tables")]
    [here] = X.parent_runs(MlflowClient(other), "table1")  # the runs the second import made
    assert main([*tables, "--parent", pid]) == 0
    assert f"from parent run {here.info.run_id}" in capsys.readouterr().out
    assert main(["experiment", "export", "--tracking-uri", other, "--parent", pid, "--records", str(again)]) == 0
    assert f"{again / f'table1-{pid}.json.gz'}" in capsys.readouterr().out
    assert main([*tables, "--parent", "0" * 32]) == 1
    assert f"--parent {'0' * 32}: no run of that id in {other}, nor one imported from it" in capsys.readouterr().err
    assert X.parent_runs(MlflowClient(empty), "table1") == []


def test_two_runs_logging_one_dataset_at_once_both_get_it(tmp_path):
    """MLflow inserts a dataset it has not seen without a lock: of two runs starting at once (a table's children side
    by side), one fails on the datasets table's unique key (a table7 campaign lost a child so). The other's row
    is there by then: the loser logs again and is linked to it."""
    from mlflow.exceptions import MlflowException

    from lq.tracking import log_dataset

    data = tmp_path / "default"
    data.mkdir()
    (data / "manifest.json").write_text('{"counts": {"train": 3}}')
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp_id = client.create_experiment("lq-x")
    first, second = (client.create_run(exp_id).info.run_id for _ in range(2))

    class Raced:  # the other run inserts the dataset between this one's look and its insert
        def __init__(self):
            self.calls = 0

        def log_inputs(self, run_id, datasets):
            self.calls += 1
            if self.calls == 1:
                client.log_inputs(first, datasets=datasets)
                raise MlflowException("(sqlite3.IntegrityError) UNIQUE constraint failed: datasets.experiment_id, "
                                      "datasets.name, datasets.digest")  # fmt: skip
            client.log_inputs(run_id, datasets=datasets)

    raced = Raced()
    log_dataset(raced, second, data)
    assert raced.calls == 2
    for run_id in (first, second):
        [got] = client.get_run(run_id).inputs.dataset_inputs
        assert got.dataset.name == "default"

    class Broken:  # any other error is the caller's
        def log_inputs(self, run_id, datasets):
            raise MlflowException("RESOURCE_DOES_NOT_EXIST: run")

    with pytest.raises(MlflowException, match="RESOURCE_DOES_NOT_EXIST"):
        log_dataset(Broken(), second, data)


def test_the_budget_experiment_trains_one_run_per_objective_and_seed_and_draws_its_curve(tmp_path):
    """Seed 0 of the paper objective trains to 1M interactions, every other run to 320k, each evaluated at the budgets
    on its way, under its own objective and in its own folder; its page has the figure (written once, the same bytes
    again) and a row per objective and budget with validation and test columns."""
    setup = X.Setup(seeds=(0, 1, 2), objective="paper", outputs=str(tmp_path / "o"))
    experiment = X.EXPERIMENTS["budget"](objective="paper")
    runs = {(c.variant, s): X.stage_config(c, setup, s) for c in experiment.configs if c.stage == "rl" for s in (0, 1)}
    budgets = {k: c["model"]["budgets"] for k, c in runs.items()}
    assert budgets[("budget_paper", 0)] == [32_000, 100_000, 320_000, 1_000_000]
    assert budgets[("budget_paper", 1)] == budgets[("budget_lq", 0)] == [32_000, 100_000, 320_000]
    lq_run, paper_run = runs[("budget_lq", 0)], runs[("budget_paper", 0)]
    assert "objective/lq.yaml" in lq_run["sources"] and "objective/paper.yaml" in paper_run["sources"]
    assert lq_run["checkpoint"]["dirpath"] == f"{tmp_path}/o/rl-paper/budget_lq{AGENT}"
    hparams = build_module(X.running.rl_run(X.Config("rl", "scratch", variant="budget_lq"), setup, 1))
    assert list(hparams.hparams.budgets) == [32_000, 100_000, 320_000] and hparams.hparams.init_from == "bc"
    with pytest.raises(ValueError, match="--objective paper"):
        X.EXPERIMENTS["budget"](objective="lq")

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    pid, _ = X.parents.open_parent(client, experiment, dataclasses.replace(setup, tracking_uri=uri), False, print)
    exp_id = client.get_run(pid).info.experiment_id
    for config in experiment.configs:
        for seed in range(3):
            tags = {"mlflow.parentRunId": pid, "lq.config": config.key, "lq.seed": str(seed)}
            child = client.create_run(exp_id, tags=tags).info.run_id
            for split in ("val", "test"):
                if config.stage == "bc":
                    client.log_metric(child, f"{split}/act_and_speech_goal_rate", 0.3)
                elif config.stage == "baselines":
                    prefix = "baselines_val" if split == "val" else "baselines"
                    client.log_metric(child, f"{prefix}/overlap_all/act_and_speech_goal_rate", 0.2)
                else:
                    last = 1_000_000 if (config.variant, seed) == ("budget_paper", 0) else 320_000
                    for b in (b for b in X.specs.BUDGETS if b <= last):
                        client.log_metric(child, f"budget/{b}/{split}/act_and_speech_goal_rate", b / 2e6 + seed / 100)
            client.set_terminated(child, "FINISHED")
    # a run killed past 100k (a session's end) and resumed from its last checkpoint is two MLflow runs: the killed one
    # holds the budgets it reached, the resumed one those after; the table reads each budget where it was logged
    resumed = X.Config("rl", "scratch", variant="budget_lq").key
    [whole] = [
        r for r in X.children(client, pid) if (r.data.tags["lq.config"], r.data.tags["lq.seed"]) == (resumed, "0")
    ]
    client.delete_run(whole.info.run_id)
    tags = {"mlflow.parentRunId": pid, "lq.config": resumed, "lq.seed": "0"}
    for status, budgets in (("KILLED", X.specs.BUDGETS[:2]), ("FINISHED", X.specs.BUDGETS[2:3])):
        child = client.create_run(exp_id, tags=tags).info.run_id
        for b in budgets:
            for split in ("val", "test"):
                client.log_metric(child, f"budget/{b}/{split}/act_and_speech_goal_rate", b / 2e6)
        client.set_terminated(child, status)
    client.set_terminated(pid, "FINISHED")
    page = tmp_path / "docs" / "current.md"
    argv = ["experiment", "report", "--tracking-uri", uri, "--page", str(page)]
    assert main(argv) == 0
    figure = page.parent / "img" / "budget-tiny-paper.png"
    first, drawn = page.read_bytes(), figure.read_bytes()
    assert main(argv) == 0 and page.read_bytes() == first and figure.read_bytes() == drawn
    text = first.decode()
    assert "![The paper's budget" in text and "(img/budget-tiny-paper.png)" in text
    # both objectives' rows: the heading names none, the identity both
    assert "## The paper's budget: RL against environment interactions, BC and the baselines beside\n" in text
    assert "protocol `paper`, objectives `paper` and `lq` (as each row says), data" in text
    row = next(line for line in text.splitlines() if line.startswith("| RL (paper objective), 1M interactions |"))
    assert "0.500" in row  # seed 0 alone
    row = next(line for line in text.splitlines() if line.startswith("| RL (lq objective), 320k interactions |"))
    assert "0.170 ± 0.008" in row  # 0.16, 0.17, 0.18
    row = next(line for line in text.splitlines() if line.startswith("| RL (lq objective), 32k interactions |"))
    assert "| 0.026 ± 0.008 |" in row  # 0.016, 0.026, 0.036: seed 0's from its killed run
    assert "| Word overlap (whole spaces) |" in text
    assert ("- RL (paper objective), act & speech above BC on validation: at none of 32k, 100k, 320k; at 1M one seed: "
            "0.500 against 0.300 ± 0.000.") in text  # fmt: skip


def test_the_generalisation_page_draws_each_variant_against_interactions_on_three_panels(tmp_path):
    """From its records alone: each variant's row at each budget, its agent chosen on validation, BC per training
    quests and the baselines, with validation, test and worlds columns; its figure (one panel per column, written once,
    the same bytes again)."""
    experiment = X.EXPERIMENTS["generalisation"]()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    setup = X.Setup(seeds=(0, 1), outputs=str(tmp_path / "o"), tracking_uri=uri)
    pid, _ = X.parents.open_parent(client, experiment, setup, False, print)
    exp_id = client.get_run(pid).info.experiment_id
    for config in experiment.configs:
        for seed in (0, 1):
            tags = {"mlflow.parentRunId": pid, "lq.config": config.key, "lq.seed": str(seed)}
            child = client.create_run(exp_id, tags=tags).info.run_id
            for split in ("val", "test", "worlds"):
                if config.stage == "baselines":
                    prefix = {"val": "baselines_val", "test": "baselines", "worlds": "baselines_worlds"}[split]
                    client.log_metric(child, f"{prefix}/random_valid/act_goal_rate", 0.7)
                    continue
                client.log_metric(child, f"{split}/act_and_speech_goal_rate", 0.2 + seed / 100)
                for b in X.specs.GENERALISATION_BUDGETS if config.stage == "rl" else ():
                    client.log_metric(child, f"budget/{b}/{split}/act_and_speech_goal_rate", b / 1e6 + seed / 100)
            client.set_terminated(child, "FINISHED")
    client.set_terminated(pid, "FINISHED")
    page = tmp_path / "docs" / "current.md"
    argv = ["experiment", "report", "--tracking-uri", uri, "--page", str(page)]
    assert main(argv) == 0
    figure = page.parent / "img" / "generalisation-tiny-paper.png"
    first, drawn = page.read_bytes(), figure.read_bytes()
    assert main(argv) == 0 and page.read_bytes() == first and figure.read_bytes() == drawn
    text = first.decode()
    row = next(line for line in text.splitlines() if line.startswith("| RL, + 19,600 generated quests, 320k inter"))
    assert row.count("0.325 ± 0.005") == 3  # validation, test and worlds act & speech: 0.32 and 0.33
    row = next(line for line in text.splitlines() if line.startswith("| RL, its own training quests, chosen on val"))
    assert row.count("0.205 ± 0.005") == 3
    assert "| BC, + 1,400 generated quests |" in text and "Worlds act & speech" in text
    assert 'a row "chosen on validation" is the agent of the best validation act & speech goals' in text


def test_every_ordering_names_cells_its_tables_have_and_table45_marks_the_papers_trends():
    """Each marked ordering compares two cells of its experiment's tables (a typo would mark it "not run" for ever);
    Tables 4/5 mark each of the paper's four trends in both tables, the quest curve's "Scratch the most" as gains."""
    from lq.experiments.claims import orderings

    for name, build in X.EXPERIMENTS.items():
        experiment = build(objective="paper" if name in ("deviations", "budget") else "lq")
        cells = {(t.name, row, column) for t in experiment.tables for row, cols in t.rows for column in cols}
        for o in orderings(experiment):
            assert {o.better, o.worse, *filter(None, (o.better_from, o.worse_from))} <= cells, (name, o.claim)
    claims = [o.claim for o in orderings(X.table45())]
    assert "Short motivations above none (Adaptive, bag of actions, All Hits@1)" in claims
    # the paper's four trends, each in both tables: motivations (5 encoders x 3), ATOMIC-LIGHT (each motivation
    # setting), more quests (Scratch, General+Light) and Scratch the most, Scratch's easiest action (above 4 others,
    # and not on the others) and Adaptive's
    for start, count in (("Short motivations above none", 5), ("short motivations the most", 5),
                         ("ATOMIC-LIGHT above ATOMIC", 3), ("more training quests help", 2),
                         ("Scratch gains the most", 1), ("Scratch best on the easiest", 4),
                         ("Scratch not best on the others", 1), ("Adaptive lowest on the easiest", 4)):  # fmt: skip
        assert sum(c.startswith(start) for c in claims) == 2 * count, start
    gains = [o for o in orderings(X.table45()) if o.better_from]
    assert all(o.better_from[0] == o.worse_from[0] == "quests" for o in gains) and len(gains) == 2
    # over the span both have: Scratch from 12 to 50 quests, General+Light from 12 to its slice (about 50 at tiny)
    assert {(o.better[1], o.better_from[1], o.worse[1], o.worse_from[1]) for o in gains} == {
        ("Scratch, 50 training quests", "Scratch, 12 training quests",
         "General+Light, all training quests", "General+Light, 12 training quests")}  # fmt: skip


def test_a_gain_ordering_compares_differences_of_means_with_their_standard_errors():
    """"Scratch gains the most from more quests": Scratch's gain (all quests over 12) against General+Light's, each a
    difference of seed means with its standard error; the verdict at one standard error of the two gains' difference."""
    from lq.experiments.claims import Ordering, marking

    places = [("quests", f"{e}, {n}", "c") for e in ("S", "G") for n in ("all", "12")]
    gain = Ordering("Scratch gains the most", places[0], places[2], places[1], places[3])

    def marked(s_all, s_12, g_all, g_12):
        return marking(gain, {"quests": dict(zip([p[1:] for p in places], (s_all, s_12, g_all, g_12), strict=True))})

    # Scratch +0.30 ± 0.01, General+Light +0.10 ± 0.01: holds (the se: each side's sample std over sqrt(2), squared
    # and added)
    assert marked([0.4, 0.42], [0.1, 0.12], [0.5, 0.52], [0.4, 0.42]) == (
        "gain +0.300 ± 0.014 against +0.100 ± 0.014 (± its standard error): **holds**"
    )
    assert marked([0.4, 0.42], [0.1, 0.12], [0.9, 0.92], [0.4, 0.42]).endswith("**does not hold**")
    assert marked([0.4, 0.5], [0.1, 0.2], [0.5, 0.6], [0.2, 0.3]).endswith("**within noise**")  # 0.3 vs 0.3
    assert marked([0.4, 0.5], [], [0.5, 0.6], [0.2, 0.3]) == "gains n/a: **not run**"
    assert marked([0.4], [0.1], [0.5], [0.2]) == "**not tested (one seed)**"


def test_the_generalisation_experiment_trains_each_variant_from_the_bc_agents_of_its_training_quests(tmp_path):
    """Each RL variant starts from the BC agents trained on its own training quests (a pool's with that pool), after
    the pool is drawn and the LIGHT worlds generated and their partner and DM trained; every agent and the baselines
    play the worlds at each evaluation; RL is evaluated at each budget and chooses its agent on the validation quests;
    the table has a row per variant and budget, one as chosen, one per BC, with validation, test and worlds columns."""
    setup = X.Setup(seeds=(0,), outputs=str(tmp_path / "o"))
    experiment = X.EXPERIMENTS["generalisation"]()
    runs = {c.key: X.running.run_of(c, setup, 0) for c in experiment.configs}
    worlds = X.specs.worlds_of(setup)
    assert worlds["partner_checkpoint"] == "outputs/light-worlds/partner/small/best.ckpt"
    for key, run in runs.items():
        assert json.loads(run.extra[run.extra.index("--model.worlds") + 1]) == worlds, key
        needed = {(n.stage, n.data) for n in run.needs()}
        assert {("data", "data/light-worlds"), ("partner", "data/light-worlds"), ("dm", "data/light-worlds")} <= needed
    pooled = runs["rl-scratch-act_speech-hardcoded-pool19600_rarity"]
    [bc] = [n for n in pooled.needs() if n.stage == "bc"]
    assert bc == runs["bc-scratch-act_speech-hardcoded-pool19600"] and bc.folder == f"{tmp_path}/o/bc/pool19600"
    [pool] = [n for n in pooled.needs() if n.stage == "pool"]
    assert pool.args == ["data", "pool", "data/default", "19600", "--out", "data/default-pool-19600"]
    [held_out_bc] = [n for n in runs["rl-scratch-act_speech-hardcoded-held_out"].needs() if n.stage == "bc"]
    assert held_out_bc == runs["bc-scratch-act_speech-hardcoded-own"]
    assert not [n for n in runs["rl-scratch-act_speech-hardcoded-own"].needs() if n.stage == "pool"]
    light = next(n for n in pooled.needs() if n.stage == "data" and n.data == "data/light-worlds")
    assert light.args[-2:] == ["--light-db", str(light_db())]
    module = build_module(pooled)
    h = module.hparams
    assert (list(h.budgets), h.select_every, h.curriculum, h.init_from) == ([32_000, 100_000, 320_000], 16_000,
                                                                          "rarity", "bc")  # fmt: skip
    assert h.env["pool"] == "data/default-pool-19600" and h.worlds == worlds
    assert h.bc_checkpoint == f"{tmp_path}/o/bc/pool19600{AGENT}/best.ckpt"
    table, baselines = experiment.tables
    assert len(table.rows) == 5 * 4 + 3 and list(table.rows[0][1]) == [
        *(t for t, _ in X.specs.VALIDATION_GOALS), *(t for t, _ in X.specs.GOALS),
        *(t for t, _ in X.specs.GREEDY_GOALS), *(t for t, _ in X.specs.WORLDS_GOALS)
    ]
    assert table.rows[3][0] == "RL, its own training quests, chosen on validation"
    assert table.rows[3][1]["Worlds act & speech"].metric == "worlds/act_and_speech_goal_rate"
    # the test quests under greedy decoding too: where sampled and greedy speech part, the table shows it
    assert table.rows[3][1]["Greedy act & speech"].metric == "test_greedy/act_and_speech_goal_rate"
    assert table.rows[1][1]["Greedy speech goals"].metric == "budget/100000/test_greedy/speech_goal_rate"
    assert "Greedy act goals" not in baselines.rows[0][1]  # a baseline has no decoding of its own
    assert table.rows[0][1]["Worlds act goals"].metric == "budget/32000/worlds/act_goal_rate"
    assert "Worlds act goals" in baselines.rows[0][1] and "Val act goals" in baselines.rows[0][1]
    with pytest.raises(ValueError, match="--objective lq"):
        X.EXPERIMENTS["generalisation"](objective="paper")
    # a resumed parent whose BC children finished: the RL children's BC starts are prepared again where missing, with
    # their training pool and worlds, and a finished one trained with its pool counts as done
    done = {(c.key, "0") for c in experiment.configs if c.stage == "bc"}
    steps = [step for wave, _ in X.running.preparation(experiment.configs, setup, "generalisation", done)
             for step in wave if step.args[:2] == ["bc", "fit"]]  # fmt: skip
    [pooled_step] = [step for step in steps if step.run.dir == f"{tmp_path}/o/bc/pool19600{AGENT}"]
    assert pooled_step.run.config["model"]["env"]["pool"] == "data/default-pool-19600"
    assert pooled_step.run.config["model"]["worlds"] == worlds and pooled_step.check() is None  # not trained yet
    pooled_step.write()
    checkpoint = Path(bc.checkpoint)
    checkpoint.touch()
    mark_finished(checkpoint, stage="bc")
    assert pooled_step.check() == str(checkpoint)
    without = dataclasses.replace(pooled_step.run, extra=tuple(X.running.without_flag(pooled_step.run.extra,
                                                                                      "--model.env.pool")))  # fmt: skip
    without.kind.write(without)
    mark_finished(checkpoint, stage="bc")
    assert pooled_step.check() is None  # trained without the pool: trained again


def test_a_tiny_rl_run_chooses_its_agent_on_validation_as_the_generalisation_experiment_does(tmp_path):
    """The generalisation experiment's checkpoint rule is every tiny RL run's (make rl, Tables 1, 2 and 7): the agent
    chosen on the validation quests every 16,000 interactions, twice in a 400-update run; the quickstart's 100 updates
    (8,000 interactions) choose nothing, their last weights the agent."""
    selections = {}
    for profile in ("tiny", "quick", "paper"):
        setup = X.Setup(profile=profile, seeds=(0,), outputs=str(tmp_path / profile))
        config = X.running.stage_config(X.Config("rl", "scratch"), setup, 0)
        model = config["model"]
        interactions = config["trainer"]["max_epochs"] * model["updates_per_epoch"] * model["num_envs"] * model[
            "rollout_steps"]  # fmt: skip
        selections[profile] = (model["select_every"], interactions // model["select_every"])
    assert selections == {"tiny": (X.specs.SELECT_EVERY, 2), "quick": (X.specs.SELECT_EVERY, 0), "paper": (640_000, 20)}


def test_the_generalisation_variant_chosen_on_validation_goes_on_to_1m_in_a_folder_of_its_own(tmp_path, capsys):
    """``generalisation_long``: without a finished generalisation parent it refuses, saying what to run first; with one,
    it takes the variant whose agents chosen on validation have the best validation act & speech goals (mean over
    seeds; test figures play no part), on to 1M from the BC agents of that variant's training quests, in a folder of
    its own (not the 320k run's, which it would resume), and records the variant on its parent."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    common = ["experiment", "plan", "generalisation_long", "--tracking-uri", uri, "--seeds", "0", "--dry-run",
              "--outputs", str(tmp_path / "o")]  # fmt: skip
    assert main(common) == 2
    assert "no finished generalisation parent run" in capsys.readouterr().err
    client = MlflowClient(uri)
    experiment = X.EXPERIMENTS["generalisation"]()
    setup = X.Setup(seeds=(0, 1), outputs=str(tmp_path / "o"), tracking_uri=uri)
    pid, _ = X.parents.open_parent(client, experiment, setup, False, print)
    exp_id = client.get_run(pid).info.experiment_id
    val = {"own": 0.3, "pool1400": 0.35, "pool19600": 0.4, "pool19600_rarity": 0.1, "held_out": 0.2}
    test = {"own": 0.9, "pool1400": 0.1, "pool19600": 0.1, "pool19600_rarity": 0.1, "held_out": 0.1}
    for config in experiment.configs:
        for seed in (0, 1):
            tags = {"mlflow.parentRunId": pid, "lq.config": config.key, "lq.seed": str(seed)}
            child = client.create_run(exp_id, tags=tags).info.run_id
            if config.stage == "rl":  # pool19600 best on validation in the mean (0.4, 0.4), not in its best seed
                spread = 0.3 * (seed - 0.5) if config.variant == "pool1400" else 0.0
                client.log_metric(child, "val/act_and_speech_goal_rate", val[config.variant] + spread)
                client.log_metric(child, "test/act_and_speech_goal_rate", test[config.variant])
            client.set_terminated(child, "FINISHED")
    client.set_terminated(pid, "FINISHED")
    assert main(common) == 0
    out = capsys.readouterr().out
    assert f"generalisation_long: pool19600, the best Val act & speech chosen on validation in generalisation " \
        f"parent {pid}: own 0.300 (2 seeds); pool1400 0.350 (2 seeds); pool19600 0.400 (2 seeds)" in out
    [rl] = [line for line in out.splitlines() if line.startswith("lq rl fit")]
    assert f"{tmp_path}/o/rl/pool19600_1m{AGENT}/config.yaml" in rl

    def rl_run(variant: str):
        long = X.EXPERIMENTS["generalisation_long"](variants=[variant])
        [run] = [X.running.run_of(c, setup, 0) for c in long.configs if c.stage == "rl"]
        return long, run, {flag: run.extra[run.extra.index(flag) + 1] for flag in run.extra if flag.startswith("--")}

    _, run, flags = rl_run("pool19600")
    assert flags["--bc_dir"] == f"{tmp_path}/o/bc/pool19600" and flags["--model.env.pool"] == "data/default-pool-19600"
    assert json.loads(flags["--model.budgets"]) == [32_000, 100_000, 320_000, 1_000_000]
    assert flags["--model.select_every"] == "16000" and "--model.curriculum" not in flags
    long, run, flags = rl_run("pool19600_rarity")
    assert flags["--model.curriculum"] == "rarity"
    assert [row for row, _ in long.tables[0].rows][3:] == [
        "RL, + 19,600 generated quests, rarity curriculum, 1M interactions",
        "RL, + 19,600 generated quests, rarity curriculum, chosen on validation", "BC, + 19,600 generated quests"]
    with pytest.raises(ValueError, match="unknown generalisation variants \\['pool20000'\\]"):
        X.EXPERIMENTS["generalisation_long"](variants=["pool20000"])


def test_a_1m_parent_imported_on_another_machine_resumes_there_by_the_id_it_ran_as(tmp_path, capsys):
    """``generalisation_long --resume --parent ID`` on a machine its record was imported into: ID is the parent's id
    where it ran (the record's file name, the campaign's log), and the variant it recorded there is the one resumed."""
    ran, here = (f"sqlite:///{tmp_path / name}" for name in ("ran.db", "here.db"))
    setup = X.Setup(seeds=(0,), outputs=str(tmp_path / "o"), tracking_uri=ran)
    experiment = X.EXPERIMENTS["generalisation_long"](variants=["pool19600_rarity"])
    pid, _ = X.parents.open_parent(MlflowClient(ran), experiment, setup, False, print)
    X.records.import_records(here, X.records.export_parent(ran, pid, tmp_path / "records").parent)
    assert X.records.parent_here(MlflowClient(here), pid, here) != pid
    capsys.readouterr()
    assert main(["experiment", "plan", "generalisation_long", "--tracking-uri", here, "--seeds", "0", "--resume",
                 "--parent", pid, "--dry-run", "--outputs", str(tmp_path / "o")]) == 0  # fmt: skip
    [rl] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("lq rl fit")]
    assert f"{tmp_path}/o/rl/pool19600_rarity_1m{AGENT}/config.yaml" in rl


def test_a_resumed_parent_starts_each_rl_child_once_its_own_bc_start_is_trained_not_every_start(tmp_path):
    """A parent resumed on a new machine whose BC children finished there: the local launcher runs the BC starts and
    the RL children as one graph, each start just before the first RL child that waits for it, each RL child after
    its own start alone (the starts of one seed and two pools are two jobs), so that an RL child runs beside the next
    start rather than after every one (the 19,600 pool's take an hour each); another launcher runs the starts first."""
    setup = X.Setup(seeds=(0,), outputs=str(tmp_path / "o"), tracking_uri=f"sqlite:///{tmp_path / 'm.db'}",
                    launcher=Local())  # fmt: skip
    experiment = X.EXPERIMENTS["generalisation"]()
    done = {(c.key, "0") for c in experiment.configs if c.stage == "bc"}
    prep = X.running.preparation(experiment.configs, setup, experiment.name, done)
    children = X.running.child_waves(experiment, setup, "pid", done)
    tasks = X.running._tasks(X.running.resumed_waves(prep, children, setup), setup)
    order = [t.label for t in tasks]
    starts = [t for t in tasks if t.args[:2] == ["bc", "fit"]]
    assert len(starts) == 3 and len({t.label for t in starts}) == 3 and all(t.released for t in starts)
    assert {t.label.split(" in ")[1].split(" ")[0] for t in starts} == {"bc/own", "bc/pool1400", "bc/pool19600"}
    assert not [s for steps, _ in prep for s in steps if s.released]  # a start frees its slot early in this graph only
    rl = [t for t in tasks if t.label.startswith("rl-")]
    assert len(rl) == 5 and all({"the partner's calibration", "data", "data (2)"} <= set(t.after) for t in rl)
    start_of = {}
    for task in rl:
        [start_of[task.label]] = [a for a in task.after if a in {s.label for s in starts}]
        variant = task.label.split("-hardcoded-")[1].split(" ")[0]
        own = {"held_out": "own", "pool19600_rarity": "pool19600"}.get(variant, variant)
        assert start_of[task.label].endswith(f" in bc/{own} (the RL agent's start)")
        assert order.index(start_of[task.label]) < order.index(task.label)
    first = rl[0].label  # in the children's order: right after its start, before the last start
    assert order.index(first) == order.index(start_of[first]) + 1 < max(order.index(s.label) for s in starts)
    # another launcher: the preparation's waves, then the children's
    other = dataclasses.replace(setup, launcher=Recorder())
    assert X.running.resumed_waves(prep, children, other) == [*prep, *children]
