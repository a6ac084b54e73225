"""Atomic file writes and JSON reads that report errors as :class:`DataFormatError`."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from lq.data.errors import DataFormatError


@contextmanager
def atomic_open(path: str | Path, mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; rename it over ``path`` only if the block succeeds.

    A crash or an exception inside the block leaves ``path`` as it was and no temporary file behind.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~umask())  # mkstemp's 0600 is for the temporary file, not for what it becomes
        with os.fdopen(fd, mode, **kwargs) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: str | Path, value: Any, *, indent: int | None = 2) -> None:
    """Write ``value`` as UTF-8 JSON to ``path`` atomically."""
    with atomic_open(path, "w", encoding="utf-8") as handle:
        json.dump(value, handle, ensure_ascii=False, indent=indent)
        handle.write("\n")


def json_strings(value: Any) -> Iterator[str]:
    """Every string value inside parsed JSON (not the keys)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from json_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from json_strings(v)


def read_json(path: str | Path) -> Any:
    """Read a JSON file, turning a missing file or bad JSON into a :class:`DataFormatError`."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataFormatError(path, "file not found", fix="check the path") from None
    except IsADirectoryError:
        raise DataFormatError(path, "is a directory, expected a JSON file", fix="pass the file inside it") from None
    except UnicodeDecodeError as err:
        raise DataFormatError(
            path, f"not UTF-8 text ({err.reason} at byte {err.start})", fix="re-save the file as UTF-8"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DataFormatError(
            path,
            f"invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}",
            fix="repair the JSON syntax there",
        ) from None


def read_json_list(path: str | Path, what: str, fix: str) -> list[Any]:
    """A JSON file that must hold a list (of ``what``); ``fix`` says what the file should look like."""
    data = read_json(path)
    if not isinstance(data, list):
        raise DataFormatError(path, f"expected a JSON list of {what}, found {type(data).__name__}", fix=fix)
    return data


def read_jsonl(path: str | Path, what: str) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line of a JSON-lines file; ``what`` says what the file holds."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DataFormatError(path, "file not found", fix=f"expected {what} here") from None
    except UnicodeDecodeError as err:
        raise DataFormatError(path, f"not UTF-8 text ({err.reason})", fix="re-save the file as UTF-8") from None
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield i, json.loads(line)
        except json.JSONDecodeError as err:
            raise DataFormatError(
                path, f"invalid JSON ({err.msg})", record=f"line {i}", fix="one JSON object per line"
            ) from None


@contextmanager
def atomic_dir(path: str | Path, *, overwrite: bool = False) -> Iterator[Path]:
    """Build a directory in a temporary sibling and move it to ``path`` only when the block succeeds.

    With ``overwrite`` an existing ``path`` is replaced; without it an existing ``path`` is an error.
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} already exists: remove it or pass overwrite=True (--overwrite)")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        yield tmp
        shared_modes(tmp)
        if path.exists():
            old = path.with_name(f".{path.name}.old")
            _rmtree(old)
            os.replace(path, old)
            os.replace(tmp, path)
            _rmtree(old)
        else:
            os.replace(tmp, path)
    except BaseException:
        _rmtree(tmp)
        raise


def umask() -> int:
    """This process's umask, read without changing it (``os.umask`` can only read by setting it, which a thread beside
    this one would see)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def shared_modes(root: Path) -> None:
    """The modes a folder and its files would have had if made directly (0755 and 0644 under umask 022), in place of
    a temporary folder's 0700 and whatever 0600 files its writers left: a bundle or a dataset is for others to read."""
    mask = umask()
    os.chmod(root, 0o777 & ~mask)
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            os.chmod(Path(folder, name), 0o777 & ~mask)
        for name in files:
            os.chmod(Path(folder, name), 0o666 & ~mask)


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
