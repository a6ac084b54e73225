"""The resolver: one place for a stage's config files, their order and every checkpoint path."""

import dataclasses
from pathlib import Path

import pytest

from lq.conf import ROOT, resolver
from lq.conf.resolver import Profile
from lq.stages import Resolver, Run


def test_a_profile_is_a_folder_an_overlay_reads_after_its_base():
    quick, tiny = Profile("quick"), Profile("tiny")
    assert quick.base == tiny and quick.is_overlay and not tiny.is_overlay
    assert quick.env_encoder == tiny.env_encoder == "small" and Profile("paper").env_encoder == "general"
    assert quick.files("rl") == [ROOT / "profile/tiny/rl.yaml", ROOT / "profile/quick/rl.yaml"]
    assert quick.files("env") == [ROOT / "profile/tiny/env.yaml", ROOT / "profile/quick/env.yaml"]  # partner, dm
    assert tiny.files("env") == [ROOT / "profile/tiny/env.yaml"]
    where = Resolver(profile="quick", protocol="restricted")
    assert where.configs("bc", "adaptive") == [
        ROOT / "agent.yaml",  # what the agent stages share, first
        ROOT / "bc.yaml",
        ROOT / "encoder/adaptive.yaml",
        ROOT / "profile/tiny/bc.yaml",
        ROOT / "profile/quick/bc.yaml",
        ROOT / "protocol/restricted.yaml",
    ]


def test_every_checkpoint_path_comes_from_one_place():
    tiny, quick, paper = Resolver(), Resolver(profile="quick"), Resolver(profile="paper", data_dir="data/release")
    assert tiny.checkpoint("partner") == "outputs/partner/small/best.ckpt"
    assert quick.checkpoint("partner") == "outputs/quick/partner/small/best.ckpt"  # its own file: its own runs
    assert paper.checkpoint("dm") == "outputs/release/dm/general/best.ckpt"  # another dataset's kept apart
    assert quick.checkpoint("pretrain", "light") == "outputs/quick/pretrain/light/best.ckpt"
    assert quick.agent_checkpoint("rl", "scratch", "act", "ratio", 2) == (
        "outputs/quick/rl/scratch/act-ratio/seed-2/agent.ckpt"  # not over tiny's agents
    )
    assert tiny.agent_checkpoint("bc", "light", "act_speech", "hardcoded", 0).endswith("seed-0/best.ckpt")
    model = paper.stage_config("rl", "light", seed=1)["model"]
    assert model["env"]["partner_checkpoint"] == paper.checkpoint("partner")
    assert model["pretrained_checkpoint"] == "outputs/release/pretrain/light/best.ckpt"
    assert model["bc_checkpoint"] == paper.agent_checkpoint("bc", "light", "act_speech", "hardcoded", 1)
    adaptive = tiny.stage_config("pretrain", "adaptive", out_dir="outputs/experiments/table45/seed-1")
    assert adaptive["model"]["encoder"]["init_from"] == (
        "outputs/experiments/table45/seed-1/general/best.ckpt"  # the general encoder of the same folder
    )
    assert adaptive["checkpoint"] == {"dirpath": "outputs/experiments/table45/seed-1/adaptive", "filename": "best"}


def test_what_a_stage_needs_first():
    tiny = Resolver()

    def needs(stage, encoder):
        return [(r.stage, r.encoder) for r in tiny.run(stage, encoder).needs()]

    assert needs("rl", "adaptive") == [
        ("data", ""),
        ("pretrain", "general"),
        ("partner", "small"),
        ("dm", "small"),
        ("calibrate", "scratch"),  # the partner's calibration: built with any encoder's module, scratch's
        ("pretrain", "adaptive"),
        ("spaces", "adaptive"),
        ("bc", "adaptive"),
    ]
    assert needs("bc", "scratch") == [("data", ""), ("partner", "small"), ("dm", "small"), ("calibrate", "scratch")]
    assert needs("pretrain", "light") == needs("partner", "small") == [("data", "")]
    assert needs("pretrain", "adaptive") == [("data", ""), ("pretrain", "general")]
    assert needs("spaces", "light") == [("data", ""), ("pretrain", "light")]
    assert needs("calibrate", "") == [("data", ""), ("partner", "small"), ("dm", "small")]
    assert needs("data", "") == []


