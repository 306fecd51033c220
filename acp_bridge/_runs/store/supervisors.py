"""Accepting supervisors: which process runs a new detached run.

A detached run is run by a supervisor process (:mod:`acp_bridge._runs.supervisor.main`).
One supervisor runs several runs at once: every run started from its environment (the same
variables and working directory,
:func:`~acp_bridge._runs.supervisor.start_detached.env_key`) while it takes new ones. So a
fan-out of detached runs pays one interpreter start and one import of the entry code
(~0.3 s of CPU), not one per run. A supervisor that takes new runs is *accepting*, listed
in the store's ``accepting_supervisors`` table under its environment.

Handing a run over without ever stranding it:

- a starter looks for a live accepting supervisor of its environment (:func:`find`) and
  inserts the run naming that supervisor, in the insert's own transaction and only while
  the supervisor is still listed (:func:`accepting`); then it wakes the supervisor's wakeup
  (:func:`wakeup_key`). When there is none, it starts a new supervisor and lists it in the
  insert of the run it starts for (:func:`register`);
- a supervisor leaves the list in one transaction that finds nothing of its own queued,
  running or held (:func:`retire`), and only then exits; a supervisor asked to stop, or that
  has taken its share (``MAX_RUNS``), leaves the list at once (:func:`stop_accepting`) and
  ends what it has.

Both are ``BEGIN IMMEDIATE`` transactions, so one of them comes first: either the supervisor
sees the new run and runs it, or the starter finds the supervisor gone and starts another.
A supervisor that was killed stays listed until a starter finds its process gone (the row
is removed then); its runs are ``lost`` like any other run whose supervisor died
(:mod:`acp_bridge._runs.liveness`).

Standard library only: the queued supervisor uses it.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import AbstractContextManager
from typing import Protocol

from acp_bridge._os.process import proc
from acp_bridge._os.process.proc import Identity
from acp_bridge._runs.store.dbapi import Connection


class Store(Protocol):
    """What these functions use of :class:`~acp_bridge._runs.store.run_store.Store` (which
    calls :func:`accepting` and :func:`register` inside its own transactions)."""

    db: Connection

    def write(self) -> AbstractContextManager[sqlite3.Connection]: ...


IDLE = 2.0
"""Seconds a supervisor waits for new runs once it has none left (``runs.supervisor_idle``)."""

_ME = "pid = ? AND start = ? AND boot = ?"
_SUPERVISED_BY = "supervisor_pid = ? AND supervisor_start = ? AND supervisor_boot = ?"


def wakeup_key(who: Identity) -> str:
    """What an accepting supervisor's wakeup is recorded under (as if it were a run id): a
    starter that hands it a run wakes this."""
    return f"supervisor:{who.pid}:{who.start}:{who.boot}"


def find(store: Store, env_key: str) -> Identity | None:
    """A live supervisor taking runs of environment ``env_key`` (the newest), or None. Rows
    of supervisors whose process is gone are removed."""
    rows = store.db.execute(
        "SELECT pid, start, boot FROM accepting_supervisors WHERE env_key = ? ORDER BY start DESC",
        (env_key,),
    ).fetchall()
    dead = []
    for pid, start, boot in rows:
        who = Identity(pid, start, boot)
        if proc.alive(who):
            return who
        dead.append(who)
    if dead:
        with store.write() as db:
            db.executemany(f"DELETE FROM accepting_supervisors WHERE {_ME}", dead)
    return None


def accepting(db: sqlite3.Connection, who: Identity) -> bool:
    """Inside a write transaction: whether ``who`` still takes new runs."""
    found = db.execute(f"SELECT 1 FROM accepting_supervisors WHERE {_ME}", who).fetchone()
    return found is not None


def register(db: sqlite3.Connection, who: Identity, env_key: str) -> None:
    """Inside a write transaction: list ``who`` as accepting runs of environment ``env_key``."""
    db.execute(
        "INSERT OR REPLACE INTO accepting_supervisors (pid, start, boot, env_key)"
        " VALUES (?, ?, ?, ?)",
        (*who, env_key),
    )


def stop_accepting(store: Store, me: Identity) -> None:
    """Take no new runs from now on (the ones handed over already are still ours)."""
    with store.write() as db:
        db.execute(f"DELETE FROM accepting_supervisors WHERE {_ME}", me)


def retire(store: Store, me: Identity) -> bool:
    """Leave the list if nothing of ours is queued, running or held; whether we did (then no
    run can be handed to us any more, and we may exit)."""
    with store.write() as db:
        if _busy(db, me):
            return False
        db.execute(f"DELETE FROM accepting_supervisors WHERE {_ME}", me)
        return True


def _busy(db: sqlite3.Connection, me: Identity) -> bool:
    # Two queries, each on its partial index (runs_active, runs_held): no scan of ended runs.
    active = db.execute(
        f"SELECT 1 FROM runs WHERE status IN ('queued', 'running') AND {_SUPERVISED_BY} LIMIT 1",
        me,
    ).fetchone()
    if active is not None:
        return True
    held = db.execute(
        f"SELECT 1 FROM runs WHERE held_until > ? AND {_SUPERVISED_BY} LIMIT 1",
        (time.time(), *me),
    ).fetchone()
    return held is not None


def queued_for(db: sqlite3.Connection, me: Identity) -> list[str]:
    """Ids of the queued runs handed to ``me``, oldest first."""
    rows = db.execute(
        "SELECT id FROM runs WHERE status IN ('queued', 'running') AND status = 'queued'"
        f" AND {_SUPERVISED_BY} ORDER BY seq",
        me,
    )
    return [run_id for (run_id,) in rows]


def active_for(db: sqlite3.Connection, me: Identity) -> list[str]:
    """Ids of the detached runs queued or running in ``me``'s name, oldest first."""
    rows = db.execute(
        "SELECT id FROM runs WHERE status IN ('queued', 'running') AND detached = 1"
        f" AND {_SUPERVISED_BY} ORDER BY seq",
        me,
    )
    return [run_id for (run_id,) in rows]
