"""Shared test helpers: bounded async runs and process liveness."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from acp_bridge.config import LoadedConfig, load_config

T = TypeVar("T")

ECHO_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "value": {"type": "integer"}},
    "required": ["ok", "value"],
}
"""The JSON Schema of the ``subagent.demo.echo.v1`` label used across the tests."""


def run_bounded(
    fn: Callable[..., Awaitable[T]], *args: Any, limit: float = 15.0, **kwargs: Any
) -> T:
    """``anyio.run(fn, *args, **kwargs)``, failing (not hanging) past ``limit`` seconds."""

    async def bounded() -> T:
        with anyio.fail_after(limit):
            return await fn(*args, **kwargs)

    return anyio.run(bounded)


def default_config() -> LoadedConfig:
    """Defaults and built-in profiles only: no user or local config file."""
    return load_config(None, search=False, environ={})


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def wait_all_dead(pids: Iterable[int], within: float = 3.0) -> list[int]:
    """The pids still alive after ``within`` seconds (signals take a moment to land)."""
    deadline = time.monotonic() + within
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        left = [p for p in left if alive(p)]
    return left


def kill_quietly(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)


def read_pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


class ChunkStream(ByteReceiveStream):
    """Agent stdout, in memory: yields the given chunks, then EOF."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = list(chunks)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._chunks:
            raise anyio.EndOfStream
        return self._chunks.pop(0)

    async def aclose(self) -> None:
        self._chunks.clear()


class NullSink(ByteSendStream):
    """Agent stdin that swallows everything."""

    async def send(self, item: bytes) -> None:
        return None

    async def aclose(self) -> None:
        return None
