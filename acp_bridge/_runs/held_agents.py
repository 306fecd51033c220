"""An agent held between turns: the store side and the holding supervisor's wait.

After a detached ``acp_spawn`` turn that left its session sound, when the profile keeps its
agent (``timeouts.idle`` above 0), the supervisor commits the run's envelope and, in the same
transaction, marks the run held until the idle time ends (``lanes.finish``); the waiter of
the run learns it ended as usual. A held run keeps its lane slot (``max_concurrent`` bounds
live agent processes), and a queued follow-up of it is reserved for the supervisor holding
its agent. Then that supervisor waits, on the held run's wakeup, for a follow-up to claim
(:func:`wait_for_follow_up`): whoever queues a follow-up of the run wakes it, so does
``acp-bridge stop`` (which ends the hold, :func:`end_hold`). A claimed follow-up becomes the
next turn of the same live session; otherwise — the idle time over, the agent gone, the
hold ended, the supervisor asked to stop — the hold is released and the runs the slot lets
start are woken. Every wait here is bounded by the idle time; a hold past its time counts
for nothing; the hold of a supervisor that died is released by the next look at the store
(:func:`held_by_dead_supervisors`, by ``liveness``: any look at such a run, and ``reap``;
what it started is ended too).

A follow-up queued just as the hold ends is never stranded: claiming and releasing are each
one transaction, a follow-up can only be claimed while the hold stands, and once it is
released the follow-up is a lane head like any other, started by the supervisor it was
handed to, which resumes or loads the session.

The store side is standard library only (``liveness`` and the light readers use it); the
wait imports anyio's helpers when a supervisor calls it.
"""

from __future__ import annotations

import json
import time
from functools import partial
from typing import TYPE_CHECKING, Any

from acp_bridge._os.process import proc
from acp_bridge._os.process.proc import Identity
from acp_bridge._runs.store import lanes
from acp_bridge._runs.store.run_records import LIST_COLUMNS, RunRecord, row_to_run
from acp_bridge._runs.store.run_store import Store
from acp_bridge._runs.wakeups import wake

if TYPE_CHECKING:
    import anyio

    from acp_bridge._entries.acp_spawn.live_turns import Held
    from acp_bridge._runs.wakeups import Wakeup


def holding(run: RunRecord, now: float | None = None) -> bool:
    """Whether ``run``'s supervisor holds its agent now (alive, within its idle time)."""
    now = time.time() if now is None else now
    if run.held_until is None or run.held_until <= now or run.supervisor is None:
        return False
    return proc.alive(run.supervisor)


def hold(store: Store, run_id: str, me: Identity, until: float | None) -> bool:
    """Hold (``until``: Unix time) or release (None) the agent of ``run_id``, which this
    process ran. Whether it was set (the run is still ours)."""
    with store.write() as db:
        changed = db.execute(
            "UPDATE runs SET held_until = ? WHERE id = ? AND supervisor_pid = ?"
            " AND supervisor_start = ? AND supervisor_boot = ?",
            (until, run_id, me.pid, me.start, me.boot),
        ).rowcount
    return bool(changed)


def holds(store: Store, run_id: str, me: Identity) -> bool:
    """Whether this process's hold of ``run_id``'s agent still stands (not let go, not over)."""
    row = store.db.execute(
        "SELECT 1 FROM runs WHERE id = ? AND held_until > ? AND supervisor_pid = ?"
        " AND supervisor_start = ? AND supervisor_boot = ?",
        (run_id, time.time(), me.pid, me.start, me.boot),
    ).fetchone()
    return row is not None


def end_hold(store: Store, run_id: str) -> bool:
    """End the hold of ``run_id``'s agent now (``acp-bridge stop`` on a held run); whether
    it was held. The caller wakes the run's waiters: the supervisor holding the agent
    closes it and releases the slot."""
    now = time.time()
    with store.write() as db:
        changed = db.execute(
            "UPDATE runs SET held_until = ? WHERE id = ? AND held_until > ?", (now, run_id, now)
        ).rowcount
    return bool(changed)


class OtherSettings(Exception):
    """The oldest follow-up asks for other session settings than the held agent has."""


def claim_follow_up(store: Store, run_id: str, me: Identity) -> str | None:
    """In the supervisor holding ``run_id``'s agent: take its oldest queued follow-up (not
    asked to stop), moving the hold's lane slot to it. Its id, or None (then the hold stays). Raises
    :class:`OtherSettings` (nothing taken) for a follow-up with other session settings (a
    ``run --session NAME`` with another mode, say): the held agent cannot serve it as
    asked; once the hold is released it starts on its own, resuming the session."""
    with store.write() as db:
        row = db.execute(
            "SELECT id, spec FROM runs WHERE follows = ? AND status = 'queued'"
            " AND stop_requested IS NULL ORDER BY seq LIMIT 1",
            (run_id,),
        ).fetchone()
        if row is not None:
            held = db.execute("SELECT spec FROM runs WHERE id = ?", (run_id,)).fetchone()
            # Only the holding supervisor claims: it has the options models loaded already.
            from acp_bridge._entries.entry_table import session_settings as settings

            if held is not None and settings(_spec(row[1])) != settings(_spec(held[0])):
                raise OtherSettings(row[0])
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


def held_by_dead_supervisors(store: Store) -> list[RunRecord]:
    """The held runs whose supervisors died (their holds are released by
    ``liveness.release_hold_of_dead_supervisor``: the slots and reserved follow-ups go
    free)."""
    now = time.time()
    rows = store.db.execute(
        f"SELECT {LIST_COLUMNS} FROM runs WHERE held_until > ?", (now,)
    ).fetchall()
    runs = map(row_to_run, rows)
    return [run for run in runs if run.supervisor is not None and not holding(run, now)]


def _spec(text: str | None) -> dict[str, Any] | None:
    try:
        found = json.loads(text) if text else None
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


LOOK = 1.0
"""Seconds between looks for a follow-up when no wakeup came (a missed one)."""


async def wait_for_follow_up(
    store: Store, me: Identity, run_id: str, wakeup: Wakeup, held: Held, stopped: anyio.Event
) -> str | None:
    """The follow-up of ``run_id`` this process claimed while holding its agent, or None
    when the hold ended first (then it is released here). ``wakeup`` is woken for ``run_id``
    and was listening before the hold was committed, so no wake-up is missed."""
    import anyio  # the supervisor's heavy half has it already; the store side never needs it

    from acp_bridge._os.race import race

    while True:
        # Whether the hold stands first: a follow-up that came as the agent went away is
        # not handed to a dead agent (it would fail); released, it resumes on its own.
        left = held.until - anyio.current_time()
        if left <= 0 or held.gone.is_set() or stopped.is_set():
            break
        try:
            claimed = claim_follow_up(store, run_id, me)  # only while the hold stands
        except OtherSettings:
            break  # released below: that follow-up resumes the session as it asks
        if claimed is not None:
            wake(store, [claimed])  # its own light supervisor sees it taken, and exits
            return claimed
        if not holds(store, run_id, me):  # let go (stop), or over by the wall clock
            break
        await race(partial(wakeup.wait, min(left, LOOK)), held.gone.wait, stopped.wait)
    release(store, run_id, me)
    return None


def release(store: Store, run_id: str, me: Identity) -> None:
    """End this process's hold of ``run_id``'s agent; wake the runs its slot lets start."""
    if hold(store, run_id, me, None):
        wake(store, lanes.heads(store))
