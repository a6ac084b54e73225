"""Where the jobs of an experiment run: here, side by side (:class:`Local`, on ``concurrent.futures``), or as jobs of a
cluster (:class:`Submitit`: SLURM, or submitit's own local executor). A job is an ``lq`` command line; a launcher
runs a list of independent ones and returns once all have ended, raising :class:`JobFailed` if any failed."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from lq.experiments.reporting import _print
from lq.stages import CHILD

Job = tuple[str, Sequence[str]]  # a label, and the arguments of an ``lq`` command


def command(args: Sequence[str]) -> list[str]:
    """The process that runs ``lq ARGS`` with this interpreter."""
    return [sys.executable, "-m", "lq", *args]


def shown(args: Sequence[str]) -> str:
    """``lq ARGS`` quoted for a shell, as ``lq experiment plan`` prints it."""
    return shlex.join(["lq", *args])


class Launcher(Protocol):
    def run(self, jobs: Sequence[Job], parallel: int) -> None:
        """Run independent ``jobs``, up to ``parallel`` at once where the launcher decides; raise once all have ended
        if any failed."""


def visible_gpus() -> list[str]:
    """The GPUs a child may be pinned to: ``CUDA_VISIBLE_DEVICES``'s, or every one torch sees (none on a CPU)."""
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        return [g for g in os.environ["CUDA_VISIBLE_DEVICES"].split(",") if g.strip()]
    import torch

    return [str(i) for i in range(torch.cuda.device_count())]


@dataclass(frozen=True)
class Failure:
    """A job that ended badly: its label and arguments, its exit status (negative: the signal that killed it) or the
    error a cluster reported, and its log."""

    label: str
    args: Sequence[str]
    status: int | str
    log: str | None = None

    @property
    def killed(self) -> bool:
        return isinstance(self.status, int) and self.status < 0

    def __str__(self) -> str:
        if self.killed:
            try:
                how = f"was killed by {signal.Signals(-self.status).name}"
            except ValueError:
                how = f"was killed by signal {-self.status}"
        elif isinstance(self.status, int):
            how = f"failed (exit status {self.status})"
        else:
            how = f"failed ({self.status})"
        return f"{self.label} {how}" + (f" (its log: {self.log}){self._tail()}" if self.log else "")

    def _tail(self, lines: int = 8) -> str:
        """The last non-empty lines of the log, where it can be read: the error that ended the job, shown where the
        failure is reported (a CI log, a terminal that scrolled) without opening the file."""
        try:
            text = Path(self.log).read_text(errors="replace").splitlines()
        except OSError:
            return ""
        tail = [line for line in text if line.strip()][-lines:]
        return ", which ends:\n" + "\n".join(f"    {line}" for line in tail) if tail else ""


class JobFailed(RuntimeError):
    """Jobs of a launcher ended badly (killed, or an error): each a :class:`Failure`."""

    def __init__(self, failures: Sequence[Failure]):
        self.failures = list(failures)
        super().__init__("; ".join(str(f) for f in self.failures))


def log_name(label: str) -> str:
    """A job's log file name: its label with anything but letters, digits, ``.``, ``_`` and ``-`` as ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_") + ".log"


@dataclass(frozen=True)
class Task:
    """A job of a graph (:meth:`Local.run_graph`): its label and ``lq`` arguments; the labels of the jobs it starts
    after (``after``: once each has ended well or released its slots); how many of the width's slots it holds
    (``slots``: every one for a run on every core); ``due``, asked as it could start: it writes what the job reads and
    says whether the job is to run (False: already done, it counts as ended well); ``released``, asked while it runs
    with the time it started (:func:`time.time`): whether it has made what the jobs after it read (a BC agent's final
    weights, :func:`lq.data.outputs.trained`), so that they may start while it goes on (its evaluation)."""

    label: str
    args: Sequence[str]
    after: Sequence[str] = ()
    slots: int = 1
    due: Callable[[], bool] | None = None
    released: Callable[[float], bool] | None = None


# how much lower a job that released its slots runs (nice, 0-19): it fills the cores the jobs in slots leave idle
RELEASED_NICENESS = 10


def lower_priority(pid: int, by: int = RELEASED_NICENESS) -> None:
    """Raise the niceness of every thread of process ``pid`` by ``by`` (Linux keeps it per thread; elsewhere the
    process's); a process gone, or a system that refuses, is left as it is."""
    try:
        threads = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        threads = [pid]
    for tid in threads:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + by))
        except OSError:
            pass


