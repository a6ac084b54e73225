"""lq: goal-driven agents that act and speak in LIGHT fantasy text worlds.

``lq.load_agent(PATH)`` and the rest of the Python API (:mod:`lq.api`) load on first use: ``import lq`` itself is
cheap and changes nothing in the process."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in ("api", "load_agent"):
        import lq.api

        return lq.api if name == "api" else lq.api.load_agent
    raise AttributeError(f"module 'lq' has no attribute {name!r}")
