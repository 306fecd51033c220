"""A run's live events, written to the store in batches.

``on_event`` is called on the event loop for every event and must be quick (the message
stream is the hot path: docs/explanation/performance.md), so :meth:`EventRecorder.add` only
encodes and appends to a list; :meth:`EventRecorder.run` writes what gathered once per
``FLUSH_DELAY`` in one transaction and then wakes the run's waiters (``logs -f`` follows
within ~50 ms). Batching, not a timer: the flusher sleeps on an event until something arrives.

Bounded: a run keeps at most ``max_events`` events (the store setting ``max_events``, default
10 000); the last one kept is a ``warning`` saying the log is full, later ones are counted in
``events_dropped``. One event is at most ``MAX_EVENT_CHARS`` of JSON: longer string fields are
cut, and an event still too long keeps only its kind and time.
"""

from __future__ import annotations

import json
from typing import Any

import anyio

from acp_bridge._runs.store.run_store import Store
from acp_bridge._runs.wakeups import wake

MAX_EVENTS = 10_000
MAX_EVENT_CHARS = 64 * 1024
FLUSH_DELAY = 0.05


def encode(data: dict[str, Any]) -> str:
    """One event as JSON, within :data:`MAX_EVENT_CHARS`."""
    text = json.dumps(data, ensure_ascii=False, default=str)
    if len(text) <= MAX_EVENT_CHARS:
        return text
    cut = MAX_EVENT_CHARS // 4
    clipped = {
        key: (value[:cut] + "…" if isinstance(value, str) and len(value) > cut else value)
        for key, value in data.items()
    }
    clipped["clipped_from"] = len(text)
    text = json.dumps(clipped, ensure_ascii=False, default=str)
    if len(text) <= MAX_EVENT_CHARS:
        return text
    kept = {key: data[key] for key in ("kind", "task_id", "elapsed") if key in data}
    return json.dumps({**kept, "clipped_from": len(text)}, default=str)


class EventRecorder:
    """Buffers one run's events and progress figures; flushes them to the store."""

    def __init__(
        self,
        store: Store,
        run_id: str,
        *,
        already: int = 0,
        max_events: int = MAX_EVENTS,
        wakeup_name: str = "",
    ) -> None:
        self._store = store
        self.run_id = run_id
        self.max_events = max(2, max_events)
        self._kept = already
        self._pending: list[str] = []
        self._dropped = 0
        self._progress: dict[str, Any] = {}
        self._own_wakeup = wakeup_name  # no need to wake ourselves
        self._arrived = anyio.Event()

    def add(self, data: dict[str, Any]) -> None:
        if self._kept >= self.max_events:
            self._dropped += 1
        elif self._kept == self.max_events - 1:
            self._kept += 1
            self._pending.append(
                encode(
                    {
                        "kind": "warning",
                        "task_id": self.run_id,
                        "elapsed": data.get("elapsed", 0),
                        "message": f"event log full at {self.max_events} events; "
                        "later events of this run are not kept",
                    }
                )
            )
            self._dropped += 1
        else:
            self._kept += 1
            self._pending.append(encode(data))
        self._arrived.set()

    def note(self, **progress: Any) -> None:
        """Figures to write with the next batch (``session_id``, ``tokens``, ``cost``)."""
        self._progress.update(progress)
        self._arrived.set()

    def flush(self) -> None:
        if not (self._pending or self._dropped or self._progress):
            return
        events, dropped, progress = self._pending, self._dropped, self._progress
        self._pending, self._dropped, self._progress = [], 0, {}
        self._store.add_events(self.run_id, events, dropped, **progress)
        wake(self._store, [self.run_id], besides=self._own_wakeup)

    async def run(self) -> None:
        """Flush batches until cancelled (then flush once more yourself)."""
        while True:
            await self._arrived.wait()
            self._arrived = anyio.Event()
            await anyio.sleep(FLUSH_DELAY)  # let a burst gather into one transaction
            self.flush()
