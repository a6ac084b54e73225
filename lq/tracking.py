"""What every lq run records in MLflow beside its metrics, and the store itself: the store made once under a lock,
experiments created race-free and marked for model training with lq's saved view of their runs table, a run's dataset
as its input, and the tags that say where its process is, which partner and DM it played and which commit made it.
Plain MLflow (no Lightning): the stage CLIs (:mod:`lq.lit`) and the drivers (:mod:`lq.experiments`) both read it."""

from __future__ import annotations

import json
import math
import numbers
import os
import socket
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from lq.data.dataset import dataset_id
from lq.envs.protocol import GOAL_RATES, HEADLINE_RATE

if TYPE_CHECKING:
    from lq.envs.spec import EnvSpec


DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"


class NonFiniteMetric(ValueError):
    """A metric that is NaN or infinite. MLflow would store NaN as it is and turn ±inf into ±1.8e308 without a
    word; lq refuses it instead, before anything of the batch is stored."""


def check_finite(metrics: Mapping[str, object], step: int | None, what: str = "metric") -> None:
    """Raise :class:`NonFiniteMetric` naming the first of ``metrics`` (name -> number or one-element tensor) that is NaN
    or infinite, with ``step`` and the fix; ``what`` says what kind of figure it is (a training loss, an evaluation
    figure)."""
    for name, value in metrics.items():
        number = value.item() if hasattr(value, "item") else value
        if isinstance(number, numbers.Real) and not math.isfinite(number):
            at = f" at step {step}" if step is not None else ""
            fix = (
                "training stopped before its next checkpoint, so the last good one (last.ckpt) is kept; lower the "
                "learning rate or look at the batch that made it"
                if what == "loss"
                else "it is not stored: find where the figure divides by zero or reads an empty set"
            )
            raise NonFiniteMetric(f"{what} {name} = {number}{at}: not a finite number; {fix}")


FIGURES = 4  # significant digits a logged figure keeps


def stored(value: float) -> float:
    """``value`` as lq stores it in MLflow: at :data:`FIGURES` significant digits, its whole part kept whole
    (0.395833... -> 0.3958, 12.3456 -> 12.35, 123456.7 -> 123457; integers and non-finite values as they are). The
    UI shows a figure as stored (Hits@1 with 17 digits otherwise); a rate of k in N examples loses nothing a table
    shows (3 decimals) for N up to 10,000."""
    value = float(value)
    if value == 0 or not math.isfinite(value) or value.is_integer():
        return value
    return round(value, max(0, FIGURES - 1 - math.floor(math.log10(abs(value)))))


def quiet_store() -> None:
    """MLflow's INFO lines as it makes a new store's tables ("Creating initial MLflow database tables...") off: every
    driver and stage run would print them once per store; and its artifact download bars (its own switch, read as
    each download starts), which ``make tables`` would print once per table."""
    import logging

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

    for name in ("mlflow.store.db.utils", "alembic.runtime.migration"):
        logging.getLogger(name).setLevel(logging.WARNING)


def init_store(tracking_uri: str | None) -> None:
    """Make a new sqlite MLflow store's tables under a lock beside it (``FILE.lock``): two processes creating one store
    at once would both migrate it and one fail ("duplicate column", "table already exists"). Once made, any number of
    processes write to it (sqlite serialises their short transactions)."""
    quiet_store()
    if not tracking_uri or not tracking_uri.startswith("sqlite:///"):
        return
    import fcntl

    from mlflow.tracking import MlflowClient

    db = Path(tracking_uri.removeprefix("sqlite:///").split("?")[0])
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{db}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            MlflowClient(tracking_uri).search_experiments(max_results=1)  # the tables, made once
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure_experiment(client, name: str, artifact_location: str | None = None) -> str:
    """The id of MLflow experiment ``name``, created if missing, whoever else creates it at the same moment: children
    started side by side on a store without it would each find it missing and all but one fail on MLflow's unique
    name ("Experiment(name=...) already exists"); the losers read the winner's. Marked for model training
    (:func:`mark_model_training`)."""
    from mlflow.exceptions import MlflowException

    found = client.get_experiment_by_name(name)
    if found is None:
        try:
            exp_id = client.create_experiment(name, artifact_location=artifact_location)
        except MlflowException:
            found = client.get_experiment_by_name(name)
            if found is None:  # not a race: the store refused it for another reason
                raise
            exp_id = found.experiment_id
    else:
        exp_id = found.experiment_id
    mark_model_training(client, exp_id)
    return exp_id


