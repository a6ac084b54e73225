"""What lq writes into MLflow as the UI shows it: figures at 4 significant digits, and runs named by how they ended;
a store, an experiment and a dataset made once when processes starting at once all want them."""

import math
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from mlflow.tracking import MlflowClient

from lq import experiments as X
from lq.lit.loggers import StageLogger
from lq.tracking import end_run, init_store, reopen_run, stored

ROOT = Path(__file__).resolve().parents[1]


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


def test_drivers_starting_at_once_on_a_new_sqlite_store_lose_no_run_and_print_no_error(tmp_path):
    """Three processes open one new store at once (each would make its tables) and write 15 runs each."""
    uri = f"sqlite:///{tmp_path / 'new' / 'mlflow.db'}"
    script = (
        "import sys\n"
        "from lq.experiments.reporting import _client, experiment_id\n"
        f"client = _client({uri!r})\n"
        "for i in range(15):\n"
        "    run = client.create_run(experiment_id(client, 'stress'), tags={'w': sys.argv[1]}).info.run_id\n"
        "    client.log_metric(run, 'm', i)\n"
        "    client.set_terminated(run, 'FINISHED')\n"
    )
    writers = [
        subprocess.Popen([sys.executable, "-c", script, str(w)], stderr=subprocess.PIPE, text=True, cwd=ROOT)
        for w in range(3)
    ]
    errors = [w.communicate()[1] for w in writers]
    assert [w.returncode for w in writers] == [0, 0, 0], errors
    assert not any("Traceback" in e or "locked" in e for e in errors), errors
    client = MlflowClient(uri)
    runs = client.search_runs([X.experiment_id(client, "stress")], max_results=100)
    assert sorted(r.data.tags["w"] for r in runs) == sorted(str(w) for w in range(3) for _ in range(15))


def test_stage_runs_starting_at_once_on_a_store_without_their_experiment_all_log_to_it(tmp_path):
    """Three children start at once on a new store that has no ``lq-bc`` experiment (make rl's BC seeds side by side):
    each stage logger makes it or finds it, and every run lands in the one experiment (each used to create it and all
    but one die on MLflow's unique name)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    go = tmp_path / "go"
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from lq.lit.loggers import StageLogger\n"
        f"Path({str(tmp_path)!r}, 'ready-' + sys.argv[1]).touch()\n"
        f"while not Path({str(go)!r}).exists():\n"
        "    time.sleep(0.01)\n"
        f"logger = StageLogger(experiment_name='lq-bc', tracking_uri={uri!r}, tags={{'w': sys.argv[1]}})\n"
        "logger.log_metrics({'m': 1.0})\n"
        "logger.end('FINISHED')\n"
    )
    children = [
        subprocess.Popen([sys.executable, "-c", script, str(w)], stderr=subprocess.PIPE, text=True, cwd=ROOT)
        for w in range(3)
    ]
    deadline = time.monotonic() + 120  # once each has imported Lightning, so that they start together
    while len(list(tmp_path.glob("ready-*"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    go.touch()
    errors = [c.communicate(timeout=120)[1] for c in children]
    assert [c.returncode for c in children] == [0] * 3, errors
    client = MlflowClient(uri)
    [experiment] = [e for e in client.search_experiments() if e.name == "lq-bc"]
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(r.data.tags["w"] for r in runs) == ["0", "1", "2"]
    assert experiment.tags["mlflow.experimentKind"]  # marked so that the UI opens it on its runs table


def test_two_runs_logging_one_dataset_at_once_both_get_it(tmp_path):
    """MLflow inserts a dataset it has not seen without a lock: of two runs starting at once (a table's children side
    by side), one fails on the datasets table's unique key (a table7 campaign lost a child so). The other's row
    is there by then: the loser logs again and is linked to it."""
    from mlflow.exceptions import MlflowException

    from lq.tracking import log_dataset

    data = tmp_path / "default"
    data.mkdir()
    (data / "manifest.json").write_text('{"counts": {"train": 3}}')
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp_id = client.create_experiment("lq-x")
    first, second = (client.create_run(exp_id).info.run_id for _ in range(2))

    class Raced:  # the other run inserts the dataset between this one's look and its insert
        def __init__(self):
            self.calls = 0

        def log_inputs(self, run_id, datasets):
            self.calls += 1
            if self.calls == 1:
                client.log_inputs(first, datasets=datasets)
                raise MlflowException("(sqlite3.IntegrityError) UNIQUE constraint failed: datasets.experiment_id, "
                                      "datasets.name, datasets.digest")  # fmt: skip
            client.log_inputs(run_id, datasets=datasets)

    raced = Raced()
    log_dataset(raced, second, data)
    assert raced.calls == 2
    for run_id in (first, second):
        [got] = client.get_run(run_id).inputs.dataset_inputs
        assert got.dataset.name == "default"

    class Broken:  # any other error is the caller's
        def log_inputs(self, run_id, datasets):
            raise MlflowException("RESOURCE_DOES_NOT_EXIST: run")

    with pytest.raises(MlflowException, match="RESOURCE_DOES_NOT_EXIST"):
        log_dataset(Broken(), second, data)
