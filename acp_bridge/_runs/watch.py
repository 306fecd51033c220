"""Watching runs from any process: fresh state, lost runs found, and a wake-up on change.

A :class:`Watch` reads its runs from the store (each checked by :mod:`.liveness`), and waits
for the next change: its wakeup (woken after every commit that concerns the runs) or the
death of a run's supervisor (a pidfd per active run), with a look at least every
``FALLBACK`` seconds as a safety net. So ``wait`` returns within milliseconds of the envelope's
commit, and notices a SIGKILLed supervisor at once.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from types import TracebackType

from acp_bridge._os.process import proc
from acp_bridge._os.process.proc import Identity
from acp_bridge._runs import liveness
from acp_bridge._runs.store.run_records import RunRecord
from acp_bridge._runs.store.run_store import Store
from acp_bridge._runs.wakeups import Wakeup
from acp_bridge.errors import ConfigError

FALLBACK = 1.0
"""Seconds between looks when nothing woke the watcher (a wake-up can only be missed if
whoever changed a run died between its commit and the wake-up)."""


class UnknownRunError(ConfigError):
    """No run with that id in the store."""

    def __init__(self, message: str, run_id: str = "") -> None:
        super().__init__(message)
        self.run_id = run_id  # the id asked for: what a refusal names on stdout


def get_checked(store: Store, run_id: str) -> RunRecord:
    """The run, with lost-ness settled; :class:`UnknownRunError` if there is none."""
    run = store.get(run_id)
    if run is None:
        shown = run_id if len(run_id) <= 80 else f"{run_id[:80]}…"  # echo a bounded part
        raise UnknownRunError(f"no run {shown!r} in {store.path}", shown)
    return liveness.check(store, run)


class Watch:
    """Watches some runs; a context manager."""

    def __init__(self, store: Store, run_ids: Sequence[str]) -> None:
        self.store = store
        self.run_ids = list(run_ids)
        self._pidfds: dict[Identity, int] = {}
        self.wakeup = Wakeup(store, self.run_ids)

    def look(self) -> list[RunRecord]:
        """The runs now (lost ones marked), and pidfds for the supervisors of active ones."""
        runs = [get_checked(self.store, run_id) for run_id in self.run_ids]
        wanted = {run.supervisor for run in runs if not run.finished and run.supervisor}
        for who in set(self._pidfds) - wanted:
            os.close(self._pidfds.pop(who))
        for who in wanted - set(self._pidfds):
            fd = proc.open_pidfd(who)
            if fd is not None:
                self._pidfds[who] = fd
        return runs

    def wait_sync(self, timeout: float) -> None:
        self.wakeup.wait_sync(min(timeout, FALLBACK), list(self._pidfds.values()))

    async def wait(self, timeout: float) -> None:
        await self.wakeup.wait(min(timeout, FALLBACK), list(self._pidfds.values()))

    def close(self) -> None:
        for fd in self._pidfds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._pidfds.clear()
        self.wakeup.close()

    def __enter__(self) -> Watch:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
