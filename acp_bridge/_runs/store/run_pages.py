"""Runs a page at a time, filtered, newest first: what the web viewer lists (issue 35).

Keyset paging on ``seq``, the table's primary key: a page is "the newest ``limit`` runs
older than ``before`` that match", so SQLite walks the key downward from ``before`` and stops
after ``limit`` matches, whatever the store holds. An ``OFFSET`` would read and drop every
run in front of the page, and ``ps --all`` reads them all (10 000 runs: the benchmark
``benchmarks/ui_pages.py`` compares the two).

Two figures of an ended run live only in its envelope (how many files it changed, its batch
placement); they are read for the page's rows alone, from the envelope's JSON text.

And :func:`change_mark`, which tells a viewer that the list changed without reading it: a
run was created, one ended, or an active one moved (status, tokens, events). Each part
comes from an index (``seq``, ``runs_ended``, ``runs_active``), never a scan.
"""

import sqlite3
from typing import Any, NamedTuple

from acp_bridge._runs.store.run_records import LIST_COLUMNS, RunRecord, RunStatus, row_to_run

ACTIVE_FILTER = "active"
"""The status filter for queued and running runs together."""
MAX_PAGE = 500
"""Most runs one page holds (a larger ``limit`` is cut to it)."""

# The envelope may be stored as a BLOB (written in pieces: run_store.py); as text, SQLite's
# JSON functions read it as JSON (a BLOB would be taken for its binary JSON format).
_FILES = "json_array_length(CAST(envelope AS TEXT), '$.meta.files_changed')"
_BATCH = "json_extract(CAST(envelope AS TEXT), '$.meta.batch')"
_NODE = "json_extract(CAST(envelope AS TEXT), '$.meta.node')"


class ListedRun(NamedTuple):
    """One row of a page: the run, and what its envelope says about it."""

    run: RunRecord
    files_changed: int | None
    """How many files it changed (None: it has no envelope yet, or the entry does not say)."""
    batch: str | None
    """``meta.batch`` as JSON text (key, index, node, attempts) for a batch's task."""
    node: str | None


class RunFilter(NamedTuple):
    """What a page holds: a status (or :data:`ACTIVE_FILTER`), an agent, a group, and text
    found in the run's id, task or summary (ASCII letters in any case). Empty: no filter."""

    status: RunStatus | str = ""
    agent: str = ""
    group: str = ""
    text: str = ""


EVERY_RUN = RunFilter()


def _where(given: RunFilter, before: int | None) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    args: list[Any] = []
    if before is not None:
        clauses.append("seq < ?")
        args.append(before)
    if given.status == ACTIVE_FILTER:
        clauses.append("status IN ('queued', 'running')")
    elif given.status:
        clauses.append("status = ?")
        args.append(given.status)
    if given.agent:
        clauses.append("agent = ?")
        args.append(given.agent)
    if given.group:
        clauses.append("group_name = ?")
        args.append(given.group)
    if given.text:
        pattern = "%" + _escape_like(given.text) + "%"
        clauses.append(
            "(id LIKE ? ESCAPE '\\' OR task LIKE ? ESCAPE '\\' OR summary LIKE ? ESCAPE '\\')"
        )
        args += [pattern, pattern, pattern]
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


def _escape_like(text: str) -> str:
    """``text`` matched literally by LIKE: its own ``%``, ``_`` and ``\\`` escaped."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def run_page(
    db: sqlite3.Connection,
    given: RunFilter = EVERY_RUN,
    *,
    before: int | None = None,
    limit: int = 50,
) -> list[ListedRun]:
    """The newest ``limit`` runs (at most :data:`MAX_PAGE`) matching ``given`` whose ``seq``
    is below ``before`` (None: from the newest). The next page: ``before`` = the last row's
    ``run.seq``."""
    where, args = _where(given, before)
    bound = max(1, min(int(limit), MAX_PAGE))
    query = (
        f"SELECT {LIST_COLUMNS}, {_FILES}, {_BATCH}, {_NODE} FROM runs{where}"
        f" ORDER BY seq DESC LIMIT {bound}"
    )
    width = len(LIST_COLUMNS.split(","))
    return [
        ListedRun(row_to_run(row[:width]), row[width], row[width + 1], row[width + 2])
        for row in db.execute(query, args).fetchall()
    ]


def agents(db: sqlite3.Connection) -> list[str]:
    """The agents runs were recorded with, for a filter's choices."""
    rows = db.execute("SELECT DISTINCT agent FROM runs WHERE agent IS NOT NULL ORDER BY agent")
    return [str(agent) for (agent,) in rows]


def change_mark(db: sqlite3.Connection) -> tuple[Any, ...]:
    """A value that changes when the list of runs does: the newest run, the latest end, and
    each active run's status, tokens and events. Equal marks: nothing a page shows changed
    (but the running clock of an active run)."""
    db.execute("BEGIN")  # one snapshot for the three reads
    try:
        newest = db.execute("SELECT max(seq) FROM runs").fetchone()[0]
        ended = db.execute("SELECT max(ended_at) FROM runs WHERE ended_at IS NOT NULL")
        latest_end = ended.fetchone()[0]
        active = db.execute(
            "SELECT id, status, tokens, events_count FROM runs"
            " WHERE status IN ('queued', 'running') ORDER BY seq"
        ).fetchall()
    finally:
        db.execute("COMMIT")
    return (newest, latest_end, tuple(tuple(row) for row in active))
