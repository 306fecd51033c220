"""Runs a page at a time, filtered, newest first: what the web viewer lists (issue 35).

Keyset paging on ``seq``, the table's primary key: a page is "the newest ``limit`` runs
older than ``before`` that match", so SQLite walks the key downward from ``before`` and stops
after ``limit`` matches, whatever the store holds. An ``OFFSET`` would read and drop every
run in front of the page, and ``ps --all`` reads them all (10 000 runs: the benchmark
``benchmarks/ui_pages.py`` compares the two).

Two figures of an ended run live only in its envelope (how many files it changed, its batch
placement); they are read for the page's rows alone, from the envelope's JSON text.

A batch's or a comparison's runs (issue 35) come from the ``runs_batch`` index on their
``batch_id``: its counts by status and node (:func:`batch_counts`), the tasks that failed or
were retried (:func:`batch_runs`), a comparison's decision (written by
:func:`record_comparison`, read by :func:`comparison`),
and :func:`batch_mark` for a live page. The node and the attempts of an ended task are read
from its envelope, for that batch's rows only.

And :func:`change_mark`, which tells a viewer that the list changed without reading it: a
run was created, one ended, or an active one moved (status, tokens, events). Each part
comes from an index (``seq``, ``runs_ended``, ``runs_active``), never a scan.
"""

import sqlite3
import time
from typing import Any, NamedTuple

from acp_bridge._runs.store.run_records import LIST_COLUMNS, RunRecord, RunStatus, row_to_run
from acp_bridge._runs.store.run_store import Store

ACTIVE_FILTER = "active"
"""The status filter for queued and running runs together."""
MAX_PAGE = 500
"""Most runs one page holds (a larger ``limit`` is cut to it)."""

# The envelope may be stored as a BLOB (written in pieces: run_store.py); as text, SQLite's
# JSON functions read it as JSON (a BLOB would be taken for its binary JSON format).
_FILES = "json_array_length(CAST(envelope AS TEXT), '$.meta.files_changed')"
_BATCH = "json_extract(CAST(envelope AS TEXT), '$.meta.batch')"
_NODE = "json_extract(CAST(envelope AS TEXT), '$.meta.node')"
_ATTEMPTS = "json_extract(CAST(envelope AS TEXT), '$.meta.batch.attempts')"
_ERROR = "json_extract(CAST(envelope AS TEXT), '$.error')"
_PROBLEMS = f"(status IN ('failed', 'cancelled', 'lost') OR {_ATTEMPTS} > 1)"


class ListedRun(NamedTuple):
    """One row of a page: the run, and what its envelope says about it."""

    run: RunRecord
    files_changed: int | None
    """How many files it changed (None: it has no envelope yet, or the entry does not say)."""
    batch: str | None
    """``meta.batch`` as JSON text (id, key, index, node, attempts) for a batch's task."""
    node: str | None
    batch_id: str | None = None
    """The batch (``batch_…``) or comparison (``cmp_…``) that made it."""
    error: str | None = None
    """The envelope's ``error`` (read for a batch's page only)."""


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
        f"SELECT {LIST_COLUMNS}, {_FILES}, {_BATCH}, {_NODE}, batch_id, NULL FROM runs{where}"
        f" ORDER BY seq DESC LIMIT {bound}"
    )
    return _listed(db.execute(query, args).fetchall())


def _listed(rows: list[Any]) -> list[ListedRun]:
    width = len(LIST_COLUMNS.split(","))
    return [ListedRun(row_to_run(row[:width]), *row[width:]) for row in rows]


def batch_runs(
    db: sqlite3.Connection, batch_id: str, *, problems_only: bool = False, limit: int = MAX_PAGE
) -> list[ListedRun]:
    """The runs of the batch or comparison ``batch_id`` in the order they began (at most
    ``limit``, up to :data:`MAX_PAGE`); ``problems_only``: those that did not end done, or
    ran more than once (a lost node's task retried elsewhere)."""
    bound = max(1, min(int(limit), MAX_PAGE))
    problems = f" AND {_PROBLEMS}" if problems_only else ""
    query = (
        f"SELECT {LIST_COLUMNS}, {_FILES}, {_BATCH}, {_NODE}, batch_id, {_ERROR} FROM runs"
        f" WHERE batch_id = ?{problems} ORDER BY seq LIMIT {bound}"
    )
    return _listed(db.execute(query, (batch_id,)).fetchall())


class BatchCounts(NamedTuple):
    """How the runs of one batch stand."""

    by_status: dict[str, int]
    by_node: dict[str, dict[str, int]]
    """Per node (``""``: not known yet, or the task never reached one), runs per status."""
    retried: int
    """Runs that took more than one attempt."""
    tokens: int
    cost: float

    @property
    def total(self) -> int:
        return sum(self.by_status.values())


def batch_counts(db: sqlite3.Connection, batch_id: str) -> BatchCounts:
    """The runs of ``batch_id`` counted by status and by node (one indexed pass)."""
    query = (
        f"SELECT status, {_NODE}, count(*), sum(coalesce({_ATTEMPTS}, 1) > 1), sum(tokens),"
        f" sum(cost) FROM runs WHERE batch_id = ? GROUP BY 1, 2"
    )
    counts = BatchCounts({}, {}, 0, 0, 0.0)
    by_status, by_node = counts.by_status, counts.by_node
    retried = tokens = 0
    cost = 0.0
    for status, node, count, more, used, spent in db.execute(query, (batch_id,)):
        by_status[status] = by_status.get(status, 0) + count
        per_node = by_node.setdefault(str(node or ""), {})
        per_node[status] = per_node.get(status, 0) + count
        retried += int(more or 0)
        tokens += int(used or 0)
        cost += float(spent or 0.0)
    return counts._replace(retried=retried, tokens=tokens, cost=cost)


def record_comparison(store: Store, comparison_id: str, result: str) -> None:
    """Keep what a comparison decided (``result``: compare's JSON document), for the
    viewer: its attempts are runs, its winner and why are in no run's envelope."""
    with store.write() as db:
        db.execute(
            "INSERT OR REPLACE INTO comparisons (id, created_at, result) VALUES (?, ?, ?)",
            (comparison_id, time.time(), result),
        )


def comparison(db: sqlite3.Connection, comparison_id: str) -> str | None:
    """What the comparison ``comparison_id`` decided (compare's JSON document), once it
    ended (None before, or when it was not recorded)."""
    row = db.execute("SELECT result FROM comparisons WHERE id = ?", (comparison_id,))
    found = row.fetchone()
    return None if found is None else str(found[0])


def batch_mark(db: sqlite3.Connection, batch_id: str) -> tuple[Any, ...]:
    """A value that changes when a batch's page does: its runs by status, their latest end,
    tokens and events, and a comparison's decision recorded."""
    db.execute("BEGIN")
    try:
        runs = db.execute(
            "SELECT status, count(*), max(ended_at), sum(tokens), sum(events_count) FROM runs"
            " WHERE batch_id = ? GROUP BY status ORDER BY status",
            (batch_id,),
        ).fetchall()
        decided = db.execute("SELECT count(*) FROM comparisons WHERE id = ?", (batch_id,))
        recorded = decided.fetchone()[0]
    finally:
        db.execute("COMMIT")
    return (tuple(tuple(row) for row in runs), recorded)


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
