"""Where the jobs of an experiment run: here, side by side (:class:`Local`, on ``concurrent.futures``), or as jobs of a
cluster (:class:`Submitit`: SLURM, or submitit's own local executor). A job is an ``lq`` command line; a launcher
runs a list of independent ones and returns once all have ended, raising if any failed."""

from __future__ import annotations

import os
import queue
import shlex
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
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


def _threads(parallel: int, jobs: int) -> int:
    return max(1, (os.cpu_count() or 1) // max(1, min(parallel, jobs)))


@dataclass
class Local:
    """Child processes of this one, up to ``parallel`` at once (a thread pool of ``concurrent.futures``): the cores
    shared among them (``OMP_NUM_THREADS``), each pinned to one GPU where there are GPUs (``CUDA_VISIBLE_DEVICES``,
    slot ``i`` on GPU ``i`` mod their number). Side by side, each output line is prefixed with the job's label. Once
    one fails no other starts."""

    def run(self, jobs: Sequence[Job], parallel: int) -> None:
        if not jobs:
            return
        width = max(1, min(parallel, len(jobs)))
        threads, gpus = _threads(parallel, len(jobs)), visible_gpus()
        slots: queue.Queue[int] = queue.Queue()
        for slot in range(width):
            slots.put(slot)
        failed = threading.Event()

        def one(job: Job) -> str | None:
            label, args = job
            slot = slots.get()
            try:
                if failed.is_set():
                    return None
                env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
                pinned = ""
                if gpus:
                    env["CUDA_VISIBLE_DEVICES"] = pinned = gpus[slot % len(gpus)]
                cmd = command(args)
                _print(
                    f"$ OMP_NUM_THREADS={threads}{f' CUDA_VISIBLE_DEVICES={pinned}' if gpus else ''} {shlex.join(cmd)}"
                )
                if width == 1:
                    status = subprocess.run(cmd, env=env, check=False).returncode
                else:
                    process = subprocess.Popen(
                        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
                    )
                    for line in process.stdout:
                        _print(f"[{label}] {line.rstrip()}")
                    status = process.wait()
                if status != 0:
                    failed.set()
                    return f"exit status {status}: {shlex.join(cmd)}"
                return None
            finally:
                slots.put(slot)

        with ThreadPoolExecutor(width) as pool:
            failures = [f for f in pool.map(one, jobs) if f]
        if failures:
            raise RuntimeError("; ".join(failures))


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
        if executor.cluster in ("local", "debug"):  # this machine's cores shared among the jobs
            env["OMP_NUM_THREADS"] = str(_threads(len(jobs), len(jobs)))
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
                failures.append(f"{label} (job {job.job_id}, logs {job.paths.stderr}): {str(error)[-2000:]}")
            else:
                _print(f"[{label}] done (job {job.job_id})")
        if failures:
            raise RuntimeError("; ".join(failures))


LAUNCHERS = ("local", "submitit")


def launcher(name: str = "local", args: Sequence[str] = (), folder: str = "outputs/submitit") -> Launcher:
    """A launcher by name; ``args`` are submitit's ``KEY=VALUE`` parameters (numbers read as numbers)."""
    if name == "local":
        if args:
            raise ValueError(f"--launcher-args {' '.join(args)}: the local launcher takes none (--jobs sets its width)")
        return Local()
    if name != "submitit":
        raise ValueError(f"unknown launcher {name}: choose from {', '.join(LAUNCHERS)}")
    parameters: dict[str, object] = {}
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep or not key:
            raise ValueError(f"--launcher-args {arg}: write KEY=VALUE (e.g. slurm_partition=gpu timeout_min=240)")
        parameters[key] = int(value) if value.isdigit() else value
    return Submitit(folder, parameters)
