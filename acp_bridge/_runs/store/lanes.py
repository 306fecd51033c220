"""Lanes: how many runs may run at once, and which queued run goes next.

A run's lane is its agent profile for ``acp_spawn`` (``agent:NAME``), else its entry
(``entry:bash``, ``entry:spawn``), unless the caller names one. Limits live in the store's
``limits`` table: a lane's ``max_concurrent`` (a profile's ``max_concurrent``) and the lane
``*`` for all runs together (``runs.max_concurrent``).

The rule, decided inside one ``BEGIN IMMEDIATE`` transaction so that every process agrees:
a queued run may start when no older queued run of its lane is waiting (FIFO), its lane runs
fewer than its limit, and fewer than the global limit run in all, with older lane heads served
first. Lanes without a limit, when there is no global limit either, start at once. Only
detached runs take part: a foreground call (its caller waits for the envelope) starts at
once and is not counted, so a host's own concurrent calls never queue behind a lane. A run
whose agent is held for a follow-up keeps its slot, and its queued follow-ups wait for the
supervisor holding it (:mod:`acp_bridge._runs.held_agents`); a follow-up of a run that is
still queued or running waits for that run to end (two turns of one session never run at
once).

Waiting for a slot: the supervisor a queued run was handed to (:mod:`.supervisors`) waits on
its wakeup (:mod:`acp_bridge._runs.wakeups`), and claims each of its runs as the rule lets it
start (:func:`claim_mine`). Whoever ends, claims or dequeues a run wakes the waiters of the
runs that may start now (:func:`heads`). A waiting supervisor also looks by itself after a
bounded backoff (0.1 s doubling to 2 s), for the one case nobody wakes it: a supervisor
killed outright.
That look runs the liveness check, which turns such runs ``lost`` and frees their slots.

Adoption: a supervisor that ends a run takes the next run that may start, provided that run
was started from the same environment (``env_key``), in the same transaction. Runs of one
environment are mostly handed to one supervisor already; adoption also serves the runs of
another supervisor of that environment (two started at the same moment), whose entry code
is not imported yet (about 0.3 s of CPU per interpreter).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping, Sequence

from acp_bridge._os.process.proc import Identity
from acp_bridge._runs.store.run_records import LIST_COLUMNS, Outcome, RunRecord, row_to_run
from acp_bridge._runs.store.run_store import Store

LOOK_FIRST, LOOK_MAX = 0.1, 2.0
"""Fallback looks of a supervisor with queued runs: after 0.1 s, doubling to at most 2 s."""
GLOBAL = "*"
"""The lane name of the global limit (``runs.max_concurrent``)."""


def lane_for(entry: str, agent: str | None) -> str:
    return f"agent:{agent}" if entry == "acp_spawn" and agent else f"entry:{entry}"


def admissible(
    queued: Sequence[RunRecord], running: Mapping[str, int], limits: Mapping[str, int]
) -> list[RunRecord]:
    """The queued runs (oldest first) that may start now, given how many run per lane."""
    total_limit = limits.get(GLOBAL)
    total = sum(running.values())
    counts = dict(running)
    seen_lanes: set[str] = set()
    chosen = []
    for run in queued:
        lane_limit = limits.get(run.lane)
        if lane_limit is None and total_limit is None:
            chosen.append(run)
            continue
        if run.lane in seen_lanes:  # an older run of this lane is still waiting: FIFO
            continue
        seen_lanes.add(run.lane)
        if lane_limit is not None and counts.get(run.lane, 0) >= lane_limit:
            continue
        if total_limit is not None and total >= total_limit:
            break  # nobody younger may take the global slot an older run waits for
        chosen.append(run)
        counts[run.lane] = counts.get(run.lane, 0) + 1
        total += 1
    return chosen


def _lane_runs(db: sqlite3.Connection) -> list[RunRecord]:
    """The detached runs that are queued or running, and the runs whose agent is held, in
    queue order. Two queries, each on its index (an ``OR`` of the two would scan every run
    the store keeps)."""
    runs = [
        row_to_run(row)
        for row in db.execute(
            f"SELECT {LIST_COLUMNS} FROM runs WHERE status IN ('queued', 'running')"
            " AND detached = 1 ORDER BY seq"
        )
    ]
    held = db.execute(f"SELECT {LIST_COLUMNS} FROM runs WHERE held_until > ?", (time.time(),))
    known = {run.id for run in runs}
    more = [run for run in map(row_to_run, held) if run.id not in known]
    return sorted([*runs, *more], key=lambda run: run.seq) if more else runs


def _admissible_now(db: sqlite3.Connection) -> list[RunRecord]:
    queued: list[RunRecord] = []
    running: dict[str, int] = {}
    held: set[str] = set()
    for run in _lane_runs(db):
        if run.status == "queued":
            queued.append(run)
        else:  # running, or ended with its agent held for a follow-up: it has a slot
            running[run.lane] = running.get(run.lane, 0) + 1
            if run.status != "running":
                held.add(run.id)
    # A follow-up of a held run is for the supervisor holding its agent to take (see
    # ``_runs/held_agents.py``), not a new start; a follow-up of a run not ended yet waits for
    # it (foreground runs too: not in the rows).
    busy = held | _active(db, {run.follows for run in queued if run.follows})
    waiting = [run for run in queued if run.follows not in busy]
    limits = dict(db.execute("SELECT lane, max_concurrent FROM limits"))
    return admissible(waiting, running, limits)


def _active(db: sqlite3.Connection, run_ids: set[str]) -> set[str]:
    """Which of ``run_ids`` are queued or running."""
    if not run_ids:
        return set()
    marks = ", ".join("?" * len(run_ids))
    rows = db.execute(
        f"SELECT id FROM runs WHERE id IN ({marks}) AND status IN ('queued', 'running')",
        list(run_ids),
    )
    return {run_id for (run_id,) in rows}


def heads(store: Store) -> list[str]:
    """Ids of the queued runs that may start now (whose supervisors should look again)."""
    return [run.id for run in _admissible_now(store.db)]


def claim_mine(store: Store, me: Identity) -> list[str]:
    """Start, in this supervisor, every run handed to it that the lanes let start now; their
    ids, oldest first (empty: none may start yet, or none is ours any more)."""
    # A read first: most looks find the lanes still full, and need not queue for the write
    # lock behind every other supervisor. A stale "no" is safe: whoever makes room wakes the
    # new heads after committing.
    if not any(run.supervisor == me for run in _admissible_now(store.db)):
        return []
    with store.write() as db:
        chosen = [run.id for run in _admissible_now(db) if run.supervisor == me]
        now = time.time()
        db.executemany(
            "UPDATE runs SET status = 'running', started_at = ? WHERE id = ?",
            [(now, run_id) for run_id in chosen],
        )
        return chosen


def finish(
    store: Store,
    run_id: str,
    outcome: Outcome,
    me: Identity,
    *,
    adopt_env: str | None,
    hold_until: float | None = None,
) -> tuple[bool, str | None]:
    """Commit how ``run_id`` ended (if this process still runs it) and, when ``adopt_env``
    is given, take the next run that may start from that environment — one transaction.
    ``hold_until`` (Unix time): its agent is kept for a follow-up until then, in the same
    transaction (so no follow-up can start elsewhere in between; see :mod:`.session_chains`).
    Returns (whether the outcome was written, the adopted run's id)."""
    with store.write() as db:
        if not store.finish(db, run_id, outcome, supervisor=me):
            return False, None
        if hold_until is not None:  # not when a stop came after its supervisor last looked
            db.execute(
                "UPDATE runs SET held_until = ? WHERE id = ? AND stop_requested IS NULL",
                (hold_until, run_id),
            )
        if adopt_env is None:
            return True, None
        for run in _admissible_now(db):
            if run.env_key != adopt_env or run.stop_requested is not None:
                continue
            db.execute(
                "UPDATE runs SET status = 'running', started_at = ?, supervisor_pid = ?,"
                " supervisor_start = ?, supervisor_boot = ? WHERE id = ? AND status = 'queued'",
                (time.time(), me.pid, me.start, me.boot, run.id),
            )
            return True, run.id
        return True, None
