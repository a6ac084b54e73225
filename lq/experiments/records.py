"""A parent run and its children as a file (``docs/results/runs/*.json.gz``): what the results page is made of, kept
with the code so that any clone rebuilds the page from a store, and a store that is lost (a machine given back) loses
no table.

``export`` writes, for each table the page shows, its parent's tags and params and every child's status, times, tags,
params and metric histories (not the parent's metrics nor any artifact: ``lq experiment tables`` derives those again).
The bytes depend on the runs alone: the same parent written from the store it ran in, or from a store it was imported
into, gives the same file. ``import`` makes those runs in a store, once: each run made carries ``lq.origin_run_id``,
the id it had where it ran, which the page prints and which a second import finds. The parent it makes also carries
the record's digest: a later record of the same parent (an unfinished campaign exported again, or finished) replaces
the runs an earlier one made.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

from lq.data.errors import DataFormatError
from lq.data.io import atomic_open
from lq.experiments.reporting import _client, children, experiment_id, parent_description, parent_view
from lq.tracking import RUN_NOTE, VIEWS

FORMAT = "lq-runs/1"
ORIGIN = "lq.origin_run_id"  # on an imported run: the id it had in the store it ran in
DIGEST = "lq.record_digest"  # on an imported parent: the digest of the record it was made from
STRUCTURAL = ("mlflow.parentRunId", ORIGIN, DIGEST)  # tags a store gives its runs, not part of a record


def origin(run) -> str:
    """The id a run had in the store it ran in (its own where it ran there)."""
    return run.data.tags.get(ORIGIN, run.info.run_id)


def _generated(run, key: str, value: str) -> bool:
    """Whether a tag is the store's view of the run rather than part of it: a parent's description as
    :func:`parent_description` writes it where it has none (one a person wrote is kept)."""
    return key == RUN_NOTE and value == parent_description(run)


def _run(client, run, metrics: bool) -> dict:
    out = {
        "run_id": origin(run),
        "name": run.info.run_name,
        "status": run.info.status,
        "start_time": run.info.start_time,
        "end_time": run.info.end_time,
        "tags": {k: v for k, v in sorted(run.data.tags.items()) if k not in STRUCTURAL and not _generated(run, k, v)},
        "params": dict(sorted(run.data.params.items())),
    }
    if metrics:
        out["metrics"] = {
            key: sorted([m.timestamp, m.step, m.value] for m in client.get_metric_history(run.info.run_id, key))
            for key in sorted(run.data.metrics)
        }
    return out


def record(client, parent_id: str) -> dict:
    """The record of a parent run: its identity, and its children (whatever their status) in a fixed order."""
    parent = client.get_run(parent_id)
    kids = sorted(
        children(client, parent_id, finished=False),
        key=lambda r: (r.data.tags.get("lq.config", ""), r.data.tags.get("lq.seed", ""), r.info.start_time, origin(r)),
    )
    return {
        "format": FORMAT,
        "experiment": parent.data.tags.get("lq.experiment"),
        "parent": _run(client, parent, metrics=False),
        "children": [_run(client, kid, metrics=True) for kid in kids],
    }


def write_record(client, parent_id: str, path: str | Path) -> Path:
    """Write :func:`record` as gzipped JSON (no time in the gzip header: the same runs give the same bytes), through
    a temporary file."""
    data = json.dumps(record(client, parent_id), sort_keys=True, separators=(",", ":")).encode()
    with atomic_open(path, "wb") as out:
        out.write(gzip.compress(data, mtime=0))
    return Path(path)


def parent_here(client, parent_id: str, tracking_uri: str) -> str:
    """The id in this store of the parent run ``parent_id``: that run, or the one an import made of it (its
    :data:`ORIGIN` tag: a record keeps the id the parent had where it ran). A ValueError that says where it looked
    where neither is there."""
    from mlflow.exceptions import MlflowException

    try:
        return client.get_run(parent_id).info.run_id
    except MlflowException:
        pass
    imported = _imported(client, [e.experiment_id for e in client.search_experiments()], parent_id)
    if imported is None:
        raise ValueError(
            f"--parent {parent_id}: no run of that id in {tracking_uri}, nor one imported from it (tag {ORIGIN}); "
            f"a campaign's store is named with --tracking-uri, its records are imported with lq experiment import"
        )
    return imported.info.run_id


def export_parent(tracking_uri: str, parent_id: str, out_dir: str | Path) -> Path:
    """Write the record of one parent, finished or not (``EXPERIMENT-PARENT_ID.json.gz``): an unfinished parent's
    record, imported on another machine, is resumed there (``--resume``: its finished children are not trained
    again). The file is named by the id the parent had where it ran (:func:`origin`): written from the store it ran in
    or from one it was imported into (a campaign moved to another machine), it replaces the same file."""
    client = _client(tracking_uri)
    parent = client.get_run(parent_here(client, parent_id, tracking_uri))
    return write_record(client, parent.info.run_id, Path(out_dir) / parent_record_name(parent))


def parent_record_name(parent) -> str:
    """The file name :func:`export_parent` gives the record of the parent run ``parent`` (an MLflow ``Run``)."""
    return f"{parent.data.tags.get('lq.experiment')}-{origin(parent)}.json.gz"


def read_record(path: str | Path) -> dict:
    """A record file, checked: gzipped JSON of this format with a parent and its children."""
    path = Path(path)
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, EOFError, json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DataFormatError(
            path, f"not a gzipped JSON record ({err})", fix="write it with `lq experiment export`"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        got = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise DataFormatError(path, f"format {got!r}, not {FORMAT!r}", field="format", fix="write it with this lq")
    for field, kind in (("experiment", str), ("parent", dict), ("children", list)):
        if not isinstance(data.get(field), kind):
            raise DataFormatError(path, f"missing or not a {kind.__name__}", field=field, fix="export it again")
    runs = [("parent", data["parent"]), *((f"children[{i}]", c) for i, c in enumerate(data["children"]))]
    for where, run in runs:
        missing = [k for k in ("run_id", "status", "start_time", "tags", "params") if k not in run]
        if missing:
            raise DataFormatError(path, "a run without it", record=where, field=missing[0], fix="export it again")
    return data


def _imported(client, exp_ids: list[str], run_id: str):
    """The run an import made of the run of id ``run_id`` (its id where it ran), in ``exp_ids``; None if none."""
    runs = client.search_runs(exp_ids, filter_string=f"tags.`{ORIGIN}` = '{run_id}'", max_results=1) if exp_ids else []
    return runs[0] if runs else None


def _held(client, exp_id: str, run_id: str):
    """What the store holds of the parent of id ``run_id`` (where it ran): the parent an import made of it, True
    where it ran in this store, None where it holds neither."""
    from mlflow.exceptions import MlflowException

    if (imported := _imported(client, [exp_id], run_id)) is not None:
        return imported
    try:
        client.get_run(run_id)
    except MlflowException:
        return None
    return True


def _digest(data: dict) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def _batches(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _ended(run: dict) -> str:
    """The status an imported run ends with: its own, but KILLED for one that was RUNNING (its process was
    elsewhere)."""
    return "KILLED" if run["status"] == "RUNNING" else run["status"]


def _make_run(client, exp_id: str, run: dict, parent: str | None, extra: dict | None = None) -> str:
    from mlflow.entities import Metric, Param

    tags = {**run["tags"], ORIGIN: run["run_id"], **({"mlflow.parentRunId": parent} if parent else {}), **(extra or {})}
    run_id = client.create_run(exp_id, start_time=run["start_time"], tags=tags, run_name=run.get("name")).info.run_id
    params = [Param(k, str(v)) for k, v in run["params"].items()]
    for batch in _batches(params, 100):  # MLflow's limits on one batch
        client.log_batch(run_id, params=batch)
    histories = run.get("metrics", {}).items()
    metrics = [Metric(k, float(v), int(t), int(s)) for k, points in histories for t, s, v in points]
    for batch in _batches(metrics, 1000):
        client.log_batch(run_id, metrics=batch)
    return run_id


def import_record(client, path: str | Path) -> str | None:
    """Make the runs of a record in the store, the children under a new parent that finishes last; returns the new
    parent's id, or None where the store holds them already (the parent ran here, or this very record was imported).
    Runs an earlier record of the same parent made are deleted once the new ones are made; a failure midway deletes
    what it made and leaves the earlier ones."""
    data = read_record(path)
    exp_id = experiment_id(client, data["experiment"])
    held, digest = _held(client, exp_id, data["parent"]["run_id"]), _digest(data)
    if held is True or (held is not None and held.data.tags.get(DIGEST) == digest):
        return None
    made: list[str] = []
    try:
        parent = _make_run(client, exp_id, data["parent"], None, {DIGEST: digest})
        made.append(parent)
        for child in data["children"]:
            made.append(_make_run(client, exp_id, child, parent))
            client.set_terminated(made[-1], _ended(child), child.get("end_time"))
        client.set_terminated(parent, _ended(data["parent"]), data["parent"].get("end_time"))
    except BaseException:
        for run_id in made:
            client.delete_run(run_id)
        raise
    if held is not None:  # an earlier record's runs
        for run in children(client, held.info.run_id, finished=False):
            client.delete_run(run.info.run_id)
        client.delete_run(held.info.run_id)
        if f"{VIEWS}lq-{held.info.run_id}" in client.get_experiment(exp_id).tags:  # the UI's view of them
            client.delete_experiment_tag(exp_id, f"{VIEWS}lq-{held.info.run_id}")
    parent_view(client, parent)  # the UI's view of its children (lq.experiments.reporting.parent_view)
    return parent


def import_records(tracking_uri: str, records: str | Path) -> list[tuple[Path, str | None]]:
    """Import every record of the folder ``records`` (``*.json.gz``, in name order): each file and the parent it
    made (None: the store held it already)."""
    client = _client(tracking_uri)
    return [(path, import_record(client, path)) for path in sorted(Path(records).glob("*.json.gz"))]
