import pytest

from lq.generate import generate_dataset
from tests.samples import tiny_env_models


@pytest.fixture(scope="session")
def setup_dir(tmp_path_factory):
    """A tiny dataset and random tiny partner and DM checkpoints: what the agent stages need."""
    root = tmp_path_factory.mktemp("rl")
    generate_dataset(root / "data", scale="tiny", seed=7, log=lambda _: None)
    tiny_env_models(root)
    return root


@pytest.fixture(scope="session")
def trained_agent(setup_dir, tmp_path_factory):
    """A tiny BC agent trained for two batches on the setup's data, partner and DM: its checkpoint."""
    from lq.cli import main
    from tests.lit.test_agent_cli import _args

    out = tmp_path_factory.mktemp("trained")
    assert main(_args("bc", setup_dir, out, "--model.batch_size=8", "--trainer.limit_train_batches=2")) == 0
    return out / "bc/scratch/act_speech-hardcoded/seed-0/best.ckpt"
