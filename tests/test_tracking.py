"""What lq writes into MLflow as the UI shows it: figures at 4 significant digits, and runs named by how they ended."""

import math

import pytest
import torch
from mlflow.tracking import MlflowClient

from lq.lit.loggers import StageLogger
from lq.tracking import end_run, init_store, reopen_run, stored


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        (19 / 48, 0.3958),  # Hits@1 of 19 in 48: 0.3958333333333333 otherwise
        (0.3375, 0.3375),
        (12.3456, 12.35),
        (123456.7, 123457.0),  # the whole part kept whole
        (-0.0123456, -0.01235),
        (7.0, 7.0),
        (0.0, 0.0),
        (1 / 3 * 1e-5, 3.333e-6),
    ],
)
def test_a_stored_figure_keeps_four_significant_digits_and_its_whole_part(value, kept):
    assert stored(value) == kept


def test_a_non_finite_figure_is_left_to_the_finite_check():
    assert math.isnan(stored(float("nan"))) and stored(float("inf")) == float("inf")


@pytest.fixture
def client(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    init_store(uri)
    return MlflowClient(uri)


def test_a_stage_logs_its_figures_as_stored(client, tmp_path):
    logger = StageLogger(experiment_name="lq-x", tracking_uri=client.tracking_uri, run_name="pretrain-scratch-tiny")
    logger.log_metrics({"test/hits_at_1": 19 / 48, "train/loss": torch.tensor(2.302585092994046)}, step=3)
    logger.end("FINISHED")
    run = client.get_run(logger.run_id)
    assert run.data.metrics == {"test/hits_at_1": 0.3958, "train/loss": 2.303}
    assert (run.info.status, run.info.run_name) == ("FINISHED", "pretrain-scratch-tiny")


@pytest.mark.parametrize(("status", "word"), [("KILLED", "stopped"), ("FAILED", "failed")])
def test_a_run_that_did_not_finish_says_so_in_its_name_until_it_goes_on(client, status, word):
    exp = client.create_experiment("lq-x")
    run_id = client.create_run(exp, run_name="rl-scratch-s0").info.run_id
    end_run(client, run_id, status)
    assert client.get_run(run_id).info.run_name == f"rl-scratch-s0 ({word})"
    reopen_run(client, run_id)
    assert (client.get_run(run_id).info.status, client.get_run(run_id).info.run_name) == ("RUNNING", "rl-scratch-s0")
    end_run(client, run_id, status)
    end_run(client, run_id, status)  # ended twice (a driver marking its dead children): one word
    assert client.get_run(run_id).info.run_name == f"rl-scratch-s0 ({word})"
    reopen_run(client, run_id)
    end_run(client, run_id, "FINISHED")
    assert (client.get_run(run_id).info.status, client.get_run(run_id).info.run_name) == ("FINISHED", "rl-scratch-s0")


def test_a_stage_run_stopped_by_its_logger_is_named_stopped(client):
    logger = StageLogger(experiment_name="lq-x", tracking_uri=client.tracking_uri, run_name="bc-scratch-s0-tiny")
    logger.log_metrics({"train/loss": 1.0}, step=0)
    logger.end("KILLED")
    run = client.get_run(logger.run_id)
    assert (run.info.status, run.info.run_name) == ("KILLED", "bc-scratch-s0-tiny (stopped)")
