"""The run store: every run of every entry, in one SQLite database shared by many processes.

Where (``_os/fs/locations.py``): ``$ACP_BRIDGE_RUNS_DB``, else
``$XDG_STATE_HOME/acp-bridge/runs.db``, else ``~/.local/state/acp-bridge/runs.db`` (the
folder 0700, the file 0600: tasks, outputs and transcript paths are private). The sandbox
hides these files from agents, and the change measurement never reads them: a process that
holds the store open loses SQLite's locks when it closes any other descriptor of them.

How it stays safe with many processes at once:
- WAL journal: readers never block the writer nor each other (``ps`` while 50 supervisors
  write events);
- ``synchronous=NORMAL``: a commit survives any process crash; a power cut may lose the last
  commits, and a run rolled back to ``running`` is then found ``lost`` after the reboot (the
  boot id changed), so nothing stays ``running`` forever either way;
- every write is one short ``BEGIN IMMEDIATE`` transaction (take the write lock first, so two
  writers never deadlock upgrading read locks), with a busy timeout for the lock;
- a final status and its envelope are written in the same transaction, so nobody can see a
  run ended without its envelope; waiters are woken only after that commit.

Methods here are synchronous: each is a local SQLite call of well under a millisecond
(measured in ``benchmarks/runs.py``), cheaper than a thread hop. They raise
:class:`~acp_bridge.errors.RunStoreError` (see :mod:`.dbapi`), never ``sqlite3.Error``.
"""

from __future__ import annotations

import atexit
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import Any, Literal

from acp_bridge._os.fs.locations import RUN_LOGS, SQLITE_SUFFIXES, run_store_path
from acp_bridge._os.fs.private_files import new_private_file, private_dir, refuse_links
from acp_bridge._os.process.proc import Identity
from acp_bridge._records.json_pieces import json_pieces
from acp_bridge._runs.store import session_chains, supervisors
from acp_bridge._runs.store.dbapi import connect
from acp_bridge._runs.store.listing import write_listing
from acp_bridge._runs.store.migrations import migrate
from acp_bridge._runs.store.run_records import (
    DICT_COLUMNS,
    FULL_COLUMNS,
    LIST_COLUMNS,
    TABLE_COLUMNS,
    NewRun,
    Outcome,
    RunRecord,
    row_to_dict,
    row_to_run,
)

BUSY_TIMEOUT = 10.0
"""Seconds a writer waits for the write lock (transactions are short; this is contention)."""


def default_path(environ: Mapping[str, str] | None = None) -> Path:
    return run_store_path(environ)


