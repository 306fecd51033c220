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
time (``timeouts.idle``; the supervisor's side is :mod:`.holder`). A held run keeps its lane
slot (``max_concurrent`` bounds live agent processes), and a queued follow-up of it is
reserved for its holder. The holder releases the hold when it closes the agent; a hold past
its time counts for nothing; ``acp-bridge stop`` on a held run ends the hold now
(:func:`let_go`); a holder that died is released by the next look at the store
(:func:`dead_holders`, by ``liveness``: any look at such a run, and ``reap``; what it
started is ended too).

A session is a chain of runs, each following the one before: a new follow-up follows the
chain's latest run (:func:`conversation_head`), and waits while that run is still queued or
running (:mod:`.lanes`), so two turns of one session never run at once.

Named sessions: runs started with ``run --session NAME`` record the name, and the next run
of that name follows the latest one (:func:`session_head`); follow-ups keep the name.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from acp_bridge._runs import chain, procs
from acp_bridge._runs.procs import Identity
from acp_bridge._runs.records import LIST_COLUMNS, RunRecord, row_to_run
from acp_bridge._runs.store import Store

SETTINGS = ("agent", "cwd", "observe_profile", "mode", "model", "config_options",
            "system_prompt", "unstable", "isolation")  # fmt: skip
"""What a session is set up with, from a run's request: a follow-up by ``send`` inherits
them; a held agent serves only follow-ups that ask for the same."""


def session_head(store: Store, name: str) -> RunRecord | None:
    """The latest run of the named session (the one a new run of that name follows)."""
    row = store.db.execute(
        f"SELECT {LIST_COLUMNS} FROM runs WHERE session_name = ? ORDER BY seq DESC LIMIT 1",
        (name,),
    ).fetchone()
    return None if row is None else row_to_run(row)


def conversation_head(store: Store, run_id: str) -> str:
    """The latest run of the session ``run_id`` belongs to, from ``run_id`` on: the one a new
    follow-up of ``run_id`` follows (``run_id`` itself when nothing follows it yet). Looked up
    again when the follow-up is inserted (:mod:`.chain`): another may have come first."""
    return chain.chain_tail(store.db, run_id)


def session_of(store: Store, run_id: str) -> str | None:
    """The ACP session id ``run_id`` continues: its own, else (a follow-up that failed before
    its session opened) that of the run it follows, and so on back."""
    current: str | None = run_id
    while current is not None:
        row = store.db.execute(
            "SELECT session_id, follows FROM runs WHERE id = ?", (current,)
        ).fetchone()
        if row is None:
            return None
        if row[0]:
            return str(row[0])
        current = row[1]
    return None


def chain_ids(store: Store, run_id: str) -> list[str]:
    """``run_id`` and the runs it follows, back to the session's first: newest first."""
    ids: list[str] = []
    current: str | None = run_id
    while current is not None and current not in ids:
        ids.append(current)
        row = store.db.execute("SELECT follows FROM runs WHERE id = ?", (current,)).fetchone()
        current = None if row is None else row[0]
    return ids


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


def holds(store: Store, run_id: str, me: Identity) -> bool:
    """Whether this process's hold of ``run_id``'s agent still stands (not let go, not over)."""
    row = store.db.execute(
        "SELECT 1 FROM runs WHERE id = ? AND held_until > ? AND supervisor_pid = ?"
        " AND supervisor_start = ? AND supervisor_boot = ?",
        (run_id, time.time(), me.pid, me.start, me.boot),
    ).fetchone()
    return row is not None


def let_go(store: Store, run_id: str) -> bool:
    """End the hold of ``run_id``'s agent now (``acp-bridge stop`` on a held run); whether
    it was held. The caller rings the run's bells: its holder wakes, closes the agent and
    releases the slot."""
    now = time.time()
    with store.write() as db:
        changed = db.execute(
            "UPDATE runs SET held_until = ? WHERE id = ? AND held_until > ?", (now, run_id, now)
        ).rowcount
    return bool(changed)


def settings(request: Mapping[str, Any] | None) -> dict[str, Any]:
    """What of a stored request the agent's session is set up with (:data:`SETTINGS`)."""
    return {name: (request or {}).get(name) for name in SETTINGS}


class OtherSettings(Exception):
    """The oldest follow-up asks for other session settings than the held agent has."""


def claim_follow_up(store: Store, run_id: str, me: Identity) -> str | None:
    """In the holder of ``run_id``: take its oldest queued follow-up (not asked to stop),
    moving the hold's lane slot to it. Its id, or None (then the hold stays). Raises
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


def dead_holders(store: Store) -> list[RunRecord]:
    """The held runs whose supervisors died (their holds are released by
    ``liveness.release_dead_holder``: the slots and reserved follow-ups go free)."""
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
