"""Every run says what it ran on: its seed, the profile and commit, and its dataset under one digest, the fingerprint
that checkpoints, bundles and model cards record (``lq.data.dataset.dataset_id``), so that a bundle is matched to the
runs of its dataset; an agent's run and a table's baselines also the partner and DM they played, by their weights."""

import dataclasses
import shutil

import mlflow
import pytest
import yaml
from mlflow.tracking import MlflowClient

from lq import conf
from lq import experiments as X
from lq.cli import main
from lq.commands.jobs import run_baselines
from lq.envs.models import load_poly_encoder
from lq.models.poly_encoder import weights_digest
from tests.experiments.helpers import _tiny_setup
from tests.lit.test_pretrain import TINY_ARGS


@pytest.mark.slow
def test_every_run_logs_its_seed_and_the_dataset_digest_of_the_bundles_card(trained_agent, setup_dir, tmp_path):
    store = tmp_path / "mlflow.db"
    shutil.copy(trained_agent.parents[4] / "mlflow.db", store)  # the BC agent's run (conftest's trained_agent)
    uri = f"sqlite:///{store}"
    # a poly-encoder stage (the partner) on the same data, seeded by seed_everything
    configs = [a for f in ("poly_encoder.yaml", "partner.yaml", "encoder/small.yaml", "profile/tiny/env.yaml")
               for a in ("--config", str(conf.ROOT / f))]  # fmt: skip
    tiny = ["--data.max_train_examples=8", "--data.max_eval_examples=4", "--trainer.max_epochs=1"]
    tiny += ["--trainer.enable_progress_bar=false", "--seed_everything=3"]
    logged = [f"--data.data_dir={setup_dir / 'data'}", f"--checkpoint.dirpath={tmp_path / 'partner' / 'small'}"]
    logged += [f"--trainer.logger.init_args.tracking_uri={uri}"]
    assert main(["partner", "fit", *configs, *TINY_ARGS, *tiny, *logged]) == 0
    # a table's baselines child (lq experiment baselines), under a parent
    setup = dataclasses.replace(_tiny_setup(setup_dir, tmp_path / "table", seeds=(0,)), tracking_uri=uri)
    client = MlflowClient(uri)
    parent = client.create_run(X.experiment_id(client, "table1")).info.run_id
    run = X.running.prep("baselines", setup, ability="act_speech", switch="hardcoded", seed=0)  # as the CLI's
    run_baselines(client, "table1", run, parent)
    client.set_terminated(parent, "FINISHED")

    assert main(["export", str(trained_agent), str(tmp_path / "bundle"), "--no-eval"]) == 0
    card = (tmp_path / "bundle" / "README.md").read_text()
    fingerprint = yaml.safe_load(card.split("---\n")[1])["lq"]["dataset"]
    assert f"fingerprint `{fingerprint}`" in card

    mlflow.set_tracking_uri(uri)
    runs = [r for r in mlflow.search_runs(search_all_experiments=True, output_format="list") if r.info.run_id != parent]
    assert sorted(r.data.tags["lq.stage"] for r in runs) == ["baselines", "bc", "partner"]
    for r in runs:
        stage, params, tags = r.data.tags["lq.stage"], r.data.params, r.data.tags
        assert params["seed"] == tags["lq.seed"] == ("3" if stage == "partner" else "0"), stage
        [data] = r.inputs.dataset_inputs
        assert data.dataset.digest == tags["lq.dataset"] == fingerprint, stage
        assert len(tags["lq.commit"].removesuffix("+dirty")) == 40, stage
        if stage != "bc":  # trained without a profile's config file (conftest's tiny agent)
            assert tags["lq.profile"] == params["profile"] == "tiny", stage
    # the BC agent and the baselines played the setup's partner and DM, from copies at other paths: the same digests
    models = {name: weights_digest(load_poly_encoder(setup_dir / f"{name}.ckpt")[0])[:16] for name in ("partner", "dm")}
    assert models["partner"] != models["dm"]
    for r in runs:
        played = {name: r.data.tags.get(f"lq.{name}") for name in models}
        assert played == (models if r.data.tags["lq.stage"] != "partner" else {"partner": None, "dm": None})
    [baselines] = [r for r in runs if r.data.tags["lq.stage"] == "baselines"]
    assert baselines.data.params["protocol"] == baselines.data.tags["lq.protocol"] == "paper"
    assert baselines.data.tags["lq.data"] == str(setup_dir / "data")


def test_params_are_logged_whole_up_to_mlflows_limit_and_a_longer_one_is_cut_with_a_warning(tmp_path):
    """Lightning's MLflow logger cut every value at 250 characters without a word; MLflow 3 keeps 6,000."""
    from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH

    from lq.lit.loggers import StageLogger

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    logger = StageLogger(experiment_name="lq-params", tracking_uri=uri)
    path = "/data/" + "d" * 600
    with pytest.warns(UserWarning, match=r"MLflow param notes: 7000 characters, cut to MLflow's 6000"):
        logger.log_hyperparams({"env": {"data_dir": path}, "notes": "x" * 7000, "_class_path": "hidden"})
    params = MlflowClient(uri).get_run(logger.run_id).data.params
    assert params["env/data_dir"] == path
    assert params["notes"] == "x" * MAX_PARAM_VAL_LENGTH
    assert "_class_path" not in params
