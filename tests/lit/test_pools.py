"""Training pools (``lq data pool DATA N``): more training quests, the same evaluation."""

import json

import lightning as L
import pytest
import torch

from lq.cli import main
from lq.data.dataset import load_dataset
from lq.data.demos import demonstration_spaces
from lq.data.errors import DataFormatError
from lq.data.pools import load_pool
from lq.eval import evaluate_agent
from lq.generate import generate_dataset, generate_pool
from lq.lit.agent import readable_texts
from lq.lit.rl import RLModule
from tests.lit.test_rl import _module, _Record, _trainer
from tests.samples import env_spec, tiny_agent_config


@pytest.fixture(scope="module")
def scale(setup_dir, tmp_path_factory):
    """A dataset of the default scale (seed 3; the tiny scale's spaces are too small to win a further quest in) beside
    setup_dir's partner and DM, and a training pool of 12 quests for it."""
    root = tmp_path_factory.mktemp("scale")
    generate_dataset(root / "data", scale="default", seed=3, log=lambda _: None)
    for model in ("partner.ckpt", "dm.ckpt"):
        (root / model).symlink_to(setup_dir / model)
    generate_pool(root / "data", root / "pool", 12, log=lambda _: None)
    return root


def test_a_pool_is_drawn_for_its_dataset_winnable_within_its_spaces(scale, tmp_path, capsys):
    """Every pool quest's goal is in the action space of the dataset's training and validation demonstrations and one
    of its demonstrated self utterances in their utterance space (the test's never choose it); a larger pool of the
    same dataset holds a smaller one's; a pool is refused for another dataset."""
    dataset, pool = load_dataset(scale / "data"), load_pool(scale / "pool", scale / "data")
    actions, utterances = demonstration_spaces(dataset.demos.train + dataset.demos.valid)
    assert len(pool.demos) == 12
    assert not {q.quest_id for q in pool.quests} & {q.quest_id for q in dataset.quests.all()}
    by_id = {q.quest_id: q for q in pool.quests}
    for demo in pool.demos:
        assert by_id[demo.conv_extra["quest_id"]].goal in actions
        assert {a.text for a in demo.self_acts("speech")} & set(utterances)
    assert demonstration_spaces(dataset.demos.all() + pool.demos) != demonstration_spaces(dataset.demos.all())
    assert main(["data", "pool", str(scale / "data"), "15", "--out", str(tmp_path / "bigger")]) == 0
    assert "--model.env.pool" in capsys.readouterr().out
    assert load_pool(tmp_path / "bigger", scale / "data").demos[:12] == pool.demos
    generate_dataset(tmp_path / "other", scale="tiny", seed=1, log=lambda _: None)
    with pytest.raises(DataFormatError, match="pool_of.*lq data pool"):
        load_pool(scale / "pool", tmp_path / "other")
    assert json.loads((scale / "pool/manifest.json").read_text())["seed"] == 3


def test_data_stats_counts_what_a_pool_quest_can_be_won_with_in_its_datasets_spaces(scale, capsys):
    """``lq data stats POOL --spaces DATA``: a dataset's own demonstrations lie wholly in its spaces, and a pool's
    have one of their self utterances there, seldom more (its speech goal has that one target where the dataset's
    quests have all of theirs), and every goal."""
    from lq.data.stats import space_stats

    own = space_stats(scale / "data", scale / "data")
    assert own["train: mean of them in the utterance space"] == own["train: mean distinct self utterances per demo"] > 2
    assert own["test: share of demos with one in it"] == 1.0
    pool = space_stats(scale / "pool", scale / "data")
    assert set(pool) == {k for k in own if k.startswith("train: ")}  # a pool has training quests alone
    assert pool["train: share of demos with one in it"] == pool["train: share of goals in the action space"] == 1.0
    kinds = ("of them in the utterance space", "distinct self utterances per demo")
    in_space, per_demo = (pool[f"train: mean {k}"] for k in kinds)
    assert 1.0 <= in_space < per_demo / 2
    assert main(["data", "stats", str(scale / "pool"), "--spaces", str(scale / "data")]) == 0
    out = capsys.readouterr().out
    assert f"In the action and utterance spaces of {scale / 'data'}" in out
    assert "train: share of goals in the action space" in out
    assert main(["data", "stats", str(scale / "data/demos/train.json"), "--spaces", str(scale / "data")]) == 1
    err = capsys.readouterr()
    assert not err.out and "--spaces counts the demonstrations of a dataset" in err.err
    assert "Fix: pass a dataset folder" in err.err


