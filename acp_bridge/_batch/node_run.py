"""One task, run on the machine this code runs on: the local executor's, or a Ray node's.

Its workspace is made here (a fresh empty one when the task names neither a workspace nor
a ``cwd``), the request runs through the entries table like any other front end's
(:func:`~acp_bridge.run_entry`), the changes are measured, ``inspect`` looks, the workspace
goes. Whatever fails — a workspace that cannot be made, an upload past its bound — is the
task's envelope, never an exception: only cancellation of the caller's own scope propagates.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import anyio

from acp_bridge._batch.tasks import BatchTask, Workspace
from acp_bridge._batch.workspace import Finished, Measured, workspace
from acp_bridge._entries.entry_table import ENTRY_TABLE
from acp_bridge._entries.enveloped import finish_envelope
from acp_bridge._entries.request import EntryRequest, run_entry
from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import Meta, from_error
from acp_bridge.errors import BridgeError, ConfigError

Started = Callable[[str], None]
"""Told the task's working directory when its entry is about to start."""

DEFAULT_TIMEOUT = 600.0
"""What a deadline assumes when a request's own timeout cannot be known (a config that
does not load: the run then ends at once with ``config_error`` anyway)."""


def hostname() -> str:
    return socket.gethostname()


async def run_task_here(
    task: BatchTask,
    task_id: str,
    *,
    config: LoadedConfig | None,
    cancel: anyio.Event,
    started: Started,
    upload: bytes | None = None,
    measuring: Callable[[], None] | None = None,
) -> Finished:
    """Run ``task`` (named ``task_id``) here; its envelope and what ``inspect`` found.
    ``started`` hears the cwd as the entry starts; ``measuring``, that it ended."""
    began = time.monotonic()
    request = task.request.replace(task_id=task_id)
    space = task.workspace
    if space is None and request.cwd is None:
        # Never the directory this process was started in (a Ray node's, say): it would
        # become the agent's write root, shared by every task that lands there.
        space = Workspace()
    try:
        async with workspace(space, task_id, upload) as prepared:
            if prepared is None:
                assert request.cwd is not None
                started(request.cwd)
                result = await run_entry(request, config=config, cancel=cancel)
                if measuring is not None:
                    measuring()
                return Finished(result)
            request = request.replace(cwd=str(prepared.path))
            async with Measured(prepared, task_id) as measured:
                started(str(prepared.path))
                result = await run_entry(request, config=config, cancel=cancel)
                if measuring is not None:
                    measuring()
                return await measured.finish(result, task.inspect)
    except (BridgeError, OSError) as exc:
        error = exc if isinstance(exc, BridgeError) else ConfigError(f"workspace: {exc}")
        meta = Meta(agent=request.agent)
        failed = from_error(error, task_id=task_id, meta=meta)
        return Finished(finish_envelope(failed, request.entry, None, began))


def effective_timeout(request: EntryRequest, loaded: LoadedConfig | None) -> float:
    """The seconds ``request`` may run under ``loaded`` (its own timeout, else the entry's
    default there), so a caller far away can keep a deadline of its own: a run ends by
    this plus :data:`~acp_bridge._entries.enveloped.END_GRACE`, whatever its worker does."""
    timeout = request.option("timeout")
    if timeout is not None:
        return float(timeout)
    if loaded is None:
        return DEFAULT_TIMEOUT
    try:
        return ENTRY_TABLE[request.entry].default_timeout(loaded, request.agent)
    except BridgeError:
        return DEFAULT_TIMEOUT