def test_a_preparation_job_is_a_run_named_by_its_identity_and_equal_whoever_needs_it(tmp_path):
    """The calibration and the spaces' vectors are runs: one per environment (or encoder), whichever agent, seed or
    objective needs them; their command line names the run, not the module's arguments."""
    bc = Run("bc", "light", "act", seed=1, objective="paper", root=str(tmp_path))
    rl = Run("rl", "light", seed=2, objective="paper", root=str(tmp_path))
    assert bc.objective == "lq"  # only RL's runs differ by objective
    calibrate = {r for r in (*bc.needs(), *rl.needs()) if r.stage == "calibrate"}
    spaces = {r for r in (*bc.needs(), *rl.needs()) if r.stage == "spaces"}
    assert len(calibrate) == len(spaces) == 1
    [job] = spaces
    assert job.args == ["experiment", "spaces", "--profile", "tiny", "--protocol", "paper", "--objective", "lq",
                        "--data", "data/default", "--outputs", str(tmp_path), "--encoders", "light", "--ability",
                        "act_speech", "--switch", "hardcoded", "--seeds", "0", "--config",
                        job.kind.config_file(job)]  # fmt: skip
    assert Path(job.kind.config_file(job)).parent == tmp_path / "jobs"  # its module's config, written by its scheduler
    assert job.outputs == {"candidates": f"{tmp_path}/pretrain/light/candidates"}
    assert job.module.stage == "rl" and job.module.args[:2] == ["rl", "fit"]
    with_args = dataclasses.replace(job, extra=("--model.env.objects", "false"))
    assert with_args == job and with_args.args[-3] == "--args=--model.env.objects false"
    assert with_args.args[-1] != job.args[-1]  # another module's config: another file
    from lq.cli import build_parser

    parsed = build_parser().parse_args(dataclasses.replace(job, extra=("--model.lr=1e-3",)).args)
    assert parsed.args == "--model.lr=1e-3" and parsed.encoders == ["light"]  # one token, read as --args' value
    assert Run("data", data="d").args == ["data", "generate", "d"] and Run("data", data="d").needs() == []
    assert not job.done  # its encoder is not trained: no file to look for yet


def test_an_overlay_without_a_file_for_a_stage_shares_its_bases_runs(tmp_path, monkeypatch):
    for name, text in (("base", "env_encoder: small\n"), ("over", "base: base\n")):
        (tmp_path / "profile" / name).mkdir(parents=True)
        (tmp_path / "profile" / name / "profile.yaml").write_text(text)
    for stage in ("env", "rl"):
        (tmp_path / "profile" / "base" / f"{stage}.yaml").write_text("{}\n")
    (tmp_path / "profile" / "over" / "rl.yaml").write_text("{}\n")
    for group, name in (("protocol", "paper"), ("objective", "lq")):
        (tmp_path / group).mkdir()
        (tmp_path / group / f"{name}.yaml").write_text("{}\n")
    monkeypatch.setattr(resolver, "ROOT", tmp_path)
    over = Resolver(profile="over", protocol="paper")
    assert (
        over.checkpoint("partner")
        == Resolver(profile="base").checkpoint("partner")
        == "outputs/partner/small/best.ckpt"
    )
    assert over.stage_dir("rl") == "outputs/over/rl" and over.stage_dir("bc") == "outputs/bc"


def test_bad_names_are_refused_with_the_choices(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="no such profile .PROFILE=huge.; choose from paper, quick, tiny"):
        Resolver(profile="huge")
    with pytest.raises(FileNotFoundError, match="no such lq config; .* has adaptive.yaml"):
        Resolver().configs("rl", "bert")
    with pytest.raises(FileNotFoundError, match=r"no such objective \(OBJECTIVE=table6\); choose from lq, paper"):
        Resolver(objective="table6")
    with pytest.raises(ValueError, match="unknown stage eval"):
        Resolver().configs("eval", "scratch")
    # a profile.yaml that is neither a base nor an overlay
    monkeypatch.setattr(resolver, "ROOT", tmp_path)
    (tmp_path / "profile" / "odd").mkdir(parents=True)
    (tmp_path / "profile" / "odd" / "profile.yaml").write_text("base: tiny\nenv_encoder: small\n")
    with pytest.raises(ValueError, match="odd/profile.yaml: a profile.yaml holds env_encoder .* or base"):
        Profile("odd").files("rl")


