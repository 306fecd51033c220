"""The run-control tools (``start``, ``wait``, ``status``, ``list``, ``stop``, ``send``) on
the run store: the one adapter between the MCP face and :mod:`acp_bridge._runs`.

What it uses of :mod:`acp_bridge._runs`: ``start_run`` (the request, with
:class:`RunOptions` for budgets), ``open_run`` → ``RunHandle.record()`` /
``RunHandle.events(follow=True)`` / ``RunHandle.send``, ``wait_all``, ``stop_run``,
``list_runs``; and ``RunRecord.to_dict()`` for what a tool returns. The store is the default one
(``$ACP_BRIDGE_RUNS_DB``, else the state directory), like the CLI's.

Store reads are synchronous SQLite: they run in a worker thread so a slow disk never stalls
the server's other calls.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from typing import Any, cast

import anyio

from acp_bridge._entries.request import EntryRequest
from acp_bridge._mcp.arguments import (
    ListArgs,
    SendArgs,
    StartArgs,
    StatusArgs,
    StopArgs,
    WaitArgs,
)
from acp_bridge._runs.caller import handle
from acp_bridge._runs.caller.start import start_run
from acp_bridge._runs.store.run_records import RunStatus
from acp_bridge._runs.watch import UnknownRunError
from acp_bridge.config import LoadedConfig
from acp_bridge.errors import ConfigError, Problem
from acp_bridge.events import Event

STATUSES: tuple[RunStatus, ...] = ("queued", "running", "done", "failed", "cancelled", "lost")


def run_schema(envelope: dict[str, Any]) -> dict[str, Any]:
    """A run as the tools return it (``Run.to_dict()``), with ``envelope`` once it ended."""
    envelope = dict(envelope)
    definitions = envelope.pop("$defs", {})  # references resolve from the document's root
    return {
        "$defs": definitions,
        "type": "object",
        "properties": {
            "task_id": {"type": "string"},
            "status": {"type": "string", "enum": list(STATUSES)},
            "entry": {"type": "string"},
            "agent": {"type": ["string", "null"]},
            "summary": {"type": "string"},
            "error_code": {"type": ["string", "null"]},
            "envelope": envelope,
        },
        "required": ["task_id", "status"],
    }


def list_schema(run: dict[str, Any]) -> dict[str, Any]:
    run = dict(run)
    return {
        "$defs": run.pop("$defs", {}),
        "type": "object",
        "properties": {"runs": {"type": "array", "items": run}},
        "required": ["runs"],
    }


START_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"task_id": {"type": "string"}, "status": {"type": "string"}},
    "required": ["task_id", "status"],
}


async def start(args: StartArgs, request: EntryRequest, config: LoadedConfig) -> dict[str, Any]:
    """Queue ``request`` as a detached run; its task id at once."""
    started = await start_run(request, options=args.run_options(), config=config)
    return {"task_id": started.id, "status": "queued"}


def _unknown(exc: UnknownRunError) -> ConfigError:
    return ConfigError([Problem(str(exc), field="task_id")])


async def status(args: StatusArgs) -> dict[str, Any]:
    def look() -> dict[str, Any]:
        return handle.open_run(args.task_id).record().to_dict()

    try:
        return await anyio.to_thread.run_sync(look)
    except UnknownRunError as exc:
        raise _unknown(exc) from None


async def wait(args: WaitArgs, report: Callable[[Event], Awaitable[None]]) -> dict[str, Any]:
    """The run once it ended, or as it is after ``args.timeout`` seconds; its events (from
    the start) go to ``report`` meanwhile."""
    try:
        run = await anyio.to_thread.run_sync(handle.open_run, args.task_id)
    except UnknownRunError as exc:
        raise _unknown(exc) from None
    return await _follow(run, args.timeout, report)


async def send(
    args: SendArgs, config: LoadedConfig, report: Callable[[Event], Awaitable[None]]
) -> dict[str, Any]:
    """Queue a follow-up turn in the session of ``args.task_id``; the follow-up run once it
    ended, or as it is after ``args.wait`` seconds (its events go to ``report``)."""
    try:
        run = await anyio.to_thread.run_sync(handle.open_run, args.task_id)
    except UnknownRunError as exc:
        raise _unknown(exc) from None
    follow_up = await run.send(args.text, timeout=args.timeout, config=config)
    return await _follow(follow_up, args.wait, report)


async def _follow(
    run: handle.RunHandle, timeout: float, report: Callable[[Event], Awaitable[None]]
) -> dict[str, Any]:
    with anyio.move_on_after(timeout):
        events = cast("AsyncGenerator[handle.RunEvent, None]", run.events(follow=True))
        async with aclosing(events):
            async for item in events:
                await report(item.event)
    return await anyio.to_thread.run_sync(lambda: run.record().to_dict())


async def list_runs(args: ListArgs) -> dict[str, Any]:
    def look() -> list[dict[str, Any]]:
        runs = handle.list_runs(include_ended=args.include_ended, limit=args.limit)
        return [run.to_dict() for run in runs]

    return {"runs": await anyio.to_thread.run_sync(look)}


async def stop(args: StopArgs) -> dict[str, Any]:
    """Ask the run to stop; the run once it ended (or as it is after ``args.wait``)."""
    try:
        await anyio.to_thread.run_sync(lambda: handle.stop_run(args.task_id))
    except UnknownRunError as exc:
        raise _unknown(exc) from None
    (run,) = await handle.wait_all([args.task_id], timeout=args.wait)
    return run.to_dict()
