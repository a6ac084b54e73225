"""An experiment's MLflow parent run: its identity (the tags that tell parents apart), opening or resuming it (and
refusing one of another identity), the children whose process is gone, and the best agent logged on it."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable

from lq.experiments.records import origin
from lq.experiments.reporting import children, experiment_id, parent_runs, parent_view
from lq.experiments.setup import Setup
from lq.experiments.specs import Experiment
from lq.tracking import commit_tag, end_run, reopen_run


def parent_identity(setup: Setup) -> dict[str, str]:
    """A parent run's identity as tags: the profile, protocol and RL objective of its children, and their data."""
    return {
        "lq.profile": setup.profile,
        "lq.protocol": setup.protocol,
        "lq.objective": setup.objective,
        "lq.data": str(setup.data_dir),
    }


def unfinished_parents(client, experiment: Experiment, setup: Setup) -> list:
    """The parent runs of ``experiment`` with ``setup``'s identity (profile, protocol, objective, data) that did not
    finish, newest first."""
    where = "".join(f" and tags.`{k}` = '{v}'" for k, v in parent_identity(setup).items() if k != "lq.data")
    runs = [r for r in parent_runs(client, experiment.name, where) if r.data.tags.get("lq.data") == str(setup.data_dir)]
    return [r for r in runs if r.info.status != "FINISHED"]


