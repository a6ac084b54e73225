"""The resolver: one place for a stage's config files, their order and every checkpoint path."""

import pytest

from lq.conf import ROOT, resolver
from lq.conf.resolver import Profile, Resolver


def test_a_profile_is_a_folder_an_overlay_reads_after_its_base():
    quick, tiny = Profile("quick"), Profile("tiny")
    assert quick.base == tiny and quick.is_overlay and not tiny.is_overlay
    assert quick.env_encoder == tiny.env_encoder == "small" and Profile("paper").env_encoder == "general"
    assert quick.files("rl") == [ROOT / "profile/tiny/rl.yaml", ROOT / "profile/quick/rl.yaml"]
    assert quick.files("partner") == [ROOT / "profile/tiny/env.yaml", ROOT / "profile/quick/env.yaml"]
    assert tiny.files("dm") == [ROOT / "profile/tiny/env.yaml"]
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
    args = paper.stage_args("rl", "light", seed=1)
    assert args[args.index("--model.env.partner_checkpoint") + 1] == paper.checkpoint("partner")
    assert args[args.index("--pretrain_dir") + 1] == "outputs/release/pretrain"
    adaptive = tiny.stage_args("pretrain", "adaptive", out_dir="outputs/experiments/table45/seed-1")
    assert adaptive[adaptive.index("--model.encoder.init_from") + 1] == (
        "outputs/experiments/table45/seed-1/general/best.ckpt"  # the general encoder of the same folder
    )


def test_what_a_stage_needs_first():
    tiny = Resolver()
    assert tiny.needs("rl", "adaptive") == [
        ("pretrain", "general"),
        ("partner", "small"),
        ("dm", "small"),
        ("pretrain", "adaptive"),
    ]
    assert tiny.needs("bc", "scratch") == [("partner", "small"), ("dm", "small")]
    assert tiny.needs("pretrain", "light") == [] and tiny.needs("partner", "small") == []


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
