"""Agents played zero-shot on worlds they never saw: quests generated from the real LIGHT environment DB."""

import pytest
import torch

from lq.cli import main
from lq.data.dataset import load_dataset
from lq.data.demos import demonstration_spaces
from lq.generate import generate_dataset
from lq.lit.checkpoints import load_agent
from tests.samples import tiny_env_models


@pytest.fixture
def worlds(light_env, tmp_path):
    """Quests generated from the LIGHT DB (tiny scale), with their own partner and DM."""
    root = tmp_path / "light"
    generate_dataset(root / "data", light_db=light_env, scale="tiny", seed=0, log=lambda _: None)
    tiny_env_models(root)
    return root


@pytest.mark.slow
def test_an_agent_plays_the_quests_of_worlds_it_never_saw_with_its_own_weights(trained_agent, worlds, tmp_path, capsys):
    """The agent on the LIGHT-DB quests: their spaces, their partner and DM, its learned weights and word pieces
    unchanged (only the spaces' candidate rows are the new data's); every test quest played; ``lq eval --worlds``
    prints its table."""
    agent = load_agent(trained_agent)
    there = agent.on_worlds(worlds / "data", worlds / "partner.ckpt", worlds / "dm.ckpt")
    light = load_dataset(worlds / "data")
    assert (there.action_space, there.utterance_space) == demonstration_spaces(light.demos.all())
    assert there.action_space != agent.action_space
    spaces = {f"agent.{k}" for k in agent.agent.space_state()}
    mine, theirs = agent.state_dict(), there.state_dict()
    assert mine.keys() == theirs.keys() and spaces
    assert all(torch.equal(mine[k], theirs[k]) for k in mine if k not in spaces)
    assert torch.equal(there.agent.encoder.vocabulary.ids, agent.agent.encoder.vocabulary.ids)
    there.hparams.eval_max_steps = 3
    played = there.evaluate("test", 0)
    assert len(played.episodes) == len(light.demos.test) == 6
    assert {e["quest_id"] for e in played.episodes} == {d.conv_extra["quest_id"] for d in light.demos.test}

    out = tmp_path / "table"
    models = ["--worlds-partner", str(worlds / "partner.ckpt"), "--worlds-dm", str(worlds / "dm.ckpt")]
    args = ["eval", str(trained_agent), "--worlds", str(worlds / "data"), *models, "--max-steps", "3", "--greedy-only",
            "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert f"the test quests of {worlds / 'data'}" in printed
    assert str(worlds / "data") in out.with_suffix(".md").read_text()


@pytest.mark.slow
def test_an_agent_with_worlds_plays_them_at_every_zero_shot_evaluation(setup_dir, worlds, tmp_path):
    """``model.worlds``: a budget's evaluation (and so every zero-shot one) plays the worlds' test quests too, logged as
    ``budget/N/worlds/...`` beside the agent's own test quests."""
    from tests.lit.test_rl import _budget_fit

    kwargs = {"data_dir": str(worlds / "data"), "partner_checkpoint": str(worlds / "partner.ckpt"),
              "dm_checkpoint": str(worlds / "dm.ckpt")}  # fmt: skip
    module, _, _, evaluated = _budget_fit(setup_dir, tmp_path, 50, budgets=(12,), worlds=kwargs)
    [(_, logged)] = evaluated
    assert {"budget/12/worlds/act_goal_rate", "budget/12/test/act_goal_rate"} <= set(logged)
    there = module.worlds_agent().evaluate("test", 0)
    assert logged["budget/12/worlds/act_goal_rate"] == there.act_goal_rate
    with pytest.raises(ValueError, match="model.worlds: give data_dir, partner_checkpoint, dm_checkpoint"):
        type(module)(env=module.env_spec, lr=1e-4, worlds={"data_dir": "x"})
    gone = type(module)(env=module.env_spec, lr=1e-4, worlds={**kwargs, "dm_checkpoint": str(worlds / "no-dm.ckpt")})
    with pytest.raises(FileNotFoundError, match="model.worlds: dm_checkpoint .*no-dm.ckpt not found"):
        gone.setup("fit")  # before anything trains
