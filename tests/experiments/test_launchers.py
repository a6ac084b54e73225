"""Where the jobs run (:mod:`lq.experiments.launchers`): the local launcher's processes side by side, their output and
logs, slots released early, Ctrl-C, killed children and GPUs."""

import os
import signal
import sys
import threading

import pytest

from lq.experiments import launchers
from lq.experiments.launchers import Local, Task


def test_ctrl_c_reaches_the_running_children_which_stop_before_the_driver(tmp_path, monkeypatch):
    script = (
        "import signal, sys, time\n"
        "def stop(*_):\n"
        "    open(sys.argv[1], 'w').write('stopped cleanly')\n"
        "    sys.exit(130)\n"
        "signal.signal(signal.SIGINT, stop)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    monkeypatch.setattr(launchers, "command", lambda args: [sys.executable, "-c", script, *args])
    ctrl_c = threading.Timer(3, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    ctrl_c.start()  # Ctrl-C, as the driver's main thread gets it (not the children: the test's own terminal's)
    with pytest.raises(KeyboardInterrupt):
        Local().run([(f"j{i}", [str(tmp_path / f"j{i}")]) for i in range(3)], 2)
    assert [(tmp_path / f"j{i}").read_text() for i in range(2)] == ["stopped cleanly"] * 2
    assert not (tmp_path / "j2").exists()  # never started


def test_the_local_launcher_runs_jobs_side_by_side_with_their_output_prefixed_and_kept(tmp_path, capsys):
    first, second, logs = tmp_path / "a", tmp_path / "b", tmp_path / "logs"
    jobs = [(f"data {d.name}", ["data", "generate", str(d), "--scale", "tiny"]) for d in (first, second)]
    Local(str(logs)).run(jobs, 2)
    assert (first / "manifest.json").is_file() and (second / "manifest.json").is_file()
    out = capsys.readouterr().out
    assert "\n[data a] wrote " in out and "\n[data b] wrote " in out  # each line of a child under its job's label
    assert f"\nwrote {first} " in (logs / "data_a.log").read_text()  # and kept, unprefixed
    with pytest.raises(launchers.JobFailed) as failed:  # one fails: said after both end
        Local(str(logs)).run(
            [("data", ["data", "generate", str(first), "--scale", "tiny"]), ("s", ["data", "stats", str(second)])], 2
        )
    [failure] = failed.value.failures
    assert (failure.label, failure.status, failure.killed) == ("data", 1, False)
    assert str(failure).startswith(f"data failed (exit status 1) (its log: {logs / 'data.log'}), which ends:\n    ")
    assert "already exists" in (logs / "data.log").read_text()  # the child's own error, kept
    assert "already exists" in str(failure).splitlines()[-1]  # and shown where the failure is reported


def test_the_local_launcher_starts_a_job_once_what_it_waits_for_released_its_slot(tmp_path, monkeypatch):
    """On one slot: ``bc`` writes its marker (its weights final) and then waits for ``rl``, which starts after it;
    ``rl`` can start only if the launcher freed ``bc``'s slot at the marker, and ``bc`` goes on 10 nicer. A job after
    a failed one never starts."""
    script = (
        "import os, sys, time\n"
        "name, d = sys.argv[1], sys.argv[2]\n"
        "open(f'{d}/{name}.started', 'w').close()\n"
        "if name == 'bc':\n"
        "    open(f'{d}/bc.marker', 'w').close()\n"
        "    for _ in range(300):\n"
        "        if os.path.exists(f'{d}/rl.started'):\n"
        "            break\n"
        "        time.sleep(0.05)\n"
        "    open(f'{d}/bc.seen', 'w').write(f'{os.path.exists(d + \"/rl.started\")} {os.nice(0)}')\n"
        "sys.exit(3 if name == 'broken' else 0)\n"
    )
    monkeypatch.setattr(launchers, "command", lambda args: [sys.executable, "-c", script, *args])
    marker = tmp_path / "bc.marker"

    def released(started: float) -> bool:
        return marker.exists() and marker.stat().st_mtime >= started

    base = os.nice(0)
    tasks = [Task("bc", ["bc", str(tmp_path)], released=released), Task("rl", ["rl", str(tmp_path)], after=["bc"])]
    Local(poll=0.05).run_graph(tasks, 1)
    assert (tmp_path / "bc.seen").read_text() == f"True {min(19, base + launchers.RELEASED_NICENESS)}"

    with pytest.raises(launchers.JobFailed) as failed:
        Local(poll=0.05).run_graph([Task("broken", ["broken", str(tmp_path)]),
                                    Task("after", ["after", str(tmp_path)], after=["broken"])], 2)  # fmt: skip
    assert [f.label for f in failed.value.failures] == ["broken"] and not (tmp_path / "after.started").exists()
    with pytest.raises(ValueError, match="jobs after nothing, which no job is"):
        Local().run_graph([Task("a", ["a"], after=["nothing"])], 1)
    with pytest.raises(ValueError, match="jobs after themselves: a"):
        Local().run_graph([Task("a", ["a"], after=["a"])], 1)

    def broken_step() -> bool:
        raise OSError("its config cannot be written")

    with pytest.raises(launchers.JobFailed) as failed:  # a step's error as it is due: its failure, no other starts
        Local(poll=0.05).run_graph([Task("w", ["w", str(tmp_path)], due=broken_step),
                                    Task("z", ["z", str(tmp_path)])], 1)  # fmt: skip
    assert str(failed.value) == "w failed (OSError: its config cannot be written)"
    assert not (tmp_path / "z.started").exists()


def test_the_local_launcher_says_which_child_was_killed_and_by_what(tmp_path, monkeypatch):
    script = "import os, signal, sys; print('started', flush=True); os.kill(os.getpid(), int(sys.argv[1]))"
    monkeypatch.setattr(launchers, "command", lambda args: [sys.executable, "-c", script, *args])
    with pytest.raises(launchers.JobFailed) as failed:
        Local(str(tmp_path)).run([("rl s0", ["9"])], 1)
    [failure] = failed.value.failures
    log = tmp_path / "rl_s0.log"
    assert failure.killed and str(failure) == f"rl s0 was killed by SIGKILL (its log: {log}), which ends:\n    started"
    assert (tmp_path / "rl_s0.log").read_text() == "started\n"


def test_the_local_launcher_pins_one_gpu_per_child_and_leaves_the_threads_to_the_runs(tmp_path, monkeypatch):
    """Where there are GPUs, each of the jobs side by side sees one of them, a different one; on a CPU none is set.
    The CPU threads are each run's own (``--threads``): the launcher sets none, whatever the job count."""
    seen = tmp_path / "seen"
    seen.mkdir()
    env = "os.environ.get('CUDA_VISIBLE_DEVICES', '-') + ' ' + os.environ.get('OMP_NUM_THREADS', '-')"
    script = f"import os, sys; open(sys.argv[1], 'w').write({env})"
    monkeypatch.setattr(launchers, "command", lambda args: [sys.executable, "-c", script, *args])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    Local().run([(f"j{i}", [str(seen / str(i))]) for i in range(4)], 2)
    pinned = [(seen / str(i)).read_text().split() for i in range(4)]
    # two slots, one GPU each: every child sees one GPU, the first two (started together) different ones
    assert {g for g, _ in pinned} == {"2", "5"} and {t for _, t in pinned} == {"-"}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU visible: nothing pinned
    Local().run([("j", [str(seen / "cpu")])], 1)
    assert (seen / "cpu").read_text() == " -"