@dataclass
class _Running:
    task: Task
    slots: list[int]
    started: float
    process: list[subprocess.Popen] = field(default_factory=list)  # once it has started
    released: bool = False


@dataclass
class Local:
    """Child processes of this one, each pinned to one GPU where there are GPUs (``CUDA_VISIBLE_DEVICES``, slot ``i``
    on GPU ``i`` mod their number). Each run sets its own CPU threads (``--threads``), whatever runs beside it. A job's
    output goes to this terminal (each line prefixed with its label when side by side) and to ``logs/LABEL.log``. Once
    one fails no other starts; Ctrl-C reaches the running children, which stop cleanly, and then this process.

    :meth:`run` runs independent jobs ``parallel`` at once; :meth:`run_graph` runs jobs that wait for others
    (:class:`Task`), each as soon as what it waits for is done and slots are free, in the order given where several
    could start. A job that released its slots (a BC agent whose weights are final, now evaluating) goes on at a lower
    CPU priority (:data:`RELEASED_NICENESS`), filling what the jobs in slots leave idle; at most twice the width of
    processes run at once."""

    logs: str | None = None  # where each job's output is kept (None: nowhere)
    poll: float = 1.0  # seconds between looks at the running jobs' ``released``

    def run(self, jobs: Sequence[Job], parallel: int) -> None:
        self.run_graph([Task(label, args) for label, args in jobs], parallel)

    def run_graph(self, tasks: Sequence[Task], width: int) -> None:
        """Run ``tasks`` on ``width`` slots, each after the jobs it names (:class:`Task`); raise :class:`JobFailed`
        once all that started have ended if any failed. A job after a label no task has is a ValueError."""
        if not tasks:
            return
        labels = {t.label for t in tasks}
        if unknown := sorted({a for t in tasks for a in t.after} - labels):
            raise ValueError(f"jobs after {', '.join(unknown)}, which no job is")
        if selfish := sorted({t.label for t in tasks if t.label in t.after}):
            raise ValueError(f"jobs after themselves: {', '.join(selfish)}")
        width = max(1, width)
        prefixed = len(tasks) > 1  # side by side, or a released job beside the next
        gpus = visible_gpus()
        free = list(range(width))
        pending = list(tasks)
        met: set[str] = set()  # labels every job of which ended well, released its slots or was done already
        left = {label: sum(t.label == label for t in tasks) for label in labels}
        running: dict[Future, _Running] = {}
        failures: list[Failure] = []
        processes: set[subprocess.Popen] = set()

        def meet(label: str) -> None:
            left[label] -= 1
            if not left[label]:
                met.add(label)

        def start(pool: ThreadPoolExecutor) -> None:
            for task in list(pending):
                if not set(task.after) <= met:
                    continue
                need = min(max(1, task.slots), width)
                if need > len(free) or len(running) >= 2 * width:
                    return  # the first that can start waits for slots: none after it goes first
                pending.remove(task)
                try:
                    due = task.due is None or task.due()
                except Exception as error:  # noqa: BLE001 (its step's own error, reported as its failure)
                    failures.append(Failure(task.label, task.args, f"{type(error).__name__}: {error}"))
                    return
                if not due:
                    meet(task.label)
                    continue
                slots = [free.pop(0) for _ in range(need)]
                entry = _Running(task, slots, time.time())
                gpu = gpus[slots[0] % len(gpus)] if gpus else None
                running[pool.submit(self._job, task, gpu, prefixed, entry, processes)] = entry

        def release(entry: _Running, met_too: bool = True) -> None:
            """Its slots free; those after it may start (``met_too``); while it runs, at a lower priority."""
            entry.released = True
            free.extend(entry.slots)
            free.sort()
            if met_too:
                meet(entry.task.label)
            for process in entry.process:
                if process.poll() is None:
                    lower_priority(process.pid)

        with ThreadPoolExecutor(len(tasks)) as pool:
            try:
                while True:
                    if not failures:
                        start(pool)
                    if not running:
                        break
                    ended, _ = wait(running, timeout=self.poll, return_when=FIRST_COMPLETED)
                    for future in ended:
                        entry = running.pop(future)
                        failure = future.result()
                        if failure is not None:
                            failures.append(failure)
                        if not entry.released:
                            release(entry, met_too=failure is None)
                    for entry in running.values():
                        task = entry.task
                        if not entry.released and task.released is not None and task.released(entry.started):
                            release(entry)
            except BaseException:  # Ctrl-C (it reached the children too) or an error here: the children stop cleanly
                pending.clear()
                for process in list(processes):
                    if process.poll() is None:
                        process.send_signal(signal.SIGINT)
                raise
        if failures:
            raise JobFailed(failures)
        if pending:  # what could never start (no failure stopped it): a graph that waits for itself
            raise RuntimeError(f"jobs that could never start: {', '.join(t.label for t in pending)}")

    def _job(self, task: Task, gpu: str | None, prefixed: bool, entry: _Running, processes: set) -> Failure | None:
        """Run ``task``'s process to its end on ``gpu`` (None: as this process sees them); its failure, if any."""
        env = {**os.environ, CHILD: "1"}
        if gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = gpu
        cmd = command(task.args)
        pinned = f"CUDA_VISIBLE_DEVICES={gpu} " if gpu is not None else ""
        _print(f"$ {pinned}{shlex.join(cmd)}")
        log = Path(self.logs, log_name(task.label)) if self.logs else None
        status = self._run(cmd, env, task.label if prefixed else None, log, processes, entry.process)
        return None if status == 0 else Failure(task.label, task.args, status, str(log) if log else None)

    @staticmethod
    def _run(cmd, env, prefix: str | None, log: Path | None, running: set, started: list | None = None) -> int:
        """Run one child to its end, its output to this terminal (prefixed) and ``log``; its exit status."""
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w", encoding="utf-8") if log is not None else nullcontext() as kept:
            process = subprocess.Popen(
                cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
            )
            running.add(process)
            if started is not None:
                started.append(process)
            try:
                for line in process.stdout:
                    _print(f"[{prefix}] {line.rstrip()}" if prefix else line.rstrip())
                    if kept is not None:
                        kept.write(line)
                        kept.flush()
                return process.wait()
            finally:
                running.discard(process)


