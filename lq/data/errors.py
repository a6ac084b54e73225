"""The one error every loader in :mod:`lq.data` raises for bad input."""

from __future__ import annotations

from pathlib import Path


class DataFormatError(ValueError):
    """A data file is missing, unreadable or does not match its format.

    The message names the file, the record (an index, id or key inside the file), the field and
    what to do about it, so a user can open the file and fix the exact spot.
    """

    def __init__(
        self,
        path: str | Path | None,
        problem: str,
        *,
        record: str | int | None = None,
        field: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.path = str(path) if path is not None else "<memory>"
        self.record = record
        self.field = field
        self.problem = problem
        self.fix = fix
        where = self.path
        if record is not None:
            where += f", record {record}"
        if field is not None:
            where += f", field '{field}'"
        message = f"{where}: {problem}"
        if fix:
            message += f". Fix: {fix}"
        super().__init__(message)

    def within(self, prefix: str) -> DataFormatError:
        """The same error, its field named inside ``prefix`` (an inner record read on its own, e.g. ``acts[3]``)."""
        return DataFormatError(
            self.path, self.problem, record=self.record, field=f"{prefix}.{self.field}", fix=self.fix
        )
