"""Follow-up turns, the store side (DESIGN §10: ``acp-bridge send``, ``run --session``).

A follow-up is a run like any other — its own id, envelope, events, budget and lane — that
continues the ACP session of an earlier run (``follows``). How it reaches the agent:

1. the earlier run's supervisor still *holds* the agent (``held_until`` in the future, the
   supervisor alive): the holder takes the follow-up itself (:func:`claim_follow_up`) and
   prompts the same live session; the follow-up's own light supervisor finds the run
   claimed and exits, as with adoption (:mod:`.lanes`);
2. else the follow-up's own supervisor starts the agent and continues the session through
   ``session/resume`` or ``session/load``, when the agent advertises them;
3. else the follow-up fails with a clear refusal — never a silent fresh session.

Holding: after a detached turn, a supervisor may keep the agent for the profile's idle
time. A held run keeps its lane slot (``max_concurrent`` bounds live agent processes), and
a queued follow-up of it is reserved for its holder. The holder releases the hold when it
closes the agent; a hold past its time counts for nothing; a holder that died is released
by the next look at the store (:func:`release_dead_holders`, run by ``liveness.reap``).

Named sessions: runs started with ``run --session NAME`` record the name, and the next run
of that name follows the latest one (:func:`session_head`).

What is not here yet: the supervisor's side (keeping an ACP session open between turns,
resume/load) lands with the ACP session features; until then nothing sets a hold.
"""

from __future__ import annotations

import time

from acp_bridge._runs import procs
from acp_bridge._runs.procs import Identity
from acp_bridge._runs.records import LIST_COLUMNS, RunRecord, row_to_run
from acp_bridge._runs.store import Store


def session_head(store: Store, name: str) -> RunRecord | None:
    """The latest run of the named session (the one a new run of that name follows)."""
    row = store.db.execute(
        f"SELECT {LIST_COLUMNS} FROM runs WHERE session_name = ? ORDER BY seq DESC LIMIT 1",
        (name,),
    ).fetchone()
    return None if row is None else row_to_run(row)


def holding(run: RunRecord, now: float | None = None) -> bool:
    """Whether ``run``'s supervisor holds its agent now (alive, within its idle time)."""
    now = time.time() if now is None else now
    if run.held_until is None or run.held_until <= now or run.supervisor is None:
        return False
    return procs.alive(run.supervisor)


def hold(store: Store, run_id: str, me: Identity, until: float | None) -> bool:
    """Hold (``until``: Unix time) or release (None) the agent of ``run_id``, which this
    process carried. Whether it was set (the run is still ours)."""
    with store.write() as db:
        changed = db.execute(
            "UPDATE runs SET held_until = ? WHERE id = ? AND supervisor_pid = ?"
            " AND supervisor_start = ? AND supervisor_boot = ?",
            (until, run_id, me.pid, me.start, me.boot),
        ).rowcount
    return bool(changed)


def claim_follow_up(store: Store, run_id: str, me: Identity) -> str | None:
    """In the holder of ``run_id``: take its oldest queued follow-up (not asked to stop),
    moving the hold's lane slot to it. Its id, or None (then the hold stays)."""
    with store.write() as db:
        row = db.execute(
            "SELECT id FROM runs WHERE follows = ? AND status = 'queued'"
            " AND stop_requested IS NULL ORDER BY seq LIMIT 1",
            (run_id,),
        ).fetchone()
        held = db.execute(
            "SELECT 1 FROM runs WHERE id = ? AND held_until > ? AND supervisor_pid = ?"
            " AND supervisor_start = ? AND supervisor_boot = ?",
            (run_id, time.time(), me.pid, me.start, me.boot),
        ).fetchone()
        if row is None or held is None:
            return None
        db.execute("UPDATE runs SET held_until = NULL WHERE id = ?", (run_id,))
        db.execute(
            "UPDATE runs SET status = 'running', started_at = ?, supervisor_pid = ?,"
            " supervisor_start = ?, supervisor_boot = ? WHERE id = ?",
            (time.time(), me.pid, me.start, me.boot, row[0]),
        )
        return str(row[0])


def release_dead_holders(store: Store) -> list[str]:
    """Release the holds of supervisors that died (their lane slots and reserved follow-ups
    go free); the ids released. The caller rings the new lane heads."""
    now = time.time()
    rows = store.db.execute(
        f"SELECT {LIST_COLUMNS} FROM runs WHERE held_until > ?", (now,)
    ).fetchall()
    dead = [run for run in map(row_to_run, rows) if not holding(run, now)]
    released = []
    for run in dead:
        assert run.supervisor is not None  # holding() is False only by death here
        if hold(store, run.id, run.supervisor, None):
            released.append(run.id)
    return released
