import pytest

from lq.envs.protocol import PROTOCOLS
from lq.envs.spec import EnvSpec, nested, overridden


def test_a_spec_is_its_fields_once_read_back_from_its_dict_with_unknown_or_missing_fields_named():
    spec = EnvSpec("data/default", "p.ckpt", "d.ckpt", protocol="restricted", objects=True)
    assert spec.protocol == PROTOCOLS["restricted"]  # a name or a dict becomes the Protocol
    assert EnvSpec.of(spec.as_dict()) == spec and EnvSpec.of(spec) is spec
    assert spec.replace(context_length=64).context_length == 64 and spec.context_length == 256
    with pytest.raises(ValueError, match=r"model.env: unknown field context_objects; the fields are data_dir, "):
        EnvSpec.of({**spec.as_dict(), "context_objects": True})
    with pytest.raises(ValueError, match=r"model.env: dm_checkpoint missing; set model.env.dm_checkpoint"):
        EnvSpec.of({"data_dir": "d", "partner_checkpoint": "p.ckpt"})


def test_hyperparameters_from_before_the_spec_are_read_as_one_env():
    """A checkpoint saved before EnvSpec kept the environment's fields at the top level: loaded, they make its env
    (the partner and DM read at the agent's own length where it saved no env_context_length; no protocol saved: the
    restricted one, whose choice ``restrict`` said)."""
    flat = {
        "data_dir": "data/default",
        "partner_checkpoint": "p.ckpt",
        "dm_checkpoint": "d.ckpt",
        "context_length": 128,
        "context_objects": True,
        "partner_calibration": "completions",
        "restrict": True,
        "lr": 1e-3,
    }
    h = nested(flat)
    assert set(h) == {"context_length", "lr", "env"}
    spec = EnvSpec.of(h["env"])
    assert (spec.context_length, spec.objects, spec.partner_calibration) == (128, True, "completions")
    assert spec.protocol == PROTOCOLS["restricted"]
    assert EnvSpec.of(nested({**flat, "env_context_length": 64, "protocol": "paper"})["env"]) == spec.replace(
        context_length=64, protocol=PROTOCOLS["paper"]
    )
    assert nested(h) is h  # already one env


def test_overrides_by_their_old_names_reach_the_env():
    h = nested({"data_dir": "d", "partner_checkpoint": "p", "dm_checkpoint": "m", "context_length": 128})
    out = overridden(h, {"protocol": "restricted", "eval_max_steps": 4, "context_objects": False})
    assert out["eval_max_steps"] == 4 and out["env"]["objects"] is False
    assert out["env"]["protocol"] == PROTOCOLS["restricted"].as_dict() and out["context_length"] == 128
    assert h["env"].get("objects") is None  # the saved ones are left as they were


def test_an_agent_saved_before_a_field_was_added_reads_as_built_with_its_default():
    """A BC agent trained before ``head_temperature`` existed is the same agent as one built now without it: an RL
    run may start from it, and a table's BC start is not trained again."""
    from lq.lit.agent import SAME_AGENT, hparams_at

    now = {"agent": {"gru_hidden": 16, "head_temperature": False}, "env": {"data_dir": "d"}}
    before = {"agent": {"gru_hidden": 16}, "data_dir": "d"}  # flat environment keys, no head_temperature
    assert hparams_at(before, SAME_AGENT) == hparams_at(now, SAME_AGENT)
    assert hparams_at(before, SAME_AGENT) != hparams_at({**now, "agent": {"gru_hidden": 16, "head_temperature": True}},
                                                       SAME_AGENT)  # fmt: skip


def test_the_agents_environment_is_stated_once_and_the_agents_config_states_the_same(tmp_path):
    """EnvSpec's defaults are a spec's that names nothing else (code, old checkpoints); the agents' environment is
    AGENTS_ENVIRONMENT over them: conf/agent.yaml (the stage CLIs) and the Gymnasium entry give the same values."""
    import yaml

    from lq.conf import path
    from lq.envs.gym import environment_arguments
    from lq.envs.spec import AGENTS_ENVIRONMENT

    assert (EnvSpec.of({"data_dir": "d", "partner_checkpoint": "p", "dm_checkpoint": "m"}).partner_calibration,
            EnvSpec("d", "p", "m").objects) == ("share", False)  # fmt: skip
    env = yaml.safe_load(path("agent.yaml").read_text())["model"]["env"]
    assert {key: env[key] for key in AGENTS_ENVIRONMENT} == AGENTS_ENVIRONMENT == {
        "partner_calibration": "completions",
        "objects": True,
    }
    (tmp_path / "manifest.json").write_text("{}")
    for name in ("p.ckpt", "m.ckpt"):
        (tmp_path / name).touch()
    given = environment_arguments(tmp_path, tmp_path / "p.ckpt", tmp_path / "m.ckpt", "paper", {"context_length": 64})
    assert given[3] == {**AGENTS_ENVIRONMENT, "context_length": 64}  # lq/Quest-v0's, where its caller sets none
