"""The agent stages through their command line: ``lq bc fit``, ``lq rl fit`` (also as 2 DDP processes), ``lq eval``."""

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import mlflow
import pytest
import torch

from lq.cli import main
from lq.conf.resolver import DONE, finished
from lq.data.dataset import dataset_id
from lq.data.outputs import TRAINED, trained
from lq.lit.checkpoints import PLAYED, load_agent
from lq.lit.entry import fit_rl
from lq.tracking import stored
from tests.lit.stopping import stop_once

ROOT = Path(__file__).resolve().parents[2]
TINY_AGENT = [
    "--model.context_length=64",
    "--model.candidate_dim=16",
    "--model.agent.gru_hidden=16",
    "--model.agent.policy_hidden=16",
    "--model.agent.policy_layers=2",
    "--model.agent.critic_hidden=16",
    "--model.agent.scratch.hidden_size=32",
    "--model.agent.scratch.num_layers=1",
    "--model.agent.scratch.num_heads=2",
    "--model.agent.scratch.intermediate_size=64",
    "--model.eval_max_steps=3",
    "--model.eval_batch_size=8",
    "--trainer.max_epochs=1",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
]


AGENT = "scratch/act_speech-hardcoded/seed-0"  # an agent's folder under its stage's


def _args(stage: str, root: Path, tmp_path: Path, *extra: str) -> list[str]:
    return [
        stage,
        "fit",
        "--config",
        str(ROOT / "conf/agent.yaml"),
        "--config",
        str(ROOT / f"conf/{stage}.yaml"),
        "--config",
        str(ROOT / "conf/encoder/scratch.yaml"),
        *(["--config", str(ROOT / "conf/objective/lq.yaml")] if stage == "rl" else []),  # lq's objective
        f"--model.env.data_dir={root / 'data'}",
        f"--model.env.partner_checkpoint={root / 'partner.ckpt'}",
        f"--model.env.dm_checkpoint={root / 'dm.ckpt'}",
        f"--checkpoint.dirpath={tmp_path / stage / AGENT}",  # lq stage's folders (Stage.resolve names them)
        *([f"--model.bc_checkpoint={tmp_path / 'bc' / AGENT / 'best.ckpt'}"] if stage == "rl" else []),  # RL's start
        f"--trainer.logger.init_args.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}",
        *TINY_AGENT,
        *extra,
    ]


