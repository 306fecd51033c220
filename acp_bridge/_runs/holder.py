"""Holding an agent between turns: the supervisor's side of follow-ups (see :mod:`.followups`).

After a detached ``acp_spawn`` turn that left its session sound, when the profile keeps its
agent (``timeouts.idle`` above 0), the supervisor commits the run's envelope and, in the same
transaction, marks the run held until the idle time ends (``lanes.finish``); the waiter of
the run learns it ended as usual. Then it waits, on the held run's doorbell, for a follow-up
to claim (:func:`wait_for_follow_up`): whoever queues a follow-up of the run rings it, so
does ``acp-bridge stop`` (which lets go of the hold). A claimed follow-up becomes the next
turn of the same live session; otherwise — the idle time over, the agent gone, the hold let
go, the supervisor asked to stop — the hold is released and the runs the slot lets start
are rung. Either way every wait here is bounded by the idle time.

A follow-up queued just as the hold ends is never stranded: claiming and releasing are each
one transaction, a follow-up can only be claimed while the hold stands, and once it is
released the follow-up is a lane head like any other, whose own supervisor resumes or loads
the session.
"""

from __future__ import annotations

from functools import partial

import anyio

from acp_bridge._entries.acp_spawn.live_turns import Held
from acp_bridge._os.proc import Identity
from acp_bridge._os.race import race
from acp_bridge._runs import followups, lanes
from acp_bridge._runs.store.store import Store
from acp_bridge._runs.wakeups import Bell, ring

LOOK = 1.0
"""Seconds between looks for a follow-up when no doorbell rang (a missed ring)."""


async def wait_for_follow_up(
    store: Store, me: Identity, run_id: str, bell: Bell, held: Held, stopped: anyio.Event
) -> str | None:
    """The follow-up of ``run_id`` this process claimed while holding its agent, or None
    when the hold ended first (then it is released here). ``bell`` rings for ``run_id`` and
    was listening before the hold was committed, so no ring is missed."""
    while True:
        # Whether the hold stands first: a follow-up that came as the agent went away is
        # not handed to a dead agent (it would fail); released, it resumes on its own.
        left = held.until - anyio.current_time()
        if left <= 0 or held.gone.is_set() or stopped.is_set():
            break
        try:
            claimed = followups.claim_follow_up(store, run_id, me)  # only while the hold stands
        except followups.OtherSettings:
            break  # released below: that follow-up resumes the session as it asks
        if claimed is not None:
            ring(store, [claimed])  # its own light supervisor sees it taken, and exits
            return claimed
        if not followups.holds(store, run_id, me):  # let go (stop), or over by the wall clock
            break
        await race(partial(bell.wait, min(left, LOOK)), held.gone.wait, stopped.wait)
    release(store, run_id, me)
    return None


def release(store: Store, run_id: str, me: Identity) -> None:
    """End this process's hold of ``run_id``'s agent; ring the runs its slot lets start."""
    if followups.hold(store, run_id, me, None):
        ring(store, lanes.heads(store))
