"""``lq stage`` and the make targets through :func:`lq.experiments.running.run_stage`: what a stage makes first, what it
keeps and what it trains again; the launcher a recorder."""

import dataclasses
from pathlib import Path

import pytest
import yaml

from lq import experiments as X
from lq.cli import main
from lq.data.outputs import TRAINED, finished, mark_finished, mark_trained
from lq.lit.agent import start_checkpoint
from lq.lit.offline import build_module
from tests.experiments.helpers import Recorder, resolved


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
        start_checkpoint(module.hparams.init_from, module.hparams.bc_checkpoint)
    mark_trained(unfinished)  # its training ended, its evaluation goes on: its weights are final, a start
    assert start_checkpoint(module.hparams.init_from, module.hparams.bc_checkpoint) == unfinished
    Path(unfinished).parent.joinpath(TRAINED).unlink()
    X.run_stage("rl", setup, "scratch")
    agents = [(i, args) for i, wave in enumerate(launcher.waves) for args in wave if args[0] in ("bc", "rl")]
    runs = [(i, args[:2], resolved(args)["model"]["seed"]) for i, args in agents]
    bc = [(i, seed) for i, stage, seed in runs if stage == ["bc", "fit"]]
    rl_waves = {i for i, stage, _ in runs if stage == ["rl", "fit"]}
    assert [seed for _, seed in bc] == [0] and bc[0][0] < min(rl_waves)
    assert finished(unfinished)  # the Recorder's BC run finished it