# the characters MLflow keeps of a dataset's digest
DIGEST_CHARS = 36


def dataset_digest(data_dir: str | Path) -> str:
    """The digest every run logs its dataset under: the dataset's fingerprint (:func:`lq.data.dataset.dataset_id`),
    the one its checkpoints, bundles and model cards record, so that a bundle is matched to its runs' dataset; its
    last 36 characters where a folder name longer than 23 makes it longer (MLflow's limit; the hash is kept whole)."""
    return dataset_id(data_dir)[-DIGEST_CHARS:]


def manifest_counts(folder: Path) -> dict:
    """The counts a generated dataset's ``manifest.json`` gives (none for a folder without one: a release)."""
    try:
        return json.loads((folder / "manifest.json").read_text(encoding="utf-8")).get("counts", {})
    except (OSError, ValueError, AttributeError):
        return {}


def log_dataset(client, run_id: str, data_dir: str | Path, context: str = "training") -> None:
    """The run's dataset as an MLflow input (``mlflow.log_input``'s record): its folder's name, its fingerprint as the
    digest (:func:`dataset_digest`), where it is and its counts."""
    from mlflow.entities import Dataset, DatasetInput, InputTag

    folder = Path(data_dir).resolve()
    if not folder.is_dir():
        return
    dataset = Dataset(
        name=folder.name,
        digest=dataset_digest(folder),
        source_type="local",
        source=json.dumps({"uri": str(folder), "fingerprint": dataset_id(folder)}),
        profile=json.dumps(manifest_counts(folder)),
    )
    # MLflow's get-or-create of a dataset is not atomic: of two runs starting at once (an experiment's children side
    # by side), both insert it and one fails on its unique key; the other's row is there by then, and logging again
    # links this run to it
    inputs = [DatasetInput(dataset, tags=[InputTag("mlflow.data.context", context)])]
    try:
        client.log_inputs(run_id, datasets=inputs)
    except Exception as err:
        if "UNIQUE constraint failed: datasets." not in str(err):
            raise
        client.log_inputs(run_id, datasets=inputs)


# MLflow's tags of a run's name and description (mlflow.utils.mlflow_tags' MLFLOW_RUN_NAME, MLFLOW_RUN_NOTE), named here
# without importing MLflow (a second and a half at start-up)
RUN_NAME, RUN_NOTE = "mlflow.runName", "mlflow.note.content"
ENDED = {"KILLED": "stopped", "FAILED": "failed"}  # what a run's name says of an end other than FINISHED


def plain_name(name: str | None) -> str | None:
    """A run's name without what :func:`end_run` added to it ("rl-scratch-s0 (stopped)" -> "rl-scratch-s0")."""
    for word in ENDED.values():
        if name and name.endswith(f" ({word})"):
            return name.removesuffix(f" ({word})")
    return name


def end_run(client, run_id: str, status: str) -> None:
    """End the MLflow run ``run_id`` with ``status`` (FINISHED, KILLED, FAILED); one that did not finish says so in its
    name ("pretrain-general_light-tiny (stopped)", "... (failed)"), so that the runs table tells it from the run of the
    same configuration that finished; :func:`reopen_run` takes it off again."""
    client.set_terminated(run_id, status)
    name_end(client, run_id, status)


def name_end(client, run_id: str, status: str) -> None:
    """The ended run's name as :func:`end_run` leaves it, for a run ended otherwise (Lightning's logger)."""
    if status in ENDED and (name := plain_name(client.get_run(run_id).info.run_name)):
        client.set_tag(run_id, RUN_NAME, f"{name} ({ENDED[status]})")


def reopen_run(client, run_id: str) -> None:
    """The MLflow run ``run_id`` RUNNING again (a resumed run goes on in it), its name without the end
    :func:`end_run` gave it."""
    name = client.get_run(run_id).info.run_name
    client.update_run(run_id, status="RUNNING", name=plain_name(name) if name else None)


def run_tags() -> dict[str, str]:
    """Where a run's process is (``lq.host``, ``lq.pid``): a driver marks a RUNNING run whose process is gone as
    KILLED (:func:`lq.experiments.parents.end_dead_runs`)."""
    return {"lq.host": socket.gethostname(), "lq.pid": str(os.getpid())}


