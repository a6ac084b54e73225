"""What the benchmarks share: wall-clock seconds per named part, added up by wrapped callables."""

from __future__ import annotations

import time
from collections import defaultdict

TIMES: dict[str, float] = defaultdict(float)


def timed(name, fn):
    """``fn``, adding the seconds of each of its calls to ``TIMES[name]``."""

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            TIMES[name] += time.perf_counter() - start

    return wrapper