@dataclass
class Submitit:
    """Each job sent to a cluster by submitit (``pip install submitit``): SLURM where ``sbatch`` is found, else
    submitit's local executor (real jobs as local processes; ``cluster=local`` asks for it). ``parameters`` go to
    ``AutoExecutor.update_parameters`` (``slurm_partition=gpu``, ``gpus_per_node=1``, ``timeout_min=240``,
    ``mem_gb=32``, ``cpus_per_task=8``, ...), from ``--launcher-args``. Logs land in ``folder``, one per job."""

    folder: str = "outputs/submitit"
    parameters: dict[str, object] = field(default_factory=dict)

    def run(self, jobs: Sequence[Job], parallel: int) -> None:
        if not jobs:
            return
        import submitit
        from submitit.helpers import CommandFunction

        parameters = dict(self.parameters)
        cluster = parameters.pop("cluster", None)
        executor = submitit.AutoExecutor(folder=self.folder, cluster=cluster)
        executor.update_parameters(**parameters)
        env = {**os.environ, CHILD: "1"}
        submitted = []
        for label, args in jobs:
            executor.update_parameters(name=label.replace(" ", "_"))
            job = executor.submit(CommandFunction(command(args), cwd=os.getcwd(), env=env, verbose=False))
            _print(f"$ [{executor.cluster} job {job.job_id}] {shlex.join(command(args))}")
            submitted.append((label, job))
        failures = []
        for label, job in submitted:
            try:
                job.result()
            except Exception as error:  # noqa: BLE001 (every job is waited for; the failures are raised together)
                reason = str(error).strip().splitlines()[-1:] or [type(error).__name__]
                failures.append(Failure(f"{label} (job {job.job_id})", args, reason[0][-300:], str(job.paths.stderr)))
            else:
                _print(f"[{label}] done (job {job.job_id})")
        if failures:
            raise JobFailed(failures)


LAUNCHERS = ("local", "submitit")


def launcher(
    name: str = "local", args: Sequence[str] = (), folder: str = "outputs/submitit", logs: str | None = None
) -> Launcher:
    """A launcher by name; ``args`` are submitit's ``KEY=VALUE`` parameters (numbers read as numbers); ``logs``: where
    the local launcher keeps each job's output (an experiment's setup: ``OUTPUTS/logs``)."""
    if name == "local":
        if args:
            raise ValueError(f"--launcher-args {' '.join(args)}: the local launcher takes none (--jobs sets its width)")
        return Local(logs)
    if name != "submitit":
        raise ValueError(f"unknown launcher {name}: choose from {', '.join(LAUNCHERS)}")
    parameters: dict[str, object] = {}
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep or not key:
            raise ValueError(f"--launcher-args {arg}: write KEY=VALUE (e.g. slurm_partition=gpu timeout_min=240)")
        parameters[key] = int(value) if value.isdigit() else value
    return Submitit(folder, parameters)