@pytest.mark.slow
def test_bc_and_rl_fit_evaluate_and_compare(setup_dir, tmp_path, capsys):
    rl = ["--model.num_envs=4", "--model.rollout_steps=2", "--model.max_steps=4", "--model.updates_per_epoch=2"]
    assert main(_args("bc", setup_dir, tmp_path, "--model.batch_size=8", "--trainer.limit_train_batches=2")) == 0
    # the stage as a plain callable (what `lq rl fit` calls): its metrics come back, as MLflow holds them; lq's
    # objective (conf/objective/lq.yaml): it starts from the BC agent of its seed and keeps an imitation term
    metrics = fit_rl(_args("rl", setup_dir, tmp_path, *rl)[2:])
    printed = capsys.readouterr().out
    assert "zero-shot test (seed 0, paper protocol, sampled): act goals" in printed
    assert "zero-shot test (seed 0, paper protocol, greedy): act goals" in printed
    assert {"rl/act_goal_rate", "losses/total", "time/train_s", "time/evaluation_s"} <= set(metrics)
    bc_ckpt = tmp_path / "bc/scratch/act_speech-hardcoded/seed-0/best.ckpt"
    rl_ckpt = tmp_path / "rl/scratch/act_speech-hardcoded/seed-0/agent.ckpt"
    assert bc_ckpt.exists() and rl_ckpt.exists()
    hparams = torch.load(rl_ckpt, map_location="cpu", weights_only=False)["hyper_parameters"]
    assert (hparams["init_from"], hparams["bc_checkpoint"]) == ("bc", str(bc_ckpt))
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["lq-bc", "lq-rl"], output_format="list")
    names = {r.info.run_name for r in runs}
    assert names == {"bc-scratch-act_speech-hardcoded-s0", "rl-scratch-act_speech-hardcoded-s0"}
    for run in runs:
        assert "test/act_goal_rate" in run.data.metrics and "test_greedy/act_goal_rate" in run.data.metrics
        # ended FINISHED once all was logged; its threads a param; done.json beside its checkpoint, naming the run
        assert run.info.status == "FINISHED" and run.data.params["threads"] == "1"
        assert run.data.tags["lq.pid"] == str(os.getpid()) and run.data.tags["lq.host"]
        # its identity, sizes and coefficients as params, for MLflow's compare view; no internal param; a description;
        # its dataset as an input
        params, stage = run.data.params, run.info.run_name[:2]
        assert (params["stage"], params["encoder"], params["ability"], params["protocol"]) == (
            stage,
            "scratch",
            "act_speech",
            "paper",
        )
        assert params["agent/gru_hidden"] == "16" and not [k for k in params if k.startswith("_")]
        assert (params.get("objective"), params.get("coefficients/valid_speech")) == (
            ("lq", "40.0") if stage == "rl" else (None, None)
        )
        assert run.data.tags["mlflow.note.content"].startswith(
            f"lq {stage}: a {stage.upper()} agent on the scratch encoder"
        )
        [data] = run.inputs.dataset_inputs
        assert (data.dataset.name, data.tags[0].value) == ("data", "training")
        # its digest the dataset's fingerprint, as checkpoints, bundles and model cards record it
        assert data.dataset.digest == run.data.tags["lq.dataset"] == dataset_id(setup_dir / "data")
        kept = bc_ckpt if run.info.run_name.startswith("bc-") else rl_ckpt
        assert json.loads((kept.parent / DONE).read_text()) == {
            "checkpoint": kept.name, "stage": kept.parts[-5], "run_id": run.info.run_id
        }  # fmt: skip
        # and trained.json, written once its weights were final, before its evaluation recorded the test episodes:
        # an experiment's RL child starts from a BC agent then (lq.experiments.launchers.Local.run_graph)
        trained_marker = kept.parent / TRAINED
        assert json.loads(trained_marker.read_text()) == {"checkpoint": kept.name, "stage": kept.parts[-5]}
        assert trained_marker.stat().st_mtime_ns <= (kept.parent / PLAYED).stat().st_mtime_ns
        assert run.data.tags["lq.protocol"] == "paper" and run.data.params["env/protocol/choice"] == "whole"
        assert run.data.params["env/objects"] == "True" and run.data.params["env/context_length"] == "256"
        # who it is, as searchable tags: what tables and --resume select parents and runs by
        tags = run.data.tags
        assert (tags["lq.stage"], tags["lq.encoder"], tags["lq.seed"], tags["lq.data"]) == (
            stage, "scratch", "0", str(setup_dir / "data")
        )  # fmt: skip
        assert tags.get("lq.objective") == ("lq" if stage == "rl" else None)
        # validated on the validation quests (what defaults are chosen by), tested on the test quests (reported)
        assert {"val/act_goal_rate", "val/speech_goal_rate", "test/act_goal_rate"} <= set(run.data.metrics)
        assert {"demos/train/loss", "demos/val/loss", "demos/val/speech_accuracy"} <= set(run.data.metrics)
        assert tags["lq.configs"].split(",")[-1] == ("objective/lq.yaml" if stage == "rl" else "encoder/scratch.yaml")
        assert len(tags["lq.commit"].removesuffix("+dirty")) == 40
        if run.info.run_name.startswith("rl-"):
            for name in (
                "test/act_goal_rate",
                "test/speech_goal_rate",
                "time/train_s",
                "time/evaluation_s",
                "time/cpu_s",
            ):
                assert stored(metrics[name]) == run.data.metrics[name], name
        client = mlflow.tracking.MlflowClient()
        assert "transcripts" in {a.path for a in client.list_artifacts(run.info.run_id)}
    out = tmp_path / "eval" / "table"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["eval", str(rl_ckpt), str(bc_ckpt), "--baselines", "2", "--out", str(out)]) == 0
    assert not [w for w in caught if "meant to train" in str(w.message)]  # both runs finished
    printed = capsys.readouterr().out
    rows = [line.split(",")[0] for line in out.with_suffix(".csv").read_text().splitlines()[1:]]
    assert rows == [
        "RL (from BC + imitation 1) scratch act_speech hardcoded (greedy)",
        "RL (from BC + imitation 1) scratch act_speech hardcoded (sampled)",
        "BC scratch act_speech hardcoded (greedy)",
        "BC scratch act_speech hardcoded (sampled)",
        "Random (whole spaces)",
        "Random (valid candidates)",
        "Word overlap (whole spaces)",
        "Word overlap (valid candidates)",
        "Ceiling (goal in the action space)",
        "Demonstrations replayed",
        "Demonstrations' self turns with the environment's partner",
    ]
    assert "| Ceiling (goal in the action space) | 1 |" in printed and "| — |" in printed
    # where its update goes: every term and the total, under the run's own objective or the paper's
    assert main(["gradients", str(rl_ckpt), "--rollouts", "1", "--paper-objective"]) == 0
    printed = capsys.readouterr().out
    assert "valid_reduction total" in printed and "'speech_policy': 4.0" in printed  # conf/objective/paper.yaml's
    assert "| valid_speech |" in printed and "| total |" in printed
    assert main(["gradients", str(bc_ckpt)]) == 2
    assert "a BC agent has no RL objective" in capsys.readouterr().err
    # teacher-forced on the demonstrations: per turn and per head over batches, as over all of them at once
    agent = load_agent(rl_ckpt)
    episodes = agent.demonstration_episodes("valid")
    with torch.no_grad():
        whole = {k: v.item() for k, v in agent.cloning_loss(episodes).items()}
    figures = agent.demonstration_figures("valid", batch_size=2)
    assert figures.pop("demonstrations") == len(episodes) > 2
    assert figures == pytest.approx(whole, abs=1e-5)
    assert main(["eval", str(rl_ckpt), "--demonstrations", "--quests", "2", "--split", "valid"]) == 0
    printed = capsys.readouterr().out
    assert f"| {rl_ckpt} | train | 2 |" in printed and f"| {rl_ckpt} | valid | 2 |" in printed
    # the same agent, as a run meant to train 3 epochs would have left it when stopped after its first
    saved = torch.load(rl_ckpt, map_location="cpu", weights_only=False)
    assert (saved["epoch"], saved["lq_max_epochs"]) == (0, 1)
    saved["lq_max_epochs"] = 3
    stopped = tmp_path / "stopped.ckpt"
    torch.save(saved, stopped)
    with pytest.warns(UserWarning, match=r"stopped.ckpt: saved after epoch 1 of the 3 its run meant to train"):
        assert main(["eval", str(stopped)]) == 0


