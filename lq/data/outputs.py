"""Where a dataset's trained models go (:func:`outputs_for`) and whether the run that wrote a checkpoint finished (the
:data:`DONE` marker beside it). Read by every layer that looks for a trained model: the stages (:mod:`lq.stages`), the
Gymnasium entry's defaults (:mod:`lq.envs.gym`) and the stage CLIs, which write the marker."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

# written beside a stage's checkpoint once its run has done all its work, last: a checkpoint without it is a run's
# that was interrupted (killed, Ctrl-C, failed) and counts as not there
DONE = "done.json"
# written beside it once its training has ended and the checkpoint is final, before the run's evaluation: a run that
# starts from it (RL from its BC agent) need not wait for that evaluation (lq.experiments.launchers.Local.run_graph)
TRAINED = "trained.json"
# a trained run's last checkpoint (Lightning's ``save_last``), what a run stopped mid-training goes on from
LAST = "last.ckpt"
# the folder inside a finished run's where a run trained again from its start (FORCE=1) writes, until it finishes
RETRAIN = ".retrain"


def _marked(checkpoint: str | Path, name: str, since: float | None = None) -> bool:
    """Whether ``checkpoint`` is there and the marker ``name`` beside it names it (written at or after ``since``,
    seconds since the epoch, where given)."""
    checkpoint = Path(checkpoint)
    marker = checkpoint.parent / name
    try:
        if not checkpoint.is_file() or (since is not None and marker.stat().st_mtime < since):
            return False
        return json.loads(marker.read_text(encoding="utf-8")).get("checkpoint") == checkpoint.name
    except (OSError, ValueError, AttributeError):  # no marker, half a file, one from elsewhere: not this run's
        return False


def _mark(checkpoint: str | Path, name: str, about: dict[str, object]) -> Path:
    """Write the marker ``name`` beside ``checkpoint`` (atomically), naming it and ``about``."""
    from lq.data.io import write_json

    checkpoint = Path(checkpoint)
    marker = checkpoint.parent / name
    write_json(marker, {"checkpoint": checkpoint.name, **about})
    return marker


def finished(checkpoint: str | Path) -> bool:
    """Whether ``checkpoint`` is there and the run that wrote it finished (:data:`DONE` beside it names it)."""
    return _marked(checkpoint, DONE)


def mark_finished(checkpoint: str | Path, **about: object) -> Path:
    """Write :data:`DONE` beside ``checkpoint`` (atomically), naming it and ``about`` (the run id, the stage)."""
    return _mark(checkpoint, DONE, about)


def mark_trained(checkpoint: str | Path, **about: object) -> Path:
    """Write :data:`TRAINED` beside ``checkpoint`` (atomically), naming it and ``about``: its training has ended and it
    holds the run's final weights, though the run goes on (its evaluation)."""
    return _mark(checkpoint, TRAINED, about)


def trained(checkpoint: str | Path, since: float | None = None) -> bool:
    """Whether ``checkpoint`` holds its run's final weights: its run finished (:func:`finished`) or its training ended
    (:data:`TRAINED` beside it names it); with ``since`` (seconds since the epoch, as :func:`time.time`), only a marker
    written at or after it counts (a marker of an earlier run in the folder, before the new run removed it)."""
    return any(_marked(checkpoint, name, since) for name in (DONE, TRAINED))


def unfinished(folder: str | Path, fresh: bool = False) -> None:
    """Remove a folder's :data:`DONE` and :data:`TRAINED` before a run writes its checkpoints there: until it has
    trained, they are not its final weights; until it finishes, not done. ``fresh`` (a run that starts over, not
    resumed with ``--ckpt_path``): its :data:`LAST` too, so that a run stopped before its first save leaves no earlier
    run's last checkpoint to be resumed as its own (another parent's run of the same configuration, in the same
    folder, finished to its end)."""
    for name in (DONE, TRAINED, *([LAST] if fresh else [])):
        (Path(folder) / name).unlink(missing_ok=True)


def replace_run(staging: str | Path, folder: str | Path) -> None:
    """Put the run trained in ``staging`` (a forced retrain, :data:`RETRAIN`) in place of the finished run in
    ``folder``, once it has finished: the old markers go first (a stop midway leaves a run that is not done, trained
    again next time, never a marker naming the other run's weights), then each file of ``staging`` over its namesake
    (a folder replaced whole), then ``staging`` itself. The caller writes the new :data:`DONE` last."""
    staging, folder = Path(staging), Path(folder)
    for name in (DONE, TRAINED):
        (folder / name).unlink(missing_ok=True)
    for entry in sorted(staging.iterdir(), key=lambda p: p.name in (DONE, TRAINED)):  # the markers after the rest
        target = folder / entry.name
        if entry.is_dir() and target.is_dir():
            shutil.rmtree(target)
        os.replace(entry, target)
    staging.rmdir()


def outputs_for(data_dir: str | Path) -> str:
    """Where a dataset's checkpoints go: ``outputs/`` for the default data, ``outputs/<folder name>/`` for any other, so
    that a partner, DM or agent trained on one dataset is never picked up for another."""
    return "outputs" if Path(data_dir) == Path("data/default") else f"outputs/{Path(data_dir).resolve().name}"