def model_tags(env: EnvSpec) -> dict[str, str]:
    """The partner and the DM an agent's run played, as tags (``lq.partner``, ``lq.dm``: :meth:`EnvSpec.model_digests`):
    a table whose children ran against other environment models than another table's says so
    (:func:`lq.experiments.claims.section`), however their checkpoints' paths read."""
    return {f"lq.{name}": digest for name, digest in env.model_digests().items()}


def commit_tag() -> dict[str, str]:
    """The lq commit a run was made with (``lq.commit``; with ``+dirty`` where the work tree had changes), where lq
    runs from a git checkout; nothing otherwise (an installed wheel)."""
    from lq.conf import ROOT

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30)
        return done.stdout.strip() if done.returncode == 0 else ""

    try:
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return {"lq.commit": commit + ("+dirty" if dirty else "")} if commit else {}


VIEWS = "mlflow.sharedViewState."  # MLflow's saved views of a runs table: experiment tags, each view's key after this


EXPERIMENT_VIEW = "lq-goals"  # the one lq saves on each of its experiments (mark_model_training)


def save_view(client, experiment, key: str, name: str, state: str) -> None:
    """Save on ``experiment`` (an MLflow experiment, its tags read) the runs-table view ``key`` named ``name`` with
    ``state`` (MLflow's saved-view format: the tag ``VIEWS + key``, listed under *Views*, opened by
    ``?viewStateShareKey=KEY``), only where it is missing or its state changed."""
    import time

    try:
        same = json.loads(experiment.tags[VIEWS + key])["state"] == state
    except (KeyError, TypeError, ValueError):
        same = False
    if not same:
        now = int(time.time() * 1000)
        view = {"name": name, "createdAt": now, "updatedAt": now, "state": state}
        client.set_experiment_tag(experiment.experiment_id, VIEWS + key, json.dumps(view))


def mark_model_training(client, experiment_id: str) -> None:
    """Tag an MLflow experiment as model training, and save on it lq's view of its runs table.

    MLflow 3's UIs up to 3.16 read the tag ``mlflow.experimentKind=custom_model_development`` to open an experiment
    on its runs table; 3.17's reads only its sidebar's workflow switch (*GenAI* / *Model training*, which the browser
    remembers) or ``?workflowType=machine_learning`` in the page's address, and opens on the GenAI overview without
    them. The tag stays for the earlier versions. The view ``lq: goal rates`` (:data:`EXPERIMENT_VIEW`,
    :func:`save_view`) shows the test goal rates as columns, the runs sorted by act & speech goals, best first, that
    column first (the
    generalisation experiments' also validation act & speech, which chose each agent, and act & speech on the test
    quests greedy and on the unseen worlds; the poly-encoders' experiments: Hits@1, 5 and 10, by Hits@1). Each is
    written only where missing or changed."""
    experiment = client.get_experiment(experiment_id)
    if experiment.tags.get("mlflow.experimentKind") != "custom_model_development":
        client.set_experiment_tag(experiment_id, "mlflow.experimentKind", "custom_model_development")
    if experiment.name in ("lq-pretrain", "lq-partner", "lq-dm", "lq-table45"):  # poly-encoders: no episodes
        metrics = ("test/hits_at_1", "test/hits_at_5", "test/hits_at_10")
        name, sort = "lq: hits@k", "test/hits_at_1"
    else:
        metrics = tuple(f"test/{rate}" for rate, *_ in GOAL_RATES)
        name, sort = "lq: goal rates", f"test/{HEADLINE_RATE}"
        if experiment.name.startswith("lq-generalisation"):  # what chose the agent, and where it is tested beside test
            metrics = (f"val/{HEADLINE_RATE}", *metrics, f"test_greedy/{HEADLINE_RATE}", f"worlds/{HEADLINE_RATE}")
    # the sort column first, beside the names: on screen at 1,366 pixels whatever else the table shows
    columns = [f"metrics.`{m}`" for m in (sort, *(m for m in metrics if m != sort))]
    state = json.dumps({
        "selectedColumns": columns,
        "columnOrder": ["attributes.`Run Name`", *columns],
        "columnWidths": {"attributes.`Run Name`": 340, **{c: 220 if c == columns[0] else 170 for c in columns}},
        "orderByKey": f"metrics.`{sort}`",
        "orderByAsc": False,
    })  # fmt: skip
    save_view(client, experiment, EXPERIMENT_VIEW, name, state)
