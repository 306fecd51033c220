"""The viewer's live streams of a list or a batch: server-sent events that say only that
something changed since the mark the page was rendered with (the page's script then
fetches the rendered fragment, or reloads)."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from sse_starlette.sse import EventSourceResponse

POLL = 0.5
"""Seconds between looks at the store while a live page is open."""


def changes_since(now: Callable[[], str], shown: str, what: str) -> EventSourceResponse:
    """``changed`` each time ``now()`` differs from the mark last seen, starting from the
    one the page was rendered with (``shown``): a change between the page and its stream
    is told at once (the browser tests found a batch's last end lost in that gap)."""

    async def changes() -> AsyncIterator[dict[str, str]]:
        mark = shown
        while True:
            latest = now()
            if latest != mark:
                mark = latest
                yield {"event": "changed", "data": what}
            await anyio.sleep(POLL)

    return EventSourceResponse(changes(), ping=15)


def digest(mark: tuple[Any, ...]) -> str:
    """A mark as a short text a page carries (``data-mark``) and hands back to its stream."""
    return hashlib.sha256(repr(mark).encode()).hexdigest()[:16]
