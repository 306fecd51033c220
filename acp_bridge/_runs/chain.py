"""A session as a chain of runs (see :mod:`.followups`): which run a new turn follows.

Decided inside the transaction that inserts the new run (:meth:`.store.store.Store.create`): two
processes that looked up a session's latest run at the same moment must not both follow it,
or two turns of one session would run at once (in two agents) and the session would fork.
"""

from __future__ import annotations

import sqlite3
import time

from acp_bridge.errors import ConfigError


def chain_tail(db: sqlite3.Connection, run_id: str) -> str:
    """The latest run of the chain of follow-ups from ``run_id`` on (``run_id`` itself when
    nothing follows it). A run follows only older runs, so this ends."""
    while True:
        row = db.execute(
            "SELECT id FROM runs WHERE follows = ? ORDER BY seq DESC LIMIT 1", (run_id,)
        ).fetchone()
        if row is None:
            return run_id
        run_id = str(row[0])


def session_tail(
    db: sqlite3.Connection, follows: str | None, name: str | None, agent: str | None
) -> str | None:
    """What a new run follows, given what its caller looked up (``follows``) and the name of
    its session: the latest run of that chain now. A first run of a name (``follows`` None)
    that another process opened meanwhile goes on after that run, with the same agent."""
    if follows is not None:
        if db.execute("SELECT 1 FROM runs WHERE id = ?", (follows,)).fetchone() is None:
            raise ConfigError(f"run {follows} was deleted meanwhile (acp-bridge prune)")
        return chain_tail(db, follows)
    if name is None:
        return None
    row = db.execute(
        "SELECT id, agent FROM runs WHERE session_name = ? AND status IN ('queued', 'running')"
        " ORDER BY seq DESC LIMIT 1",
        (name,),
    ).fetchone()
    if row is None:
        return None
    if row[1] != agent:
        raise ConfigError(
            f"session {name!r} was just opened with agent {row[1]!r} (run {row[0]}); a "
            f"session goes on with the agent that opened it: use another name for {agent!r}"
        )
    return chain_tail(db, str(row[0]))


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
