import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint

from lq.lit.bc import BCModule
from lq.lit.checkpoints import load_agent
from tests.samples import env_spec, tiny_agent_config


def _module(root, **kwargs):
    kwargs = {
        "env": env_spec(root),
        "batch_size": 8,
        "lr": 3e-3,
        "context_length": 64,
        "candidate_dim": 16,
        "agent": tiny_agent_config(),
        "eval_max_steps": 4,
        "eval_batch_size": 8,
        **kwargs,
    }
    return BCModule(**kwargs)


def _trainer(tmp_path, epochs, **kwargs):
    return L.Trainer(
        max_epochs=epochs,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[ModelCheckpoint(dirpath=tmp_path, filename="best", monitor="val/loss", save_last=True)],
        accelerator="cpu",
        **kwargs,
    )


def test_cloning_episodes_are_the_demonstrations_self_turns(setup_dir):
    module = _module(setup_dir)
    module.setup("fit")
    train = module.episodes["train"]
    assert len(train) == len(module.demos.train)  # generated demonstrations all know their quest
    for episode in train:
        assert len(episode.contexts) == len(episode.acted) == len(episode.targets) == len(episode.valid_action_ids)
        for acted, target, valid in zip(episode.acted, episode.targets, episode.valid_action_ids, strict=True):
            if acted:  # the demonstrated action is valid when it is taken
                assert target in valid


@pytest.mark.slow
def test_behaviour_cloning_fits_the_training_demonstrations(setup_dir, tmp_path):
    torch.manual_seed(0)
    module = _module(setup_dir, candidate_dim=32, lr=2e-3)  # at 3e-3 Adam overshoots late, by chance of rounding
    module.setup("fit")
    batch = module.episodes["train"][:8]
    before = module.cloning_loss(batch)["loss"].item()
    module.episodes["train"] = batch  # one batch again and again: the loss must fall
    trainer = _trainer(tmp_path, 150, limit_val_batches=1, check_val_every_n_epoch=150)
    trainer.fit(module)
    after = module.cloning_loss(batch)
    assert after["loss"].item() < 0.2 * before, (before, after["loss"].item())
    assert after["speech_accuracy"].item() >= 0.6  # among every utterance of the data (chance: 1 in hundreds)
    assert after["action_accuracy"].item() == 1.0
    for name in ("val/loss", "val/action_accuracy", "val/speech_accuracy", "train/loss"):
        assert name in trainer.callback_metrics


@pytest.mark.slow
def test_a_saved_agent_loads_and_evaluates_the_same(setup_dir, tmp_path):
    module = _module(setup_dir, seed=3)
    trainer = _trainer(tmp_path, 1, limit_train_batches=2, limit_val_batches=1)
    trainer.fit(module)
    expected = module.evaluate("test", seed=0)
    loaded = load_agent(tmp_path / "last.ckpt")
    assert isinstance(loaded, BCModule) and loaded.hparams.seed == 3
    result = loaded.evaluate("test", seed=0)
    assert [e["transcript"] for e in result.episodes] == [e["transcript"] for e in expected.episodes]
    assert len(result.episodes) == 6
    # the baselines: the same code path and quests, another policy
    for policy in ("random", "overlap"):
        baseline = loaded.evaluate("test", seed=0, policy=policy)
        assert [e["quest_id"] for e in baseline.episodes] == [e["quest_id"] for e in expected.episodes]
        assert [e["transcript"] for e in baseline.episodes] != [e["transcript"] for e in expected.episodes]


def test_load_agent_names_the_problem(setup_dir, tmp_path):
    with pytest.raises(FileNotFoundError, match="make bc"):
        load_agent(tmp_path / "missing.ckpt")
    with pytest.raises(ValueError, match="not an lq agent checkpoint"):
        load_agent(setup_dir / "partner.ckpt")
