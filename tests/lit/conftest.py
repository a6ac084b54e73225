from dataclasses import asdict

import pytest
import torch

from lq.generate import generate_dataset
from lq.models.encoder import EncoderConfig
from lq.models.poly_encoder import PolyEncoder
from tests.samples import tiny_encoder_spec


@pytest.fixture(scope="session")
def setup_dir(tmp_path_factory):
    """A tiny dataset and random tiny partner and DM checkpoints: what the agent stages need."""
    root = tmp_path_factory.mktemp("rl")
    generate_dataset(root / "data", scale="tiny", seed=7, log=lambda _: None)
    for name, seed in (("partner", 1), ("dm", 2)):
        torch.manual_seed(seed)
        model = PolyEncoder.from_spec(tiny_encoder_spec(), n_codes=2)
        torch.save(
            {
                "state_dict": {f"model.{k}": v for k, v in model.state_dict().items()},
                "hyper_parameters": {"encoder": asdict(EncoderConfig(name, tiny_encoder_spec())), "n_codes": 2},
            },
            root / f"{name}.ckpt",
        )
    return root
