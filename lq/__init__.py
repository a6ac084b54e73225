"""lq: goal-driven agents that act and speak in LIGHT fantasy text worlds."""

__version__ = "0.1.0"
