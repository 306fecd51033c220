"""Lost runs: a run whose supervisor died is never left ``queued`` or ``running``.

Every run records the identity of the process running it (pid, start time, boot id: see
:mod:`~acp_bridge._os.process.proc`). Any reader that looks at an active run (``wait``, ``ps``,
``show``, ``logs``, a supervisor waiting in the same lane) checks that identity first; if the
process is gone, or the pid now belongs to another process, or the host rebooted, the reader ends
the run itself: a failed envelope with ``meta.error_code: "lost"`` and status ``lost``, written with
a compare-and-set on that same identity (so a run a live supervisor just finished or adopted is
never marked lost by a reader working from a stale row).

Then whatever the run started is ended: the supervisor records the process groups it starts (agents,
commands and terminals lead their own groups), and each is killed under the rule in
:mod:`~acp_bridge._os.process.proc` — only while its leader is provably the recorded process. A
``wait`` notices a SIGKILLed supervisor at once (it watches the supervisor's pidfd); ``ps`` and
``show`` at their next call.
"""

from __future__ import annotations

from collections.abc import Iterable

from acp_bridge._os.process import proc
from acp_bridge._runs import held_agents
from acp_bridge._runs.store.lanes import heads
from acp_bridge._runs.store.run_records import RunRecord
from acp_bridge._runs.store.run_store import Store
from acp_bridge._runs.wakeups import wake


def check(store: Store, run: RunRecord) -> RunRecord:
    """``run`` as it really is: an active run whose supervisor is gone comes back lost; an
    ended one whose agent that supervisor held comes back released."""
    if run.supervisor is None or (run.finished and run.held_until is None):
        return run
    if proc.alive(run.supervisor):
        return run
    if run.finished:
        return release_hold_of_dead_supervisor(store, run)
    return mark_lost(store, run)


def release_hold_of_dead_supervisor(store: Store, run: RunRecord) -> RunRecord:
    """Release the hold of ``run``'s dead supervisor (if it is still recorded): what it held
    is killed, and the runs its slot lets start (a follow-up that waited for it) are woken."""
    assert run.supervisor is not None
    if held_agents.hold(store, run.id, run.supervisor, None):
        end_processes(store, run.id)  # the held agent's own children outlive it (pdeathsig)
        wake(store, heads(store))
    return store.get(run.id) or run


def reap(store: Store, runs: Iterable[RunRecord] | None = None) -> list[RunRecord]:
    """:func:`check` every active run (or the given ones); the runs found lost. Holds of
    dead supervisors are released too (see :mod:`.held_agents`)."""
    found = []
    for run in store.active() if runs is None else runs:
        checked = check(store, run)
        if checked.status == "lost" and not run.finished:
            found.append(checked)
    if runs is None:
        for held in held_agents.held_by_dead_supervisors(store):
            release_hold_of_dead_supervisor(store, held)
    return found


def mark_lost(store: Store, run: RunRecord) -> RunRecord:
    """End ``run`` as lost, if it is still run by the supervisor recorded in ``run``."""
    # Imported here: it loads pydantic, which a reader pays only when it finds a lost run.
    from acp_bridge._runs.unfinished import ended
    from acp_bridge.errors import ErrorCode

    assert run.supervisor is not None
    ran_in = "supervisor" if run.detached else "caller (a foreground run)"
    error = (
        f"the run was lost: its {ran_in}, pid {run.supervisor.pid}, ended without "
        "recording a result (killed, crashed, or the host restarted)"
    )
    outcome = ended(run, error, ErrorCode.LOST)
    with store.write() as db:
        changed = store.finish(db, run.id, outcome, supervisor=run.supervisor)
    if changed:
        end_processes(store, run.id)
        wake(store, [run.id, *heads(store)])  # waiters, and the runs its slot lets start
    return store.get(run.id) or run


def end_processes(store: Store, run_id: str) -> int:
    """Kill the process groups ``run_id`` started that are provably still its own; how many."""
    return sum(proc.kill_group(leader) for leader in store.groups(run_id))
