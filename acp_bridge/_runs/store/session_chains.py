"""A session as a chain of runs: which run a new turn follows, and which session it continues.

Each run of a session follows the one before it (``follows``); a named session (``run
--session NAME``) also records its name on every run. A new turn follows the chain's latest
run, and waits while that run is still queued or running (:mod:`acp_bridge._runs.store.lanes`), so
two turns of one session never run at once.

The caller looks the latest run up first (to check it and to tell the user), and the insert
decides again inside its transaction (:func:`session_tail`, from
:meth:`acp_bridge._runs.store.run_store.Store.create`): two processes that looked at the same
moment must not both follow one run, or the session would fork into two agents.

Standard library only (every function takes the store's SQLite connection): the store, the
light readers and the queued supervisor use it.
"""

from __future__ import annotations

import sqlite3
import time

from acp_bridge._runs.store.run_records import LIST_COLUMNS, RunRecord, row_to_run
from acp_bridge.errors import ConfigError


def chain_tail(db: sqlite3.Connection, run_id: str) -> str:
    """The latest run of the chain of follow-ups from ``run_id`` on (``run_id`` itself when
    nothing follows it): the run a new follow-up of ``run_id`` follows. A run follows only
    older runs, so this ends."""
    while True:
        row = db.execute(
            "SELECT id FROM runs WHERE follows = ? ORDER BY seq DESC LIMIT 1", (run_id,)
        ).fetchone()
        if row is None:
            return run_id
        run_id = str(row[0])


def named_tail(db: sqlite3.Connection, name: str, *, active: bool = False) -> RunRecord | None:
    """The latest run of the session called ``name`` (only a queued or running one when
    ``active``), or None."""
    only_active = " AND status IN ('queued', 'running')" if active else ""
    row = db.execute(
        f"SELECT {LIST_COLUMNS} FROM runs WHERE session_name = ?{only_active}"
        " ORDER BY seq DESC LIMIT 1",
        (name,),
    ).fetchone()
    return None if row is None else row_to_run(row)


def _same_agent(name: str, head: RunRecord, agent: str | None) -> None:
    """A session goes on with the agent that opened it (another agent cannot resume it)."""
    if head.agent != agent:
        raise ConfigError(
            f"session {name!r} belongs to agent {head.agent!r} (its latest run: {head.id}); "
            f"a session goes on with the agent that opened it: use another name for {agent!r}"
        )


def follows_for_name(
    db: sqlite3.Connection, name: str, *, entry: str, agent: str | None, resume: str | None
) -> str | None:
    """The run a new run of session ``name`` follows, as its caller sees it now (None: it
    opens the session). Raises :class:`~acp_bridge.ConfigError` for a run that cannot be
    a turn of that session."""
    if entry != "acp_spawn":
        raise ConfigError(f"session: only acp_spawn runs have an ACP session, not {entry}")
    if resume is not None:
        raise ConfigError("session and resume both say which session to continue: give one")
    head = named_tail(db, name)
    if head is None:
        return None
    _same_agent(name, head, agent)
    if head.finished and session_of(db, head.id) is None:
        return None  # no run of the name ever opened a session: this one opens it
    return head.id


def session_tail(
    db: sqlite3.Connection, follows: str | None, name: str | None, agent: str | None
) -> str | None:
    """What a new run follows, decided inside its insert: the latest run of the chain its
    caller looked up (``follows``) now. A first run of a name (``follows`` None) that
    another process opened meanwhile goes on after that run, with the same agent."""
    if follows is not None:
        if db.execute("SELECT 1 FROM runs WHERE id = ?", (follows,)).fetchone() is None:
            raise ConfigError(f"run {follows} was deleted meanwhile (acp-bridge prune)")
        return chain_tail(db, follows)
    if name is None:
        return None
    head = named_tail(db, name, active=True)
    if head is None:
        return None
    _same_agent(name, head, agent)
    return chain_tail(db, head.id)


def session_of(db: sqlite3.Connection, run_id: str) -> str | None:
    """The ACP session id ``run_id`` continues: its own, else (a follow-up that failed before
    its session opened) that of the run it follows, and so on back."""
    current: str | None = run_id
    while current is not None:
        row = db.execute("SELECT session_id, follows FROM runs WHERE id = ?", (current,))
        found = row.fetchone()
        if found is None:
            return None
        if found[0]:
            return str(found[0])
        current = found[1]
    return None


def session_to_continue(db: sqlite3.Connection, run_id: str) -> str:
    """The ACP session a follow-up of ``run_id`` continues; raises
    :class:`~acp_bridge.ConfigError` when none was ever opened."""
    session_id = session_of(db, run_id)
    if session_id is None:
        raise ConfigError(
            f"run {run_id} ended before an ACP session was opened: there is no session to continue"
        )
    return session_id


def chain_ids(db: sqlite3.Connection, run_id: str) -> list[str]:
    """``run_id`` and the runs it follows, back to the session's first: newest first."""
    ids: list[str] = []
    current: str | None = run_id
    while current is not None and current not in ids:
        ids.append(current)
        row = db.execute("SELECT follows FROM runs WHERE id = ?", (current,)).fetchone()
        current = None if row is None else row[0]
    return ids


def in_use(db: sqlite3.Connection) -> set[str]:
    """Ended runs a prune must keep: those whose agent is held now, and for each queued or
    running follow-up, the runs back from the one it follows to the first that recorded the
    session it continues (the follow-up's supervisor looks it up there when it starts)."""
    kept = {run_id for (run_id,) in db.execute(
        "SELECT id FROM runs WHERE held_until > ?", (time.time(),)
    )}  # fmt: skip
    waiting = db.execute(
        "SELECT follows FROM runs WHERE status IN ('queued', 'running') AND follows IS NOT NULL"
    ).fetchall()
    for (current,) in waiting:
        while current is not None and current not in kept:
            kept.add(current)
            row = db.execute("SELECT session_id, follows FROM runs WHERE id = ?", (current,))
            found = row.fetchone()
            current = None if found is None or found[0] else found[1]
    return kept
