"""The check that a stage's context lengths fit its encoders' positions (lq/conf/lengths.py)."""

import pytest

from lq import stages
from lq.conf.lengths import length_problems
from lq.conf.resolver import merged_config, profiles
from lq.stages import Resolver
from tests.samples import parsed_cli, tiny_env_models

ENCODERS = ("scratch", "light", "general", "general_light", "adaptive")


def _config(files) -> dict:
    return merged_config([a for f in files for a in ("--config", str(f))])


@pytest.mark.parametrize("profile", profiles())
def test_every_profiles_context_lengths_fit_its_encoders(profile):
    """Every stage of every profile, for every encoder, as the resolver orders its files (the paper profile once fed
    1024 word pieces to a scratch encoder, a partner and a DM of 512 positions)."""
    where = Resolver(profile=profile)
    for stage in stages.STAGES:
        for encoder in ENCODERS if stage not in stages.ENV_STAGES else (where.env_encoder,):
            files = where.configs(stage, encoder)
            config = _config(files)
            if stage in stages.AGENT_STAGES and encoder != "scratch":  # lq stage links its pretraining run
                config["model"]["pretrained_checkpoint"] = where.checkpoint("pretrain", encoder)
            assert length_problems(stage, config, files) == [], (stage, encoder)


def _agent_args(tmp_path, *extra: str, stage: str = "rl") -> list[str]:
    files = Resolver(profile="paper").configs(stage, "scratch")
    models = ["--model.env.partner_checkpoint", str(tmp_path / "partner.ckpt")]
    models += ["--model.env.dm_checkpoint", str(tmp_path / "dm.ckpt")]
    return [*(a for f in files for a in ("--config", str(f))), *models, *extra]


def _refusal(stage: str, args: list[str]) -> str:
    with pytest.raises(ValueError) as refused:
        parsed_cli(stage, args)
    return str(refused.value)


def test_a_stage_refuses_a_context_longer_than_its_scratch_encoder_in_one_line_naming_file_field_and_fix(tmp_path):
    over = tmp_path / "long.yaml"
    over.write_text("model:\n  context_length: 2048\n")
    message = _refusal("rl", _agent_args(tmp_path, "--config", str(over)))
    assert message == (
        f"{over}: model.context_length 2048 exceeds the 1024 positions of the agent's scratch encoder; set "
        "model.agent.scratch.max_positions: 2048 (or model.context_length: 1024 or less)"
    )
    message = _refusal("bc", _agent_args(tmp_path, "--model.agent.scratch.max_positions", "512", stage="bc"))
    assert message.startswith("conf/profile/paper/bc.yaml: model.context_length 1024 exceeds the 512 positions")


def test_a_stage_refuses_an_environment_read_longer_than_its_partner_and_dm_have_positions(tmp_path):
    tiny_env_models(tmp_path)  # 512 positions each
    message = _refusal("rl", _agent_args(tmp_path, "--model.env.context_length", "1024"))
    assert message.startswith("the command line: model.env.context_length 1024 exceeds the 512 positions of the")
    assert "the Dungeon Master" in message and message.endswith("set model.env.context_length: 512 or less (the "
                                                                "length they were trained at, at most)")  # fmt: skip
    assert "\n" not in message
    assert length_problems("rl", _config(Resolver(profile="paper").configs("rl", "scratch"))) == []  # none trained


def test_a_pretraining_stage_refuses_an_input_longer_than_minilms_positions(tmp_path):
    over = tmp_path / "long.yaml"
    over.write_text("data:\n  context_length: 1024\n")
    files = Resolver(profile="paper").configs("pretrain", "general")
    message = _refusal("pretrain", [*(a for f in [*files, over] for a in ("--config", str(f)))])
    assert message == (
        f"{over}: data.context_length 1024 exceeds the 512 positions of the general encoder; set "
        "data.context_length: 512 or less (an encoder initialised from minilm keeps its positions)"
    )
    light = Resolver(profile="paper").configs("pretrain", "light")  # from scratch: its positions can grow instead
    problems = length_problems("pretrain", {**_config([*light, over]), "model": {"encoder": {"spec": {
        "init": "scratch", "max_positions": 512}}}}, [*light, over])  # fmt: skip
    assert problems[0].endswith("set model.encoder.spec.max_positions: 1024 (or data.context_length: 512 or less)")
