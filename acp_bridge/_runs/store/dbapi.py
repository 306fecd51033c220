"""SQLite errors as library errors: the one place where ``sqlite3.Error`` (and an unusable
store folder) becomes :class:`~acp_bridge.errors.RunStoreError`.

The run store's connection is made with :class:`Connection` as its factory, and its cursors
with :class:`Cursor`, so every statement, every row fetched and every commit raises our
error (naming the store's file) instead of a bare ``sqlite3.OperationalError``: a full disk,
a lock held past the busy timeout, a damaged file. Callers of the runs API then see only
the ``BridgeError`` tree (the CLI prints it; the entries' reporter logs it and carries on).

The error class is imported when raised: :mod:`acp_bridge.errors` costs a queued
supervisor (standard library only, see :mod:`~acp_bridge._runs.supervisor.main`) a tenth of its
start-up.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def store_error(where: str | Path, problem: object) -> Exception:
    """A :class:`~acp_bridge.errors.RunStoreError` about the store at ``where``."""
    from acp_bridge.errors import RunStoreError

    return RunStoreError(f"run store {where}: {problem}")


@contextmanager
def translated(where: str | Path) -> Iterator[None]:
    """Raise :class:`~acp_bridge.errors.RunStoreError` for any ``sqlite3.Error`` inside."""
    try:
        yield
    except sqlite3.Error as exc:
        raise store_error(where, f"{type(exc).__name__}: {exc}") from exc


class Cursor(sqlite3.Cursor):
    where = ""

    def __next__(self) -> Any:
        try:  # not `with translated(...)`: a context manager per row doubles a listing's cost
            return super().__next__()
        except sqlite3.Error as exc:
            raise store_error(self.where, f"{type(exc).__name__}: {exc}") from exc

    def fetchone(self) -> Any:
        with translated(self.where):
            return super().fetchone()

    def fetchall(self) -> list[Any]:
        with translated(self.where):
            return super().fetchall()


class Connection(sqlite3.Connection):
    """A connection whose statements raise :class:`RunStoreError`."""

    where = ""

    def cursor(self, factory: Any = None) -> Cursor:  # type: ignore[override]
        cursor = super().cursor(factory or Cursor)
        cursor.where = self.where
        return cursor

    def execute(self, sql: str, parameters: Any = (), /) -> Cursor:
        with translated(self.where):
            return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Cursor:
        with translated(self.where):
            return self.cursor().executemany(sql, parameters)


def connect(path: Path, *, timeout: float, any_thread: bool = False) -> Connection:
    """Open the SQLite file at ``path`` in autocommit mode (transactions are explicit).
    ``any_thread``: the connection may be used from several threads (one at a time)."""
    with translated(path):
        db = sqlite3.connect(
            path,
            timeout=timeout,
            isolation_level=None,
            factory=Connection,
            check_same_thread=not any_thread,
        )
    db.where = str(path)
    return db
