"""The supervisor of detached runs: one process running every run of one environment::

    python -m acp_bridge._runs.supervisor.main --db PATH RUN_ID

Started by :func:`acp_bridge._runs.supervisor.start_detached.launch` (detached, see there) for run
``RUN_ID``, when no live supervisor of the caller's environment took it
(:mod:`acp_bridge._runs.store.supervisors`), it:

1. finds that run in the store (the starter writes the row, and lists this process as
   accepting the runs of its environment, right after starting it);
2. waits until the lanes let one of the runs handed to it start, light: standard library only
   (SQLite, a wakeup socket, ``poll``), ~11 MB and ~50 ms of CPU, because a queued run may
   wait behind many others; more runs of the same environment may be handed to it meanwhile;
3. once one is claimed, imports the entry code and runs each run handed to it as its lanes
   let it start, several at once (:mod:`.running`), committing each envelope as its run
   ends; it also takes the next run of a lane started from the same environment;
4. exits once it has had no run left for ``runs.supervisor_idle`` seconds (and leaves the
   list of accepting supervisors first, so nothing is handed to it on its way out). What it
   prints goes to the first run's log file, removed when empty.

Stop: a stop request in the store (sent to its wakeup) or SIGTERM/SIGINT. A queued run ends
``cancelled`` at once; a running one gets the graceful cancel of its entry; a signal stops
every run of the process. SIGHUP is ignored: the caller's terminal going away is no reason to
stop.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from acp_bridge._os.process import proc
from acp_bridge._os.process.proc import Identity
from acp_bridge._os.process.undumpable import make_undumpable
from acp_bridge._runs import liveness
from acp_bridge._runs.store import lanes, supervisors
from acp_bridge._runs.store.run_records import RunRecord
from acp_bridge._runs.store.run_store import Store
from acp_bridge._runs.wakeups import Wakeup, wake

if TYPE_CHECKING:
    import logging

ROW_WAIT = 5.0
"""Seconds to wait for the starter to record the run (it does so ~2 ms after starting us)."""


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
        time.sleep(delay)  # only before the row exists: nothing to wake us yet
        delay = min(delay * 2, 0.2)
    return run


def _wait_for_claims(store: Store, me: Identity) -> list[str]:
    """Claim the runs handed to us once the lanes let any of them start; [] when none is ours
    any more (stopped while queued, or adopted) and we left the accepting supervisors."""
    look = lanes.LOOK_FIRST
    watched: set[str] = set()
    with Wakeup(store, [supervisors.wakeup_key(me)]) as wakeup:  # woken as a run is handed over
        while True:
            queued = supervisors.queued_for(store.db, me)
            if new := [run_id for run_id in queued if run_id not in watched]:
                wakeup.watch(new)  # the lanes wake a run's own wakeups when it may start
                watched.update(new)
            if not queued:
                if supervisors.retire(store, me):
                    return []
            elif claimed := lanes.claim_mine(store, me):
                wake(store, lanes.heads(store))  # room may be left for the next in line
                return claimed
            if not wakeup.wait_sync(look):
                # Nobody woke us: maybe a supervisor ahead of us was killed. Look for lost runs
                # (that frees their slots), then wait longer next time.
                liveness.reap(store)
                look = min(look * 2, lanes.LOOK_MAX)


def supervise(store: Store, run_id: str) -> int:
    me = proc.own_identity()
    run = _find_run(store, run_id)
    if run is None:  # its starter failed before recording it: nothing was handed to us
        _log().warning("%s: no such run to supervise; exiting", run_id)
        return 0
    if run.supervisor != me and run.status == "queued":
        _log().warning("%s: not this process's run to supervise", run_id)
    signal.signal(signal.SIGTERM, _raise_stopped)
    signal.signal(signal.SIGINT, _raise_stopped)
    try:
        claimed = _wait_for_claims(store, me)
        if not claimed:
            return 0
        # Claimed: from here the heavy half; a signal is now a graceful stop of the runs.
        signal.signal(signal.SIGTERM, _note_signal)
        signal.signal(signal.SIGINT, _note_signal)
        import anyio

        from acp_bridge._runs.supervisor.running import Supervisor

        _log()  # the supervisor logs through it
        supervisor = Supervisor(store, me, run.env_key, lambda: bool(_signalled))
        anyio.run(supervisor.run_all, claimed)
    except _Stopped as stop:
        from acp_bridge._runs.unfinished import end_runs  # pydantic, for the envelopes

        supervisors.stop_accepting(store, me)
        why = f"stopped before it started (signal {stop})"
        end_runs(store, me, supervisors.active_for(store.db, me), why, stopped=True)
    except Exception as exc:  # e.g. a broken install: the entry code does not import
        from acp_bridge._runs.unfinished import end_runs

        _log().exception("%s: the supervisor failed", run_id)  # the log named in the envelope
        log = store.logs_dir / f"{run_id}.log"
        why = f"the run's supervisor failed: {type(exc).__name__}: {exc} (see {log})"
        with contextlib.suppress(Exception):
            supervisors.stop_accepting(store, me)
        end_runs(store, me, supervisors.active_for(store.db, me), why, stopped=False)
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
