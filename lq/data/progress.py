"""Progress of a long step that is not a training loop (evaluation, the partner's calibration, encoding candidates):
a bar where stderr is a terminal, and in a log file a plain line per tenth of the work and at least one a minute,
then the step's wall time. No step of lq runs silent for minutes (training's own lines: lq.lit.callbacks)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from tqdm.auto import tqdm

LINE_EVERY_S = 50.0  # a log line at least this often, whatever the tenths (under the minute a reader waits)


class Progress:
    """``total`` items of ``what`` (``unit`` each): :meth:`update` as they finish, :meth:`close` (or the ``with``
    block's end) prints the wall time. ``quiet``: nothing at all (a step inside another that reports)."""

    def __init__(self, total: int, what: str, unit: str = "item", quiet: bool = False, out: TextIO | None = None):
        self.total, self.what, self.quiet = total, what, quiet
        self.units = unit + ("es" if unit.endswith(("ch", "sh", "s", "x")) else "s")
        self.out = out if out is not None else sys.stdout
        self.done, self.started, self.last_line = 0, time.perf_counter(), time.perf_counter()
        self.next_tenth = 1
        self.bar = None
        if not quiet and sys.stderr.isatty():
            self.bar = tqdm(total=total, desc=what, unit=unit, leave=False)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self.close(failed=kind is not None)

    def _line(self, text: str) -> None:
        print(text, file=self.out, flush=True)
        self.last_line = time.perf_counter()

    def update(self, n: int = 1, note: str = "") -> None:
        """``n`` more items done; ``note``: what to add to a log line (a figure the step has reached)."""
        self.done += n
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.update(n)
            return
        now = time.perf_counter()
        tenth = self.done * 10 // max(self.total, 1)
        if tenth >= self.next_tenth or now - self.last_line >= LINE_EVERY_S:
            self.next_tenth = max(self.next_tenth, tenth + 1)
            self._line(
                f"{self.what}: {self.done}/{self.total} {self.units} ({100 * self.done // max(self.total, 1)}%), "
                f"{now - self.started:.0f} s" + (f", {note}" if note else "")
            )

    def close(self, failed: bool = False) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if not self.quiet and not failed:
            self._line(f"{self.what}: {self.done} {self.units} in {self.elapsed:.0f} s")
        self.quiet = True  # once

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started
