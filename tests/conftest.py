from __future__ import annotations

from pathlib import Path

import pytest

# Real LIGHT data sits beside the repository (never inside it); on a user's machine it may be absent.
SHARED_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
LIGHT_ENV = SHARED_DATA / "light_env"
LIGHT_WORLDS = SHARED_DATA / "light_worlds"


@pytest.fixture
def light_env() -> Path:
    if not (LIGHT_ENV / "rooms.json").is_file():
        pytest.skip(f"real LIGHT environment DB not found at {LIGHT_ENV} (../shared/data is absent)")
    return LIGHT_ENV


@pytest.fixture
def light_worlds() -> list[Path]:
    worlds = sorted(LIGHT_WORLDS.glob("*.json"))
    if not worlds:
        pytest.skip(f"real LIGHT world graphs not found in {LIGHT_WORLDS} (../shared/data is absent)")
    return worlds