def alive(run) -> bool | None:
    """Whether the process of a run (its ``lq.host`` and ``lq.pid`` tags, :func:`lq.lit.cli.run_tags`) is still
    there: None where that cannot be told here (no such tags, or another host)."""
    tags = run.data.tags
    if tags.get("lq.host") != socket.gethostname() or not tags.get("lq.pid", "").isdigit():
        return None
    try:
        os.kill(int(tags["lq.pid"]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def end_dead_runs(client, runs, gone: bool = False) -> list:
    """Mark the RUNNING ``runs`` whose process is gone (:func:`alive`; all of them with ``gone``: their launcher saw
    them end) as KILLED, so that none is left RUNNING after a kill; returns those runs."""
    dead = [r for r in runs if r.info.status == "RUNNING" and (gone or alive(r) is False)]
    for run in dead:
        end_run(client, run.info.run_id, "KILLED")
    return dead


def _checked_children(client, pid: str, experiment: Experiment, setup: Setup) -> list:
    """Check that the parent ``pid`` ran the same seeds, encoders (and variants) and identity as ``setup`` asks for;
    returns its children, finished or not."""
    run = client.get_run(pid)
    params, tags = run.data.params, run.data.tags
    recorded = [("seeds", " ".join(map(str, setup.seeds))), ("encoders", " ".join(experiment.encoders))]
    recorded += [("variants", " ".join(experiment.variants))] if "variants" in params else []
    for key, wanted in recorded:
        if params.get(key) != wanted:
            raise ValueError(
                f"parent run {pid} ran {key} '{params.get(key)}', not '{wanted}': resume with the same "
                f"{key}, or run without --resume for a new parent"
            )
    for key, wanted in parent_identity(setup).items():  # one parent's children never mix two objectives (or data)
        if tags.get(key) != wanted:
            raise ValueError(
                f"parent run {pid} ran {key.removeprefix('lq.')} '{tags.get(key)}', not '{wanted}': its children "
                f"and these would not compare; resume it with {key.removeprefix('lq.').upper()}={tags.get(key)}, or "
                "run without --resume for a new parent"
            )
    return children(client, pid, finished=False)


def _reopen(client, pid: str, experiment: Experiment, setup: Setup) -> set[tuple[str, str]]:
    """Reopen an unfinished parent: check it ran the same seeds and encoders and that none of its children still runs
    here, mark its children that died unfinished as KILLED, and return the (configuration, seed) pairs whose children
    finished."""
    kids = _checked_children(client, pid, experiment, setup)
    running = [r for r in kids if r.info.status == "RUNNING" and alive(r)]
    if running:  # a driver killed alone leaves its children running: they would be trained twice at once
        first = running[0].data.tags
        raise ValueError(
            f"parent run {pid}: its child {first.get('lq.config')} s{first.get('lq.seed')} is still running (process "
            f"{first.get('lq.pid')}): wait for it to end, or stop it (kill {first.get('lq.pid')}), then resume"
        )
    end_dead_runs(client, kids, gone=True)  # their processes are gone (or elsewhere): they will be trained again
    reopen_run(client, pid)
    return _finished_pairs(kids)


def _finished_pairs(kids: list) -> set[tuple[str, str]]:
    """The (configuration, seed) pairs of the FINISHED runs among a parent's children ``kids``."""
    return {(r.data.tags.get("lq.config"), r.data.tags.get("lq.seed")) for r in kids if r.info.status == "FINISHED"}


def parents_to_resume(client, experiment: Experiment, setup: Setup, resume: bool, parent: str | None = None) -> list:
    """With ``resume``, the unfinished parents of ``setup``'s identity (:func:`unfinished_parents`); refuses a
    ``parent`` that is not one of them, by its id here or by the id it had where it ran (an imported record's,
    :func:`lq.experiments.records.origin`), checked before an experiment prepares, which can take long."""
    unfinished = unfinished_parents(client, experiment, setup) if resume else []
    if parent is not None and _named(unfinished, parent) is None:
        raise ValueError(
            f"--parent {parent}: not an unfinished {experiment.name} parent run of profile {setup.profile}, protocol "
            f"{setup.protocol}, objective {setup.objective} and data {setup.data_dir} in {setup.tracking_uri}"
            + (" (resume needs --resume)" if not resume else "")
            + f"; those there: {', '.join(map(_shown, unfinished)) or 'none'}"
        )
    return unfinished


def peek_parent(client, experiment: Experiment, setup: Setup, resume: bool, parent: str | None = None):
    """What :func:`open_parent` would open, read without writing to the store: with ``resume``, the unfinished
    parent it would reopen (``parent``, or the newest) and the (configuration, seed) pairs whose children finished;
    else ``(None, set())``, a new parent not yet opened."""
    pid = _chosen(parents_to_resume(client, experiment, setup, resume, parent), parent)
    if pid is None:
        return None, set()
    return pid, _finished_pairs(_checked_children(client, pid, experiment, setup))


def _named(unfinished: list, parent: str):
    """The run of ``unfinished`` whose id, here or where it ran (:func:`lq.experiments.records.origin`), is
    ``parent``; None if none is."""
    return next((r for r in unfinished if parent in (r.info.run_id, origin(r))), None)


def _shown(run) -> str:
    """A parent's id here, and the id it had where it ran where that is another (an imported record's)."""
    ran = origin(run)
    return run.info.run_id + (f" (ran as {ran})" if ran != run.info.run_id else "")


def _chosen(unfinished: list, parent: str | None) -> str | None:
    """The id here of the parent a resume takes: ``parent`` where given (:func:`_named`), else the newest of
    ``unfinished`` (None: a new one)."""
    if parent is not None:
        named = _named(unfinished, parent)
        if named is None:  # parents_to_resume refuses it first, with the parents there
            raise ValueError(f"--parent {parent}: not an unfinished parent run of this experiment and identity")
        return named.info.run_id
    return unfinished[0].info.run_id if unfinished else None


def open_parent(
    client, experiment: Experiment, setup: Setup, resume: bool, log: Callable[[str], None], parent: str | None = None
):
    """The parent run of ``experiment`` (a new one, or with ``resume`` the newest unfinished one, or ``parent``,
    reopened) and the (configuration, seed) pairs whose children finished before. Where several unfinished parents
    share the identity, the log names the others (``lq experiment plan`` opens one at each call)."""
    exp_id = experiment_id(client, experiment.name)
    unfinished = parents_to_resume(client, experiment, setup, resume, parent)
    pid = _chosen(unfinished, parent)
    if pid is not None:
        done = _reopen(client, pid, experiment, setup)
        log(f"[{experiment.name}] resuming parent run {pid}: {len(done)} children finished before")
        others = [r for r in unfinished if r.info.run_id != pid]
        if others:
            listed = ", ".join(f"{r.info.run_id} ({len(children(client, r.info.run_id))} finished)" for r in others)
            log(f"[{experiment.name}] other unfinished parents of this identity, newest first: {listed}; --parent ID "
                "resumes one of them instead")  # fmt: skip
        return pid, done
    if resume:
        log(f"[{experiment.name}] no unfinished parent run to resume: starting a new one")
    if experiment.objective and experiment.objective != setup.objective:
        raise ValueError(f"{experiment.name}: its tables name the {experiment.objective} objective, its runs would "
                         f"train under {setup.objective}")  # fmt: skip
    parent = client.create_run(
        exp_id,
        run_name=f"{experiment.name}-{setup.profile}-{setup.protocol}-{setup.objective}",
        tags={"lq.experiment": experiment.name, **parent_identity(setup), "lq.role": "parent", **commit_tag()},
    )
    pid = parent.info.run_id
    client.log_param(pid, "seeds", " ".join(map(str, setup.seeds)))
    client.log_param(pid, "encoders", " ".join(experiment.encoders))
    client.log_param(pid, "configurations", len(experiment.configs))
    if experiment.variants:  # its rows, as they were when it ran (the tables read them back from here)
        client.log_param(pid, "variants", " ".join(experiment.variants))
    parent_view(client, pid)  # its description (params logged first), the UI's view of its children
    return pid, set()
