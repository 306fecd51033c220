"""Live events as MCP progress messages: one short line per event.

Not the CLI's printer (``cli/_run_commands/live_events.py``): that one streams message chunks inline
on a terminal, while a progress notification carries one self-contained line. Token usage is left
out (figures, not progress; they are in the envelope's ``meta.usage``). :class:`Lines` sends them
for the run-control tools, message chunks merged.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from acp_bridge.events import Event

LINE_LIMIT = 200
"""Characters of one progress or log line (the envelope carries everything in full)."""
CHUNKS = frozenset({"message", "thought", "terminal_output"})
"""Kinds that arrive in pieces: consecutive ones are merged into one line."""
_PREFIX = {"message": "agent: ", "thought": "thinking: ", "terminal_output": "output: "}


def clip(text: str, limit: int = LINE_LIMIT) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(event: Event) -> str | None:
    """A live event as one short line (None: nothing worth a notification)."""
    data = event.data
    kind = event.kind
    if kind in CHUNKS:
        return clip(_PREFIX[kind] + str(data.get("text", "")))
    if kind == "status":
        details = " ".join(
            f"{k}={v}" for k, v in data.items() if k != "phase" and v not in (None, "")
        )
        return clip(f"{data.get('phase')} {details}".strip())
    name = data.get("title") or data.get("tool_call_id")
    if kind == "tool_call":
        return clip(f"tool: {name} [{data.get('tool_kind')}]")
    if kind == "tool_update":
        return clip(f"tool: {name}: {data.get('status')}")
    if kind == "permission":
        return clip(
            f"permission {data.get('decision')}: {data.get('title')} ({data.get('reason')})"
        )
    if kind == "terminal":
        command = data.get("command")
        if data.get("state") == "started":
            return clip(f"$ {command}")
        ended = data.get("signal") or f"exit {data.get('exit_code')}"
        return clip(f"$ {command}: {ended}")
    if kind == "plan":
        return clip(f"plan: {len(data.get('entries', []))} step(s)")
    if kind in ("warning", "stderr"):
        return clip(f"{kind}: {data.get('message') or data.get('line')}")
    return None


MERGE_WINDOW = 1.0
"""Seconds of consecutive message chunks merged into one line (a run's events replayed from
the store arrive all at once: they merge whole)."""


class Lines:
    """Live events as progress lines for one call, consecutive message chunks merged — within
    ``MERGE_WINDOW`` seconds — into one line, as a tool run's queued ones are: a chatty run's
    ten thousand chunks are a few lines, not ten thousand notifications. Call :meth:`flush`
    when the events end."""

    def __init__(self, send: Callable[[int, str], Awaitable[None]]) -> None:
        self._send = send
        self._sent = 0
        self._pending: tuple[str, str, float] | None = None
        """A chunk line not sent yet: its kind, text, and when it began."""

    async def event(self, event: Event) -> None:
        text = describe(event)
        if text is None:
            return
        pending = self._pending
        if event.kind in CHUNKS:
            now = time.monotonic()
            if pending and pending[0] == event.kind and now - pending[2] < MERGE_WINDOW:
                merged = clip(pending[1] + str(event.data.get("text", "")))
                self._pending = (event.kind, merged, pending[2])
                return
            await self.flush()
            self._pending = (event.kind, text, now)
            return
        await self.flush()
        await self._line(text)

    async def flush(self) -> None:
        if self._pending is not None:
            text = self._pending[1]
            self._pending = None
            await self._line(text)

    async def _line(self, text: str) -> None:
        self._sent += 1
        await self._send(self._sent, text)