@pytest.mark.slow
def test_a_run_evaluating_what_table1_reads_plays_the_test_quests_alone_to_the_same_bits(setup_dir, tmp_path, capsys):
    """--zero_shot reported (the quick profile's): the test quests under the protocol's decoding alone, no validation,
    other decoding nor demonstrations read; a scratch agent's test figures the same, to the bit, as the full
    evaluation's; what it played kept beside the checkpoint with that decoding alone."""
    bc = ["--model.batch_size=8", "--trainer.limit_train_batches=2"]
    figures = {}
    for mode in ("all", "reported"):
        out = tmp_path / mode
        assert main(_args("bc", setup_dir, out, *bc, f"--zero_shot={mode}")) == 0
        printed = [line for line in capsys.readouterr().out.splitlines() if re.match(r"zero-shot [a-z]+ \(seed", line)]
        mlflow.set_tracking_uri(f"sqlite:///{out / 'mlflow.db'}")  # each run its own store
        [run] = mlflow.search_runs(experiment_names=["lq-bc"], output_format="list")
        figures[mode] = {k: v for k, v in run.data.metrics.items() if k.startswith("test/")}
        played = json.loads((out / "bc" / AGENT / PLAYED).read_text())["seeds"]["0"]
        if mode == "reported":
            assert [line.split(":")[0] for line in printed] == ["zero-shot test (seed 0, paper protocol, sampled)"]
            played_or_read = [k for k in run.data.metrics if k.split("/")[0] in ("test_greedy", "demos")]
            assert played_or_read == [] and "val/act_goal_rate" not in run.data.metrics  # val/loss: BC's fit
            assert set(played) == {"sampled"}
        else:
            assert len(printed) == 3 and set(played) == {"sampled", "greedy"}
            assert {"val/act_goal_rate", "test_greedy/act_goal_rate", "demos/val/loss"} <= set(run.data.metrics)
    assert figures["reported"] == figures["all"] and "test/act_and_speech_goal_rate" in figures["all"]


