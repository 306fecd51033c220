"""SQLite errors as library errors: the one place where ``sqlite3.Error`` (and an unusable
store folder) becomes :class:`~acp_bridge.errors.RunStoreError` — or, when the folder or
the disk is what fails (read-only, full, cannot be opened), a
:class:`~acp_bridge.errors.StateDirError` that says so.

The run store's connection is made with :class:`Connection` as its factory, and its cursors
with :class:`Cursor`, so every statement, every row fetched and every commit raises our
error (naming the store's file) instead of a bare ``sqlite3.OperationalError``: a full disk,
a lock held past the busy timeout, a damaged file. Callers of the runs API then see only
the ``BridgeError`` tree (the CLI prints it; the entries' reporter logs it and goes on).

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


# SQLite's own words for a store whose folder or disk cannot take it (the extended codes
# start with these: SQLITE_READONLY_DIRECTORY, SQLITE_CANTOPEN_ISDIR, …).
_FOLDER_PROBLEMS = {
    "SQLITE_CANTOPEN": "cannot be opened (a missing or read-only folder?)",
    "SQLITE_READONLY": "is read-only",
    "SQLITE_FULL": "cannot be written: the disk is full",
    "SQLITE_IOERR": "cannot be written or read (a full disk, a failing one?)",
}


def sqlite_error(where: str | Path, exc: sqlite3.Error) -> Exception:
    """The library error for ``exc``: a StateDirError (a config error naming the store) when
    the folder or disk is the problem, a RunStoreError otherwise."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    for code, why in _FOLDER_PROBLEMS.items():
        if name.startswith(code):
            from acp_bridge.errors import StateDirError

            return StateDirError(
                f"the run store {where} {why}: {exc} (set ACP_BRIDGE_RUNS_DB or XDG_STATE_HOME "
                "to a writable place)"
            )
    return store_error(where, f"{type(exc).__name__}: {exc}")


@contextmanager
def translated(where: str | Path) -> Iterator[None]:
    """Raise a library error (:func:`sqlite_error`) for any ``sqlite3.Error`` inside."""
    try:
        yield
    except sqlite3.Error as exc:
        raise sqlite_error(where, exc) from exc


class Cursor(sqlite3.Cursor):
    where = ""

    def __next__(self) -> Any:
        try:  # not `with translated(...)`: a context manager per row doubles a listing's cost
            return super().__next__()
        except sqlite3.Error as exc:
            raise sqlite_error(self.where, exc) from exc

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.Error as exc:
            raise sqlite_error(self.where, exc) from exc

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except sqlite3.Error as exc:
            raise sqlite_error(self.where, exc) from exc


class Connection(sqlite3.Connection):
    """A connection whose statements raise :class:`RunStoreError`."""

    where = ""

    def cursor(self, factory: Any = None) -> Cursor:  # type: ignore[override]
        cursor = super().cursor(factory or Cursor)
        cursor.where = self.where
        return cursor

    # try/except, not `with translated(...)`: a generator context manager is five Python
    # calls a statement, and a run's record takes a dozen statements.

    def execute(self, sql: str, parameters: Any = (), /) -> Cursor:
        try:
            return self.cursor().execute(sql, parameters)
        except sqlite3.Error as exc:
            raise sqlite_error(self.where, exc) from exc

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Cursor:
        try:
            return self.cursor().executemany(sql, parameters)
        except sqlite3.Error as exc:
            raise sqlite_error(self.where, exc) from exc


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
