"""Batch tasks in the submitting machine's run store, wherever they ran.

Each task is one run row, recorded by the batch's own process (so if that process dies, the
readers find the task ``lost``, like any foreground run): ``running`` from when its node
starts it, with the batch's id (``batch_id``), then its final envelope — with ``meta.node``
and ``meta.batch`` — committed
before the batch hands it on. ``ps``, ``show`` and ``wait`` work on it from any process.
A task refused before it started is recorded with its envelope all the same; one
interrupted while queued is not (it never ran: ``batch_run.py``). The store is written
from worker threads: the event loop that waits on hundreds of tasks never waits on SQLite.
"""

from __future__ import annotations

import os

import anyio

from acp_bridge._entries.reporting import RunReport, RunStart
from acp_bridge._runs import foreground
from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import Entry, SubtaskResult


class TaskRecord:
    """One batch task's row. ``begun`` is set once its begin was started (and fires when
    the row is written)."""

    def __init__(
        self, task_id: str, task: str, entry: Entry, agent: str | None, batch_id: str
    ) -> None:
        self.task_id, self.task, self.entry, self.agent = task_id, task, entry, agent
        self.batch_id = batch_id
        self.record: RunReport | None = None
        self.begun: anyio.Event | None = None

    def _record(self, cwd: str) -> RunReport:
        if self.record is None:
            start = RunStart(self.task_id, self.entry, self.task, self.agent, cwd, self.batch_id)
            self.record = foreground.record_run(start)
        return self.record

    async def begin(self, cwd: str, config: LoadedConfig | None) -> None:
        """The row, ``running`` (call once, when the task starts on its node)."""
        try:
            record = self._record(cwd or os.getcwd())  # noqa: PTH109
            await anyio.to_thread.run_sync(record.begin, config)
        finally:
            if self.begun is not None:
                self.begun.set()

    async def ended(self, result: SubtaskResult) -> None:
        """The final envelope, committed (after the begin, if one was started)."""
        with anyio.CancelScope(shield=True):  # committed before anyone hears of the end
            if self.begun is not None:
                await self.begun.wait()
            record = self._record(os.getcwd())  # noqa: PTH109
            await anyio.to_thread.run_sync(record.ended, result)