@pytest.mark.slow
def test_rl_runs_as_two_ddp_processes_on_cpu(setup_dir, tmp_path):
    """Lightning's DDP (gloo) over two CPU processes: each rank plays its own environments; the updates sync."""
    args = _args(
        "rl",
        setup_dir,
        tmp_path,
        "--model.num_envs=2",
        "--model.rollout_steps=2",
        "--model.max_steps=4",
        "--model.updates_per_epoch=3",
        "--eval_seeds=0",
        "--model.init_from=null",  # lq's objective (the imitation term too) from the encoder: no BC agent here
        "--trainer.accelerator=cpu",
        "--trainer.devices=2",
        "--trainer.strategy=ddp_find_unused_parameters_true",
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "lq", *args], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "distributed_backend=gloo" in done.stderr + done.stdout
    assert "All distributed processes registered. Starting with 2 processes" in done.stderr + done.stdout
    assert finished(tmp_path / "rl/scratch/act_speech-hardcoded/seed-0/agent.ckpt")  # marked once, by rank 0


@pytest.mark.slow
def test_ctrl_c_stops_a_stage_cleanly_its_run_killed_its_checkpoint_not_done(setup_dir, tmp_path):
    """SIGINT to ``lq bc fit`` after its first epoch (its best.ckpt written): Lightning stops, the MLflow run ends
    KILLED, no done.json is written (an RL run would not start from it) and the last line says how to train it
    again."""
    args = _args("bc", setup_dir, tmp_path, "--model.batch_size=8", "--trainer.limit_train_batches=2")
    args += ["--trainer.max_epochs=2", stop_once(tmp_path / "flag", 2)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    stopped = subprocess.run([sys.executable, "-m", "lq", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    assert stopped.returncode == 130, stopped.stderr[-3000:]
    last = stopped.stderr.strip().splitlines()[-1]
    checkpoint = tmp_path / "bc/scratch/act_speech-hardcoded/seed-0/best.ckpt"
    assert last.startswith("interrupted: the run is marked KILLED; go on with: lq bc fit --config ")
    assert last.endswith(f" --ckpt_path {checkpoint.parent / 'last.ckpt'}")  # from where it stopped, not its start
    assert checkpoint.is_file() and not finished(checkpoint) and not trained(checkpoint)  # stopped in its training
    client = mlflow.tracking.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    [run] = client.search_runs([client.get_experiment_by_name("lq-bc").experiment_id])
    assert run.info.status == "KILLED" and run.data.params["threads"] == "1"
    assert main(args) == 0  # the flag is there: trained to the end this time, over the same folder
    assert finished(checkpoint) and not list(checkpoint.parent.glob("best-v*.ckpt"))


@pytest.mark.slow
def test_a_forced_retrain_stopped_midway_leaves_the_finished_run_found_as_done(setup_dir, tmp_path):
    """``make bc FORCE=1`` on a finished agent, stopped by Ctrl-C in its second epoch: the finished run's checkpoint,
    markers and config are untouched and found as done; trained to its end, the new run takes its place."""
    args = _args("bc", setup_dir, tmp_path, "--model.batch_size=8", "--trainer.limit_train_batches=2")
    args += ["--trainer.max_epochs=2"]
    assert main(args) == 0
    folder = tmp_path / "bc" / AGENT
    kept = {name: (folder / name).read_bytes() for name in ("best.ckpt", "last.ckpt", DONE, TRAINED, "config.yaml")}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    stopped = subprocess.run([sys.executable, "-m", "lq", *args, "--retrain=true", stop_once(tmp_path / "flag", 2)],
                             cwd=ROOT, env=env, capture_output=True, text=True)  # fmt: skip
    assert stopped.returncode == 130, stopped.stderr[-3000:]
    assert {name: (folder / name).read_bytes() for name in kept} == kept  # the finished run, as it was
    assert finished(folder / "best.ckpt") and (folder / ".retrain" / "best.ckpt").is_file()  # the stopped one beside
    first = json.loads(kept[DONE])["run_id"]
    assert main([*args, "--retrain=true"]) == 0  # the flag is there: to its end, then in the finished one's place
    assert finished(folder / "best.ckpt") and not (folder / ".retrain").exists()
    second = json.loads((folder / DONE).read_text())["run_id"]
    client = mlflow.tracking.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert second != first and client.get_run(second).info.status == "FINISHED"
    assert torch.load(folder / "best.ckpt", weights_only=False)["global_step"] > 0


@pytest.mark.slow
def test_a_run_started_anew_and_killed_before_its_first_save_leaves_no_earlier_last_checkpoint(setup_dir, tmp_path):
    """``lq bc fit`` without ``--ckpt_path`` in a folder where an earlier run's last.ckpt lies, killed at its first
    batch (before it saved anything): it leaves none, so that no resume goes on from the earlier run's weights as
    this run's (``lq.data.outputs.unfinished``)."""
    args = _args("bc", setup_dir, tmp_path, "--model.batch_size=8", "--trainer.limit_train_batches=2")
    folder = tmp_path / "bc/scratch/act_speech-hardcoded/seed-0"
    folder.mkdir(parents=True)
    (folder / "last.ckpt").write_bytes(b"an earlier run's last checkpoint")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    killed = subprocess.run([sys.executable, "-m", "lq", *args, stop_once(tmp_path / "flag", 9, epoch=0)], cwd=ROOT,
                            env=env, capture_output=True, text=True)  # fmt: skip
    assert killed.returncode == -9 and (tmp_path / "flag").is_file(), killed.stderr[-3000:]
    assert not (folder / "last.ckpt").exists()


@pytest.mark.slow
def test_bc_and_rl_run_on_the_light_release_layout(setup_dir, tmp_path, capsys):
    """The real release's layout (stems, raw game logs, processed file) feeds both agent stages as it is."""
    from tests.release import write_release

    write_release(setup_dir / "data", tmp_path / "light")
    data = f"--model.env.data_dir={tmp_path / 'light'}"
    rl = ["--model.num_envs=4", "--model.rollout_steps=2", "--model.max_steps=4", "--model.updates_per_epoch=2"]
    assert (
        main([*_args("bc", setup_dir, tmp_path, "--model.batch_size=8", "--trainer.limit_train_batches=2"), data]) == 0
    )
    assert main([*_args("rl", setup_dir, tmp_path, *rl), data]) == 0
    printed = capsys.readouterr().out
    assert "zero-shot test (seed 0, paper protocol, sampled): act goals" in printed
    assert "zero-shot test (seed 0, paper protocol, greedy): act goals" in printed
    ckpt = tmp_path / "rl/scratch/act_speech-hardcoded/seed-0/agent.ckpt"
    saved = torch.load(ckpt, map_location="cpu", weights_only=False)
    assert saved["lq_dataset"].startswith("light-")


@pytest.mark.slow
def test_an_rl_run_that_chooses_on_validation_quests_is_evaluated_as_its_chosen_agent(setup_dir, tmp_path):
    """``--model.select_every``: the chosen weights (``best.ckpt``) become the run's agent (``agent.ckpt``, what its
    evaluation, its table and a start read), the MLflow run says at which interactions, and ``last.ckpt`` stays the
    last, to resume from."""
    rl = ["--model.num_envs=4", "--model.rollout_steps=2", "--model.max_steps=4", "--model.updates_per_epoch=3"]
    fit_rl(_args("rl", setup_dir, tmp_path, *rl, "--model.init_from=null", "--model.select_every=8")[2:])
    folder = tmp_path / "rl/scratch/act_speech-hardcoded/seed-0"
    best = torch.load(folder / "best.ckpt", weights_only=False)
    assert (folder / "best.ckpt").read_bytes() == (folder / "agent.ckpt").read_bytes()
    assert torch.load(folder / "last.ckpt", weights_only=False)["global_step"] == 3
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    [run] = mlflow.search_runs(experiment_names=["lq-rl"], output_format="list")
    history = mlflow.MlflowClient().get_metric_history(run.info.run_id, "select/val/act_and_speech_goal_rate")
    assert [m.step for m in history] == [1, 2, 3]
    rates = [m.value for m in history]
    first_best = 1 + rates.index(max(rates))  # the update of the best logged selection, the earliest of equals
    assert best["global_step"] == first_best and best["lq_chosen"]["interactions"] == 8 * first_best
    assert run.data.tags["lq.chosen_interactions"] == str(8 * first_best)
    assert json.loads((folder / DONE).read_text())["checkpoint"] == "agent.ckpt"
