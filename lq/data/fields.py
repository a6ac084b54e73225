"""Typed field access on parsed JSON, raising :class:`DataFormatError` that names file, record and field."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from lq.data.errors import DataFormatError

_MISSING: Any = object()

_TYPE_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
    list: "a list",
    dict: "an object",
}


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


class Fields:
    """A JSON object read field by field, with errors that say where.

    ``Fields(obj, path, record)`` checks that ``obj`` is an object; each accessor then checks
    presence and type of one key.
    """

    def __init__(self, obj: Any, path: str | Path | None, record: str | int | None, what: str = "record"):
        if not isinstance(obj, dict):
            raise DataFormatError(
                path,
                f"expected {what} to be a JSON object, found {_describe(obj)}",
                record=record,
                fix=f"make each {what} a JSON object {{...}}",
            )
        self.obj = obj
        self.path = path
        self.record = record

    def error(self, field: str, problem: str, fix: str) -> DataFormatError:
        return DataFormatError(self.path, problem, record=self.record, field=field, fix=fix)

    def _raw(self, key: str, default: Any) -> Any:
        if key in self.obj:
            return self.obj[key]
        if default is _MISSING:
            raise self.error(key, "missing required field", f'add "{key}" to this record')
        return default

    def _typed(self, key: str, types: tuple[type, ...], default: Any, nullable: bool = False) -> Any:
        value = self._raw(key, default)
        if key not in self.obj:
            return value
        if value is None and nullable:
            return None
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        if not ok:
            expected = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in types)
            raise self.error(key, f"expected {expected}, found {_describe(value)}", f'set "{key}" to {expected}')
        return value

    def str(self, key: str, default: Any = _MISSING, *, nonempty: bool = False, nullable: bool = False) -> str:
        value = self._typed(key, (str,), default, nullable=nullable)
        if nonempty and isinstance(value, str) and not value.strip():
            raise self.error(key, "is empty", f'give "{key}" a non-empty value')
        return value

    def int(self, key: str, default: Any = _MISSING) -> int:
        return self._typed(key, (int,), default)

    def flag(self, key: str, default: Any = _MISSING) -> bool:
        """A boolean affordance; LIGHT also writes these as 0.0/1.0 numbers."""
        value = self._typed(key, (bool, int, float), default, nullable=True)
        if isinstance(value, float) and not math.isfinite(value):
            raise self.error(key, f"expected true/false or a number, found {value}", f'set "{key}" to true or false')
        return bool(value)

    def id(self, key: str, default: Any = _MISSING) -> str | int:
        """An identifier: a string or an integer (null counts as absent)."""
        value = self._typed(key, (str, int), default, nullable=True)
        if value is None and default is _MISSING:
            raise self.error(key, "is null", f'give "{key}" a string or an integer')
        return value

    def list(self, key: str, default: Any = _MISSING) -> list:
        return self._typed(key, (list,), default)

    def dict(self, key: str, default: Any = _MISSING) -> dict:
        return self._typed(key, (dict,), default)

    def str_list(self, key: str, default: Any = _MISSING, *, nonempty: bool = False) -> list[str]:
        value = self.list(key, default)
        if value is None:
            return value
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise self.error(
                    f"{key}[{i}]",
                    f"expected a string, found {_describe(item)}",
                    f'make every entry of "{key}" a string',
                )
        if nonempty and not value:
            raise self.error(key, "is an empty list", f'give "{key}" at least one entry')
        return value

    def extra(self, known: set[str] | frozenset[str]) -> dict[str, Any]:
        """Fields this format does not model, kept so that a write gives back what was read."""
        return {k: v for k, v in self.obj.items() if k not in known}