@pytest.mark.slow
def test_the_same_agent_is_evaluated_against_the_same_candidates_whatever_the_pool(scale):
    """An agent trained with a pool has the dataset's spaces, in the same order, and plays the same test quests: the
    same weights played with or without the pool give the same episodes, turn for turn; only its training split
    grows (by the pool's quests) and its scratch encoder's word pieces are drawn from the pool's texts too."""
    agents = [RLModule(env=env_spec(scale, pool=pool), lr=1e-4, context_length=64, candidate_dim=8,
                       agent=tiny_agent_config(), eval_max_steps=4, eval_batch_size=20)
              for pool in (None, str(scale / "pool"))]  # fmt: skip
    agents[0].build_agent()
    agents[1].build_agent(vocabulary=agents[0].agent.encoder.vocabulary.ids)  # the one agent: its word pieces
    agents[1].load_state_dict(agents[0].state_dict())
    assert agents[0].action_space == agents[1].action_space and agents[0].utterance_space == agents[1].utterance_space
    played = [evaluate_agent(agent, "test", 0).episodes for agent in agents]
    assert len(played[0]) == 80
    assert json.dumps(played[0], sort_keys=True, default=str) == json.dumps(played[1], sort_keys=True, default=str)
    train = [agent.env_spec.build("train", 4, 0) for agent in agents]
    assert len(train[1].instances) == len(train[0].instances) + 12
    assert len(agents[1].demonstration_episodes("train")) > len(agents[0].demonstration_episodes("train"))
    assert readable_texts(scale / "data", str(scale / "pool")) > readable_texts(scale / "data")


def _curriculum_fit(root, folder, epochs, ckpt_path=None):
    """The RL run of tests/lit/test_rl.py on ``root``'s data and pool under the rarity curriculum (2 stages, the whole
    pool open from 24 interactions: the third update); the quests it drew, with the interactions reached when drawn."""
    L.seed_everything(0)
    env = env_spec(root, pool=str(root / "pool"))
    settings = {"curriculum": "rarity", "curriculum_stages": 2, "curriculum_interactions": 24}
    module, record, drawn = _module(root, env=env, **settings), _Record(), []
    trainer = _trainer(folder, epochs)

    class Draws(L.Callback):
        def on_train_start(self, trainer, pl_module):
            sampler = pl_module.env.sampler
            pl_module.env.sampler = lambda rng: drawn.append((sampler.reached, sampler(rng))) or drawn[-1][1]

    trainer.callbacks += [record, Draws()]
    trainer.fit(module, ckpt_path=ckpt_path)
    return module, record.steps, drawn


@pytest.mark.slow
def test_a_curriculum_run_on_a_pool_draws_the_open_quests_and_resumes_exactly(scale, tmp_path):
    """Under the rarity curriculum on the dataset and its pool, the quests drawn before the pool widens are all of its
    common half, after it the rare half too; a run killed after an epoch and resumed from its last checkpoint ends with
    the same weights, the same losses and the same priority table as the run that was not."""
    whole, steps, drawn = _curriculum_fit(scale, tmp_path / "whole", 3)
    common = set(whole.a2c.sampler.open(0))
    assert len(whole.env.instances) == 412 and len(common) == 206
    assert {i for at, i in drawn if at < 24} <= common and {i for at, i in drawn if at >= 24} - common
    _curriculum_fit(scale, tmp_path / "killed", 1)
    resumed, resumed_steps, _ = _curriculum_fit(scale, tmp_path / "resumed", 3, str(tmp_path / "killed" / "last.ckpt"))
    assert resumed_steps == steps[2:] and resumed.a2c.sampler.state_dict() == whole.a2c.sampler.state_dict()
    for (name, p), q in zip(whole.state_dict().items(), resumed.state_dict().values(), strict=True):
        assert torch.equal(p, q), name
