"""Progress of the long steps that are not training loops: a line per tenth in a log, one at least every
LINE_EVERY_S seconds however slow the items, and the wall time at the end."""

import io

import lq.data.progress as progress
from lq.data.progress import Progress


def test_a_log_gets_a_line_per_tenth_and_the_wall_time():
    out = io.StringIO()
    with Progress(40, "zero-shot episodes", "quest", out=out) as bar:
        for _ in range(40):
            bar.update()
    lines = out.getvalue().splitlines()
    assert [line.split(": ")[1].split(" ")[0] for line in lines[:-1]] == [f"{4 * i}/40" for i in range(1, 11)]
    assert lines[-1].startswith("zero-shot episodes: 40 quests in ")


def test_slow_items_still_print_a_line_a_minute(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: now[0])
    out = io.StringIO()
    bar = Progress(1000, "calibration", "setting", out=out)
    bar.update(note="share 0.1")  # 1 of 1000: no tenth yet, and no time has passed
    assert out.getvalue() == ""
    now[0] = progress.LINE_EVERY_S + 1
    bar.update(note="share 0.2")
    assert out.getvalue() == f"calibration: 2/1000 settings (0%), {progress.LINE_EVERY_S + 1:.0f} s, share 0.2\n"


def test_quiet_prints_nothing_and_a_failed_step_no_wall_time():
    out = io.StringIO()
    with Progress(10, "quiet", out=out, quiet=True) as bar:
        bar.update(10)
    assert out.getvalue() == ""
    out = io.StringIO()
    try:
        with Progress(10, "failing", out=out) as bar:
            raise RuntimeError("stop")
    except RuntimeError:
        pass
    assert " in " not in out.getvalue()
