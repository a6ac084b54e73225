"""Training pools (``lq data generate --train-demos N``): more training quests, the same evaluation."""

import filecmp
import json

import lightning as L
import pytest
import torch

from lq.data.dataset import load_dataset
from lq.data.demos import demonstration_spaces
from lq.eval import evaluate_agent
from lq.generate import generate_dataset
from lq.lit.rl import RLModule
from tests.lit.test_rl import _module, _Record, _trainer
from tests.samples import env_spec, tiny_agent_config


@pytest.fixture(scope="module")
def scale(setup_dir, tmp_path_factory):
    """The default scale's dataset (seed 3), and as a training pool of 412 demonstrations (12 more), each beside
    setup_dir's partner and DM. The default scale: the tiny one's spaces are too small to win a further quest in."""
    roots = {}
    for name, train_demos in (("scale", None), ("pool", 412)):
        roots[name] = root = tmp_path_factory.mktemp(name)
        generate_dataset(root / "data", scale="default", seed=3, train_demos=train_demos, log=lambda _: None)
        for model in ("partner.ckpt", "dm.ckpt"):
            (root / model).symlink_to(setup_dir / model)
    return roots["scale"], roots["pool"]


def test_a_pool_keeps_the_scales_evaluation_and_spaces_and_holds_a_smaller_pool(scale, tmp_path):
    """Validation and test quests and demonstrations byte for byte the scale's, its training ones first; the spaces
    the scale's though the pool's demonstrations say more; every pool quest winnable within them; a larger pool of the
    same seed holds a smaller one's."""
    base, pool = scale
    small, big = load_dataset(base / "data"), load_dataset(pool / "data")
    for split in ("valid", "test"):
        assert filecmp.cmp(base / "data/demos" / f"{split}.json", pool / "data/demos" / f"{split}.json", False)
        assert not filecmp.dircmp(base / "data/quests" / split, pool / "data/quests" / split).diff_files
    assert len(big.demos.train) == 412 and big.demos.train[:400] == small.demos.train
    assert big.spaces == {"train": 400, "valid": 60, "test": 80} and small.spaces is None
    spaces = demonstration_spaces(small.demos.all())
    assert demonstration_spaces(big.space_demonstrations()) == spaces
    assert demonstration_spaces(big.demos.all()) != spaces  # what the spaces would have been from every demonstration
    quests = big.quests_by_id()
    for demo in big.demos.train[400:]:
        assert quests[demo.conv_extra["quest_id"]].goal in spaces[0]
        assert {a.text for a in demo.self_acts("speech")} & set(spaces[1])
    generate_dataset(tmp_path / "bigger", scale="default", seed=3, train_demos=415, log=lambda _: None)
    assert load_dataset(tmp_path / "bigger").demos.train[:412] == big.demos.train
    with pytest.raises(ValueError, match="at least the tiny scale's 24"):
        generate_dataset(tmp_path / "fewer", scale="tiny", seed=7, train_demos=10, log=lambda _: None)
    assert not (tmp_path / "fewer").exists()


@pytest.mark.slow
def test_the_same_agent_is_evaluated_against_the_same_candidates_whatever_the_pool(scale):
    """An agent built on the pool or on the scale's dataset has the same spaces, in the same order; the same weights
    played on the test quests of either give the same episodes, turn for turn."""
    agents = [RLModule(env=env_spec(root), context_length=64, candidate_dim=8, agent=tiny_agent_config(),
                       eval_max_steps=4, eval_batch_size=20) for root in scale]  # fmt: skip
    agents[0].build_agent()
    agents[1].build_agent(vocabulary=agents[0].agent.encoder.vocabulary.ids)  # the one agent: its word pieces
    agents[1].load_state_dict(agents[0].state_dict())
    assert agents[0].action_space == agents[1].action_space and agents[0].utterance_space == agents[1].utterance_space
    played = [evaluate_agent(agent, "test", 0).episodes for agent in agents]
    assert len(played[0]) == 80
    assert json.dumps(played[0], sort_keys=True, default=str) == json.dumps(played[1], sort_keys=True, default=str)


def _curriculum_fit(root, folder, epochs, ckpt_path=None):
    """The RL run of tests/lit/test_rl.py on ``root``'s data under the rarity curriculum (2 stages, the whole pool open
    from 24 interactions: the third update); the quests it drew, with the interactions reached when drawn."""
    L.seed_everything(0)
    module, record = _module(root, curriculum="rarity", curriculum_stages=2, curriculum_interactions=24), _Record()
    drawn = []
    trainer = _trainer(folder, epochs)
    trainer.callbacks.append(record)

    class Draws(L.Callback):
        def on_train_start(self, trainer, pl_module):
            sampler = pl_module.env.sampler
            pl_module.env.sampler = lambda rng: drawn.append((sampler.reached, sampler(rng))) or drawn[-1][1]

    trainer.callbacks.append(Draws())
    trainer.fit(module, ckpt_path=ckpt_path)
    return module, record.steps, drawn


@pytest.mark.slow
def test_a_curriculum_run_on_a_pool_draws_the_open_quests_and_resumes_exactly(scale, tmp_path):
    """Under the rarity curriculum, the quests drawn before the pool widens are all of its common half, after it the
    rare half too; a run killed after an epoch and resumed from its last checkpoint ends with the same weights, the
    same losses and the same priority table as the run that was not."""
    _, pool = scale
    whole, steps, drawn = _curriculum_fit(pool, tmp_path / "whole", 3)
    common = set(whole.sampler.open(0))
    assert len(common) == (len(whole.env.instances) + 1) // 2
    assert {i for at, i in drawn if at < 24} <= common and {i for at, i in drawn if at >= 24} - common
    _curriculum_fit(pool, tmp_path / "killed", 1)
    resumed, resumed_steps, _ = _curriculum_fit(pool, tmp_path / "resumed", 3, str(tmp_path / "killed" / "last.ckpt"))
    assert resumed_steps == steps[2:] and resumed.sampler.state_dict() == whole.sampler.state_dict()
    for (name, p), q in zip(whole.state_dict().items(), resumed.state_dict().values(), strict=True):
        assert torch.equal(p, q), name
