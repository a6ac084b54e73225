"""Where the jobs of an experiment run: here, side by side (:class:`Local`, on ``concurrent.futures``), or as jobs of a
cluster (:class:`Submitit`: SLURM, or submitit's own local executor). A job is an ``lq`` command line; a launcher
runs a list of independent ones and returns once all have ended, raising :class:`JobFailed` if any failed."""

from __future__ import annotations

import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from lq.experiments.reporting import _print

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


@dataclass
class Local:
    """Child processes of this one, up to ``parallel`` at once (a thread pool of ``concurrent.futures``), each pinned
    to one GPU where there are GPUs (``CUDA_VISIBLE_DEVICES``, slot ``i`` on GPU ``i`` mod their number). Each run
    sets its own CPU threads (``--threads``), whatever runs beside it. A job's output goes to this terminal (each line
    prefixed with its label when side by side) and to ``logs/LABEL.log``. Once one fails no other starts; Ctrl-C
    reaches the running children, which stop cleanly, and then this process."""

    logs: str | None = None  # where each job's output is kept (None: nowhere)

    def run(self, jobs: Sequence[Job], parallel: int) -> None:
        if not jobs:
            return
        width = max(1, min(parallel, len(jobs)))
        gpus = visible_gpus()
        slots: queue.Queue[int] = queue.Queue()
        for slot in range(width):
            slots.put(slot)
        stop = threading.Event()
        running: set[subprocess.Popen] = set()

        def one(job: Job) -> Failure | None:
            label, args = job
            slot = slots.get()
            try:
                if stop.is_set():
                    return None
                env = dict(os.environ)
                if gpus:
                    env["CUDA_VISIBLE_DEVICES"] = gpus[slot % len(gpus)]
                cmd = command(args)
                pinned = f"CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']} " if gpus else ""
                _print(f"$ {pinned}{shlex.join(cmd)}")
                log = Path(self.logs, log_name(label)) if self.logs else None
                status = self._run(cmd, env, label if width > 1 else None, log, running)
                if status != 0:
                    stop.set()
                    return Failure(label, args, status, str(log) if log else None)
                return None
            finally:
                slots.put(slot)

        with ThreadPoolExecutor(width) as pool:
            futures = [pool.submit(one, job) for job in jobs]
            try:
                failures = [f for f in (future.result() for future in futures) if f]
            except KeyboardInterrupt:  # the children stop cleanly (a terminal's Ctrl-C reached them already)
                stop.set()
                for process in list(running):
                    if process.poll() is None:
                        process.send_signal(signal.SIGINT)
                raise
        if failures:
            raise JobFailed(failures)

    @staticmethod
    def _run(cmd, env, prefix: str | None, log: Path | None, running: set) -> int:
        """Run one child to its end, its output to this terminal (prefixed) and ``log``; its exit status."""
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w", encoding="utf-8") if log is not None else nullcontext() as kept:
            process = subprocess.Popen(
                cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
            )
            running.add(process)
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
        env = dict(os.environ)
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
