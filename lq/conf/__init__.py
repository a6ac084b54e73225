"""lq's configs, shipped inside the package: the stages (``rl.yaml``, ...), ``encoder/``, ``profile/`` and
``protocol/``. :func:`path` finds one from any working directory (``importlib.resources``); the repository's top-level
``conf/`` is a link to this folder, so ``--config conf/rl.yaml`` reads the same files."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

ROOT = Path(str(files(__name__)))


def read(*parts: str) -> dict:
    """The config file :func:`path` finds, parsed (e.g. ``read("generate", "mlm_fill.yaml")``)."""
    import yaml

    return yaml.safe_load(path(*parts).read_text(encoding="utf-8"))


def path(*parts: str) -> Path:
    """The config file ``ROOT/parts...`` (e.g. ``path("protocol", "paper.yaml")``); a missing one is named with the
    ones that exist beside it."""
    found = ROOT.joinpath(*parts)
    if not found.is_file():
        known = ", ".join(sorted(p.name for p in found.parent.glob("*.yaml"))) if found.parent.is_dir() else "none"
        raise FileNotFoundError(f"{found}: no such lq config; {found.parent} has {known}")
    return found
