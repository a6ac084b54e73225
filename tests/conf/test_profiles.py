"""The profiles' stage configs (``lq/conf/profile``): the quick profile trains every stage less than tiny and apart from
it; where each profile's RL run chooses its agent on the validation quests."""

from pathlib import Path

from lq import experiments as X
from tests.samples import parsed_cli, written

ROOT = Path(__file__).resolve().parents[2]


def test_the_quick_profile_trains_every_stage_less_than_tiny_and_apart_from_it(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    quick = X.Setup(profile="quick")
    config = X.stage_config(X.Config("rl", "general"), quick, 0)
    assert config["sources"][-4:] == [
        "profile/tiny/rl.yaml",
        "profile/quick/rl.yaml",
        "protocol/paper.yaml",
        "objective/lq.yaml",  # RL's objective last: it may set sizes of its own
    ]
    assert config["model"]["env"]["partner_checkpoint"] == "outputs/quick/partner/small/best.ckpt"
    assert config["model"]["pretrained_checkpoint"] == "outputs/quick/pretrain/general/best.ckpt"
    assert config["checkpoint"]["dirpath"] == "outputs/quick/rl/general/act_speech-hardcoded/seed-0"  # not over tiny's
    for stage, encoder, epochs in (("rl", "scratch", 2), ("bc", "scratch", 2), ("partner", "small", 2)):
        config = parsed_cli(stage, written(X.stage_config(X.Config(stage, encoder), quick, 0), tmp_path)).config
        assert config.trainer.max_epochs == epochs  # tiny's 8, 5 and 6
        if stage == "partner":  # tiny's sizes: the partner and DM read 64 word pieces, the agents 128
            assert config.data.context_length == 64
        else:
            assert (config.model.context_length, config.model.env.context_length) == (128, 64)
    args = written(X.stage_config(X.Config("pretrain", "general_light"), quick, 0), tmp_path)
    assert parsed_cli("pretrain", args).config.data.max_train_examples == 128


def test_a_tiny_rl_run_chooses_its_agent_on_validation_as_the_generalisation_experiment_does(tmp_path):
    """The generalisation experiment's checkpoint rule is every tiny RL run's (make rl, Tables 1, 2 and 7): the agent
    chosen on the validation quests every 16,000 interactions, twice in a 400-update run; the quickstart's 100 updates
    (8,000 interactions) choose nothing, their last weights the agent."""
    selections = {}
    for profile in ("tiny", "quick", "paper"):
        setup = X.Setup(profile=profile, seeds=(0,), outputs=str(tmp_path / profile))
        config = X.running.stage_config(X.Config("rl", "scratch"), setup, 0)
        model = config["model"]
        interactions = config["trainer"]["max_epochs"] * model["updates_per_epoch"] * model["num_envs"] * model[
            "rollout_steps"]  # fmt: skip
        selections[profile] = (model["select_every"], interactions // model["select_every"])
    assert selections == {"tiny": (X.specs.SELECT_EVERY, 2), "quick": (X.specs.SELECT_EVERY, 0), "paper": (640_000, 20)}