class Store:
    """One connection to the run store (use it from the thread that opened it, unless
    ``any_thread``: then from any thread, one at a time)."""

    def __init__(self, path: str | Path | None = None, *, any_thread: bool = False) -> None:
        # Absolute: a supervisor changes directory to each run's caller's.
        self.path = (Path(path) if path is not None else default_path()).absolute()
        private_dir(self.path.parent)  # StateDirError, naming the folder, when it cannot be
        # SQLite opens the store and its companions by name, following links.
        refuse_links(*(self.path.with_name(self.path.name + s) for s in ("", *SQLITE_SUFFIXES)))
        if not self.path.exists():  # private from the first byte (SQLite would use 0644)
            os.close(new_private_file(self.path))
        self.db = connect(self.path, timeout=BUSY_TIMEOUT, any_thread=any_thread)
        try:
            self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = NORMAL")
            migrate(self.db, str(self.path))
        except BaseException:
            self.db.close()
            raise

    def close(self) -> None:
        self.db.close()

    @property
    def logs_dir(self) -> Path:
        """Where supervisors write what they print (normally nothing)."""
        return self.path.parent / RUN_LOGS

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction, the write lock taken up front."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # --- runs -------------------------------------------------------------------------

    def create(
        self,
        run: NewRun,
        supervisor: Identity,
        *,
        detached: bool = True,
        handover: Literal["accepting", "new"] | None = None,
        limits: Mapping[str, int | None] | None = None,
        group_budget: tuple[int | None, float | None] | None = None,
        settings: Mapping[str, str | None] | None = None,
    ) -> bool:
        """Record a new run with the lane limits, group budget and settings its caller
        configured, in one transaction: ``queued`` for its supervisor when ``detached``, else
        ``running`` in the caller's own process (``supervisor``). Whether it was recorded.

        ``handover`` (see :mod:`acp_bridge._runs.store.supervisors`): ``"accepting"`` hands the
        run to the live supervisor ``supervisor`` only while it still accepts runs (False:
        nothing written); ``"new"`` lists ``supervisor``, just started for this run, as
        accepting the runs of the run's environment.

        A run that continues a session (``follows``, ``session_name``) follows the session's
        latest run as of this transaction
        (:func:`~acp_bridge._runs.store.session_chains.session_tail`): the caller looked it up
        before, and another process may have queued a turn of the same session since."""
        now = time.time()
        with self.write() as db:
            if handover == "accepting" and not supervisors.accepting(db, supervisor):
                return False
            if handover == "new":
                supervisors.register(db, supervisor, run.env_key)
            for lane, max_concurrent in (limits or {}).items():
                _set_limit(db, lane, max_concurrent)
            if run.group is not None and group_budget is not None:
                _set_group(db, run.group, *group_budget)
            for key, value in (settings or {}).items():
                _set_setting(db, key, value)
            follows = session_chains.session_tail(db, run.follows, run.session_name, run.agent)
            db.execute(
                "INSERT INTO runs (id, entry, agent, task, cwd, caller_cwd, spec, config_path,"
                " status, lane, group_name, created_at, started_at, supervisor_pid,"
                " supervisor_start, supervisor_boot, env_key, max_tokens, max_cost, detached,"
                " follows, session_name, batch_id)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.id, run.entry, run.agent, run.task, run.cwd, run.caller_cwd,
                    json.dumps(run.request), run.config_path,
                    "queued" if detached else "running", run.lane, run.group, now,
                    None if detached else now, supervisor.pid, supervisor.start,
                    supervisor.boot, run.env_key, run.max_tokens, run.max_cost, int(detached),
                    follows, run.session_name, run.batch_id,
                ),
            )  # fmt: skip
        return True

    def get(self, run_id: str) -> RunRecord | None:
        row = self.db.execute(f"SELECT {FULL_COLUMNS} FROM runs WHERE id = ?", (run_id,))
        found = row.fetchone()
        return None if found is None else row_to_run(found)

    def runs(self, *, active_only: bool = False, limit: int | None = None) -> list[RunRecord]:
        """Runs, newest first (without spec and envelope)."""
        return [row_to_run(row) for row in self._list_rows(LIST_COLUMNS, active_only, limit)]

    def run_dicts(
        self, *, active_only: bool = False, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """:meth:`runs` as JSON data (``RunRecord.to_dict``), without making the records."""
        return [row_to_dict(row) for row in self._list_rows(DICT_COLUMNS, active_only, limit)]

    def table_rows(self, *, active_only: bool = False) -> list[Any]:
        """Runs, newest first, as rows of :data:`TABLE_COLUMNS` (``ps``'s table)."""
        return self._list_rows(TABLE_COLUMNS, active_only, None)

    def _list_rows(self, columns: str, active_only: bool, limit: int | None) -> list[Any]:
        where = "WHERE status IN ('queued', 'running')" if active_only else ""
        bound = "" if limit is None else f" LIMIT {int(limit)}"
        query = f"SELECT {columns} FROM runs {where} ORDER BY seq DESC{bound}"
        return self.db.execute(query).fetchall()  # one call: no Python step per row

    def active(self) -> list[RunRecord]:
        """Queued and running runs, oldest first."""
        query = f"SELECT {LIST_COLUMNS} FROM runs WHERE status IN ('queued', 'running')"
        return [row_to_run(row) for row in self.db.execute(query + " ORDER BY seq")]

    def stop_requested(self, run_id: str) -> bool:
        row = self.db.execute("SELECT stop_requested FROM runs WHERE id = ?", (run_id,)).fetchone()
        return row is not None and row[0] is not None

    def request_stop(self, run_id: str) -> None:
        with self.write() as db:
            db.execute(
                "UPDATE runs SET stop_requested = coalesce(stop_requested, ?)"
                " WHERE id = ? AND status IN ('queued', 'running')",
                (time.time(), run_id),
            )

    def finish(
        self,
        db: sqlite3.Connection,
        run_id: str,
        outcome: Outcome,
        *,
        supervisor: Identity | None = None,
        only_queued: bool = False,
    ) -> bool:
        """Inside a write transaction: the final status and envelope, if the run is still
        active (or still queued) and, when ``supervisor`` is given, still run by that very
        process. Whether it was written (a compare-and-set: two processes racing to end a run
        cannot both succeed)."""
        condition = "status = 'queued'" if only_queued else "status IN ('queued', 'running')"
        args: tuple[Any, ...] = ()
        if supervisor is not None:
            condition += " AND supervisor_pid = ? AND supervisor_start = ? AND supervisor_boot = ?"
            args = (supervisor.pid, supervisor.start, supervisor.boot)
        # A long answer is written as a BLOB in pieces (json.loads reads bytes too): one
        # json.dumps of it, then SQLite's own copy of that, were two more full copies.
        pieces = list(islice(json_pieces(outcome.envelope), 2))
        whole = len(pieces) == 1
        envelope: str | int = pieces[0] if whole else _utf8_size(outcome.envelope)
        changed = db.execute(
            f"UPDATE runs SET status = ?, envelope = {'?' if whole else 'zeroblob(?)'},"
            " summary = ?, error_code = ?, ended_at = ?,"
            " session_id = coalesce(?, session_id), transcript = coalesce(?, transcript),"
            " tokens = max(tokens, coalesce(?, 0)), cost = max(cost, coalesce(?, 0))"
            f" WHERE id = ? AND {condition}",
            (
                outcome.status, envelope, outcome.summary, outcome.error_code, time.time(),
                outcome.session_id, outcome.transcript, outcome.tokens, outcome.cost, run_id,
                *args,
            ),
        ).rowcount  # fmt: skip
        if changed:
            write_listing(db, run_id)
        if changed and not whole:
            (rowid,) = db.execute("SELECT rowid FROM runs WHERE id = ?", (run_id,)).fetchone()
            with db.blobopen("runs", "envelope", rowid) as blob:
                for piece in json_pieces(outcome.envelope):
                    blob.write(piece.encode())
        return bool(changed)

    # --- events -------------------------------------------------------------------------

    def add_events(self, run_id: str, events: Sequence[str], dropped: int, **progress: Any) -> None:
        """Append already-encoded events (and progress figures) in one transaction."""
        with self.write() as db:
            row = db.execute("SELECT events_count FROM runs WHERE id = ?", (run_id,)).fetchone()
            first = (row[0] if row else 0) + 1
            db.executemany(
                "INSERT INTO events (run_id, seq, event) VALUES (?, ?, ?)",
                [(run_id, first + i, event) for i, event in enumerate(events)],
            )
            db.execute(
                "UPDATE runs SET events_count = events_count + ?,"
                " events_dropped = events_dropped + ? WHERE id = ?",
                (len(events), dropped, run_id),
            )
            _progress(db, run_id, **progress)

    def events(self, run_id: str, after: int = 0, limit: int = 1000) -> list[tuple[int, str]]:
        """Encoded events with ``seq > after``, in order: (seq, JSON)."""
        rows = self.db.execute(
            "SELECT seq, event FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (run_id, after, limit),
        )
        return [(int(seq), str(event)) for seq, event in rows]

    # --- process groups -----------------------------------------------------------------

    def add_groups(self, run_id: str, leaders: Iterable[Identity]) -> None:
        with self.write() as db:
            db.executemany(
                "INSERT OR IGNORE INTO run_groups (run_id, pgid, leader_start, boot)"
                " VALUES (?, ?, ?, ?)",
                [(run_id, who.pid, who.start, who.boot) for who in leaders],
            )

    def groups(self, run_id: str) -> list[Identity]:
        rows = self.db.execute(
            "SELECT pgid, leader_start, boot FROM run_groups WHERE run_id = ?", (run_id,)
        )
        return [Identity(pgid, start, boot) for pgid, start, boot in rows]

    # --- lanes, groups, settings ------------------------------------------------------------

    def set_limit(self, lane: str, max_concurrent: int | None) -> None:
        """A lane's ``max_concurrent`` (``*``: all runs); None removes the limit."""
        with self.write() as db:
            _set_limit(db, lane, max_concurrent)

    def limits(self) -> dict[str, int]:
        return dict(self.db.execute("SELECT lane, max_concurrent FROM limits"))

    def set_group_budget(self, name: str, max_tokens: int | None, max_cost: float | None) -> None:
        with self.write() as db:
            _set_group(db, name, max_tokens, max_cost)

    def group_budget(self, name: str) -> tuple[int | None, float | None]:
        row = self.db.execute(
            "SELECT max_tokens, max_cost FROM groups WHERE name = ?", (name,)
        ).fetchone()
        return (None, None) if row is None else (row[0], row[1])

    def group_spent(self, name: str, *, besides: Iterable[str] = ()) -> tuple[int, float]:
        """Tokens and cost used so far by the runs of group ``name`` (but those ``besides``)."""
        left_out = list(besides) or [""]
        marks = ", ".join("?" * len(left_out))
        row = self.db.execute(
            "SELECT coalesce(sum(tokens), 0), coalesce(sum(cost), 0) FROM runs"
            f" WHERE group_name = ? AND id NOT IN ({marks})",
            (name, *left_out),
        ).fetchone()
        return int(row[0]), float(row[1])

    def setting(self, key: str, default: str | None = None) -> str | None:
        row = self.db.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return default if row is None else str(row[0])

    def set_setting(self, key: str, value: str | None) -> None:
        with self.write() as db:
            _set_setting(db, key, value)


def _utf8_size(envelope: dict[str, Any]) -> int:
    return sum(len(piece.encode()) for piece in json_pieces(envelope))


def _progress(
    db: sqlite3.Connection,
    run_id: str,
    session_id: str | None = None,
    tokens: int | None = None,
    cost: float | None = None,
) -> None:
    if session_id is None and tokens is None and cost is None:
        return
    db.execute(
        "UPDATE runs SET session_id = coalesce(?, session_id),"
        " tokens = max(tokens, coalesce(?, 0)), cost = max(cost, coalesce(?, 0)) WHERE id = ?",
        (session_id, tokens, cost, run_id),
    )


def _set_limit(db: sqlite3.Connection, lane: str, max_concurrent: int | None) -> None:
    if max_concurrent is None:
        db.execute("DELETE FROM limits WHERE lane = ?", (lane,))
    else:
        db.execute(
            "INSERT OR REPLACE INTO limits (lane, max_concurrent) VALUES (?, ?)",
            (lane, max_concurrent),
        )


def _set_group(
    db: sqlite3.Connection, name: str, max_tokens: int | None, max_cost: float | None
) -> None:
    db.execute(
        "INSERT OR REPLACE INTO groups (name, max_tokens, max_cost) VALUES (?, ?, ?)",
        (name, max_tokens, max_cost),
    )


def _set_setting(db: sqlite3.Connection, key: str, value: str | None) -> None:
    if value is None:
        db.execute("DELETE FROM settings WHERE key = ?", (key,))
    else:
        db.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", (key, value))


_local = threading.local()


def open_store(path: str | Path | None = None) -> Store:
    """The calling thread's connection to the store at ``path`` (default: :func:`default_path`),
    opened once and kept. A forked child opens its own."""
    resolved = Path(path) if path is not None else default_path()
    key = (os.getpid(), str(resolved.absolute()))
    cache: dict[tuple[int, str], Store] = _local.__dict__.setdefault("stores", {})
    store = cache.get(key)
    if store is None:
        store = cache[key] = Store(resolved)
    return store


def close_stores() -> None:
    """Close the calling thread's cached connections (tests; hosts that switch stores)."""
    cache: dict[tuple[int, str], Store] = _local.__dict__.get("stores", {})
    for store in cache.values():
        store.close()
    cache.clear()


# The main thread's connections close at exit (another thread's when it ends): the last one
# folds SQLite's log back, also in a process that skips the interpreter's teardown (the CLI).
atexit.register(close_stores)
