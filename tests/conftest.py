from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

import lq  # noqa: F401  (before anything here calls torch: it sets MKL_CBWR, which MKL reads once; lq/__init__.py)


def pytest_configure(config) -> None:
    """In a worker of ``make test`` (pytest-xdist, one per core), torch's CPU threads are the worker's share of the
    cores: with each worker on every core, their threads wait on each other (the suite took 18 minutes, not 12). The
    runs a test starts set their own threads, as in use."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers > 1:
        import torch

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))

# Real LIGHT data sits beside the repository (never inside it); on a user's machine it may be absent.
SHARED_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
LIGHT_ENV = SHARED_DATA / "light_env"
LIGHT_WORLDS = SHARED_DATA / "light_worlds"


@pytest.fixture
def light_env() -> Path:
    if not (LIGHT_ENV / "rooms.json").is_file():
        pytest.skip(f"real LIGHT environment DB not found at {LIGHT_ENV} (../shared/data is absent)")
    return LIGHT_ENV


@pytest.fixture
def light_worlds() -> list[Path]:
    worlds = sorted(LIGHT_WORLDS.glob("*.json"))
    if not worlds:
        pytest.skip(f"real LIGHT world graphs not found in {LIGHT_WORLDS} (../shared/data is absent)")
    return worlds


@pytest.fixture(autouse=True, scope="session")
def ctrl_c_not_ignored():
    """A suite started in the background (``nohup make test &``) inherits SIGINT ignored, and so would every ``lq``
    process a test starts, which the Ctrl-C tests then could not stop; each pytest process (xdist's workers too)
    handles it again, as at a terminal, so its children start with it at its default."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield


@pytest.fixture(scope="session")
def setup_dir(tmp_path_factory):
    """A tiny dataset and random tiny partner and DM checkpoints: what the agent stages need."""
    from lq.generate import generate_dataset
    from tests.samples import tiny_env_models

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
