"""The supervisor of a detached run, one process per run::

    python -m acp_bridge._runs.supervisor.main --db PATH RUN_ID

Started by :func:`acp_bridge._runs.supervisor.detach.launch` (detached, see there), it:

1. finds its run in the store (the starter writes the row right after starting it) and checks
   the row names this very process as the run's supervisor;
2. waits for a lane slot, light: standard library only (SQLite, a doorbell socket, ``poll``),
   ~11 MB and ~50 ms of CPU, because a queued run may wait behind many others;
3. once claimed, imports the entry code and carries the run (:mod:`.running`), commits the
   envelope, and carries on with the next run of the lane when it came from the same
   environment;
4. exits. What it prints goes to the run's log file, removed when empty.

Stop: a stop request in the store (rung on the doorbell) or SIGTERM/SIGINT. A queued run ends
``cancelled`` at once; a running one gets the graceful cancel of its entry. SIGHUP is ignored:
the caller's terminal going away is no reason to stop.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from acp_bridge._os import proc
from acp_bridge._os.proc import Identity
from acp_bridge._os.undumpable import make_undumpable
from acp_bridge._runs import lanes, liveness
from acp_bridge._runs.store.records import RunRecord
from acp_bridge._runs.store.store import Store
from acp_bridge._runs.wakeups import Wakeup, wake

if TYPE_CHECKING:
    import logging

ROW_WAIT = 5.0
"""Seconds to wait for the starter to record the run (it does so ~2 ms after starting us)."""
LOOK_FIRST, LOOK_MAX = 0.1, 2.0
"""Fallback looks while queued: after 0.1 s, doubling to at most every 2 s."""


def _log() -> logging.Logger:
    """The supervisor's logger; its stderr is the run's log file, never a terminal.
    Imported on first use: ``logging`` costs a queued supervisor ~13 ms of start-up."""
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    return logging.getLogger("acp_bridge.runs")


class _Stopped(Exception):
    """SIGTERM or SIGINT arrived while the run was queued."""


def _raise_stopped(signum: int, frame: FrameType | None) -> None:
    raise _Stopped(signal.Signals(signum).name)


_signalled: list[int] = []


def _note_signal(signum: int, frame: FrameType | None) -> None:
    _signalled.append(signum)  # picked up by the supervisor once its own receiver is in place


def _find_run(store: Store, run_id: str) -> RunRecord | None:
    deadline = time.monotonic() + ROW_WAIT
    delay = 0.005
    while (run := store.get(run_id)) is None and time.monotonic() < deadline:
        time.sleep(delay)  # only before the row exists: nothing to ring us yet
        delay = min(delay * 2, 0.2)
    return run


def _wait_for_slot(store: Store, run: RunRecord, me: Identity) -> lanes.Claim:
    """Claim ``run`` once its lane lets it start; ``gone`` if it was stopped or adopted."""
    look = LOOK_FIRST
    with Wakeup(store, [run.id]) as wakeup:
        while True:
            state = lanes.claim(store, run.id, me)
            if state != "waiting":
                if state == "claimed":
                    wake(store, lanes.heads(store))  # room may be left for the next in line
                return state
            if not wakeup.wait_sync(look):
                # Nobody rang: maybe a supervisor ahead of us was killed. Look for lost runs
                # (that frees their slots), then wait longer next time.
                liveness.reap(store)
                look = min(look * 2, LOOK_MAX)


def _end_unstarted(store: Store, run_id: str, me: Identity, why: str, stopped: bool) -> None:
    """Record ``run_id`` (still ours, its entry not carried) as ended: cancelled when
    ``stopped``, else failed with ``internal_error``."""
    # Imported here: pydantic, for the envelope; a run that ends so has time for it.
    from acp_bridge._runs.envelopes import ended
    from acp_bridge.errors import ErrorCode

    run = store.get(run_id)
    if run is None:
        return
    code = ErrorCode.CANCELLED if stopped else ErrorCode.INTERNAL_ERROR
    outcome = ended(run, why, code, stopped=stopped)
    with store.write() as db:
        written = store.finish(db, run_id, outcome, supervisor=me)
    if written:
        wake(store, [run_id, *lanes.heads(store)])


def supervise(store: Store, run_id: str) -> int:
    me = proc.own_identity()
    run = _find_run(store, run_id)
    if run is not None and run.supervisor != me and run.status != "queued":
        return 0  # taken by another supervisor already (adopted, or a holder's follow-up)
    if run is None or run.supervisor != me:
        _log().warning("%s: not this process's run to supervise; exiting", run_id)
        return 0
    signal.signal(signal.SIGTERM, _raise_stopped)
    signal.signal(signal.SIGINT, _raise_stopped)
    try:
        if _wait_for_slot(store, run, me) != "claimed":
            return 0
        # Claimed: from here the heavy half; a signal is now a graceful stop of the run.
        signal.signal(signal.SIGTERM, _note_signal)
        signal.signal(signal.SIGINT, _note_signal)
        import anyio

        from acp_bridge._runs.supervisor.detach import env_key
        from acp_bridge._runs.supervisor.running import Supervisor

        _log()  # the supervisor logs through it

        anyio.run(Supervisor(store, me, env_key(), lambda: bool(_signalled)).carry_all, run_id)
    except _Stopped as stop:
        _end_unstarted(store, run_id, me, f"stopped before it started (signal {stop})", True)
    except Exception as exc:  # e.g. a broken install: the entry code does not import
        _log().exception("%s: the supervisor failed", run_id)  # the log named in the envelope
        log = store.logs_dir / f"{run_id}.log"
        why = f"the run's supervisor failed: {type(exc).__name__}: {exc} (see {log})"
        _end_unstarted(store, run_id, me, why, False)
        return 1
    return 0


def _remove_if_empty(path: Path) -> None:
    with contextlib.suppress(OSError):
        if path.stat().st_size == 0:
            path.unlink()


USAGE = "usage: python -m acp_bridge._runs.supervisor.main --db PATH RUN_ID"


def main(argv: list[str] | None = None) -> int:
    make_undumpable()  # it holds the caller's whole environment: no agent may read it
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    # No argparse: it costs a queued supervisor 20 ms of start-up, for two fixed arguments.
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3 or args[0] != "--db":
        _log().error(USAGE)
        return 2
    store = Store(Path(args[1]))
    run_id = args[2]
    try:
        return supervise(store, run_id)
    finally:
        store.close()
        _remove_if_empty(store.logs_dir / f"{run_id}.log")


if __name__ == "__main__":
    sys.exit(main())