def test_rl_agents_of_another_objective_go_beside_lqs():
    assert Resolver().agent_checkpoint("rl", "scratch", "act", "hardcoded", 0) == (
        "outputs/rl/scratch/act-hardcoded/seed-0/agent.ckpt"
    )
    paper = Resolver(objective="paper")
    assert paper.agent_checkpoint("rl", "scratch", "act", "hardcoded", 0) == (
        "outputs/rl-paper/scratch/act-hardcoded/seed-0/agent.ckpt"
    )
    assert paper.stage_dir("bc") == "outputs/bc" and Resolver(profile="quick", objective="paper").stage_dir("rl") == (
        "outputs/quick/rl-paper"
    )


def test_a_run_is_a_value_that_knows_its_configs_outputs_needs_and_whether_it_is_done(tmp_path):
    from lq.data.outputs import mark_finished

    run = Run("rl", "adaptive", "act", "ratio", seed=2, profile="quick", objective="lq", root=str(tmp_path))
    assert run == Run("rl", "adaptive", "act", "ratio", 2, "quick", root=str(tmp_path), extra=("--x", "1"))
    assert [f.name for f in run.configs] == ["agent.yaml", "rl.yaml", "adaptive.yaml", "rl.yaml", "rl.yaml",
                                             "paper.yaml", "lq.yaml"]  # fmt: skip
    assert run.dir == f"{tmp_path}/quick/rl/adaptive/act-ratio/seed-2"  # quick has its own RL file: its own runs
    assert run.outputs == {"checkpoint": f"{run.dir}/agent.ckpt", "last": f"{run.dir}/last.ckpt",
                           "done": f"{run.dir}/done.json", "config": f"{run.dir}/config.yaml"}  # fmt: skip
    # its config as lq reads it: the files merged, the arguments over them
    assert run.config["model"]["init_from"] == "bc" and run.config["model"]["ability"] == "act"
    assert run.config["model"]["env"]["partner_checkpoint"] == f"{tmp_path}/quick/partner/small/best.ckpt"
    assert run.threads == 1
    # what it needs first: general before adaptive, the environment's models, its encoder, its BC start
    needs = [(r.stage, r.encoder) for r in run.needs()]
    assert needs == [("data", ""), ("pretrain", "general"), ("partner", "small"), ("dm", "small"),
                     ("calibrate", "scratch"), ("pretrain", "adaptive"), ("spaces", "adaptive"),
                     ("bc", "adaptive")]  # fmt: skip
    assert run.needs()[-1].dir == f"{tmp_path}/quick/bc/adaptive/act-ratio/seed-2"
    paper = Run("rl", "scratch", objective="paper", root=str(tmp_path))
    assert paper.dir.startswith(f"{tmp_path}/rl-paper/") and "bc" not in [r.stage for r in paper.needs()]
    unstarted = Run("rl", "scratch", root=str(tmp_path), extra=("--model.init_from", "null"))
    assert "bc" not in [r.stage for r in unstarted.needs()]  # the arguments count: no BC start
    assert not run.done
    Path(run.checkpoint).parent.mkdir(parents=True)
    Path(run.checkpoint).touch()
    assert not run.done  # a checkpoint alone: its run did not finish
    mark_finished(run.checkpoint)
    assert run.done
    with pytest.raises(ValueError, match="unknown stage fit: choose from pretrain, partner, dm, rl, bc, llm_bc, data"):
        Run("fit", "scratch")


def test_merged_config_reads_files_then_arguments_over_them(tmp_path):
    from lq.conf.resolver import merged_config

    (tmp_path / "a.yaml").write_text("model: {lr: 0.1, agent: {gru_hidden: 8, policy_layers: 3}}\nthreads: 2\n")
    (tmp_path / "b.yaml").write_text("model: {agent: {gru_hidden: 16}}\n")
    config = merged_config(["rl", "fit", "--config", str(tmp_path / "a.yaml"), "--config", str(tmp_path / "b.yaml"),
                            "--model.lr=0.5", "--model.init_from", "null", "--model.env.objects", "false"])  # fmt: skip
    assert config == {
        "model": {"lr": 0.5, "agent": {"gru_hidden": 16, "policy_layers": 3}, "init_from": None,
                  "env": {"objects": False}},
        "threads": 2,
    }  # fmt: skip
    with pytest.raises(ValueError, match="'stray': expected --KEY VALUE"):
        merged_config(["--model.lr", "1", "stray"])
