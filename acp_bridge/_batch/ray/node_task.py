"""The Ray task body: one batch task, run on the node Ray chose.

A *streaming generator* task, so the submitting machine hears of each phase as it happens
and can keep its own deadlines (a frozen node says nothing, and Ray notices only much
later): ``accepted`` (the node took it; its id and process), ``running`` (the entry starts
now, in this cwd, with this timeout: the run ends by timeout + END_GRACE here, whatever its
worker does), ``measuring`` (the run ended; its changes are measured), then ``result``:
the envelope, what ``inspect`` found, and the files the envelope names (the diff, the
transcript) when they are small enough to travel.

The run itself goes on in a thread of its own (an event loop there), because a generator
can only yield from its own frame; the task's main thread passes the phases on. A cancel
comes from the batch's control actor (:class:`BatchControl`): the run ends gracefully,
``cancelled``, and its envelope comes back like any other. The node records nothing in its
own run store: the submitting machine records every task.

Imported by the submitting process only on the Ray path, and by Ray on the nodes.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import ray

from acp_bridge._batch.node_run import effective_timeout, run_task_here
from acp_bridge._batch.tasks import BatchTask
from acp_bridge._batch.workspace import Finished
from acp_bridge._os.fs.input_files import read_bytes
from acp_bridge._version import __version__

ARTIFACT_BYTES = 8 << 20
"""Largest file named by the envelope (diff, transcript) sent back with it."""


@ray.remote(num_cpus=0)
class BatchControl:
    """The batch's voice on every node: :meth:`wait` returns once :meth:`cancel` was
    called (an async actor: every waiting task is one suspended call)."""

    def __init__(self) -> None:
        self.cancelled = asyncio.Event()

    async def wait(self) -> bool:
        await self.cancelled.wait()
        return True

    async def cancel(self) -> None:
        self.cancelled.set()


@ray.remote(num_cpus=0)
def probe() -> dict[str, Any]:
    """What a node with the batch's runtime environment says about itself."""
    return {"node": ray.get_runtime_context().get_node_id(), "version": __version__}


@ray.remote(num_cpus=0, max_retries=0)
def run_on_node(
    task: BatchTask, task_id: str, upload: bytes | None, control: Any
) -> Iterator[dict[str, Any]]:
    """One task on this node, phase by phase (see the module docstring)."""
    from acp_bridge._entries.reporting import install_reporter

    install_reporter(None)  # recorded by the submitting machine, not here
    phases: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
    yield {
        "phase": "accepted",
        "node": ray.get_runtime_context().get_node_id(),
        "pid": os.getpid(),
        "version": __version__,
    }
    thread = threading.Thread(
        target=_run, args=(task, task_id, upload, control, phases), name=f"acp-bridge {task_id}"
    )
    thread.start()
    while True:
        try:
            item = phases.get()
        except KeyboardInterrupt:  # Ray's own cancel of a task it thought was queued
            continue
        yield item
        if item["phase"] == "result":
            break
    thread.join()


def _run(
    task: BatchTask,
    task_id: str,
    upload: bytes | None,
    control: Any,
    phases: queue.SimpleQueue[dict[str, Any]],
) -> None:
    try:
        finished = anyio.run(_run_async, task, task_id, upload, control, phases)
        phases.put(_result(finished))
    except BaseException as exc:  # the generator must end, whatever happened here
        phases.put({"phase": "result", "error": f"{type(exc).__name__}: {exc}"})


async def _run_async(
    task: BatchTask,
    task_id: str,
    upload: bytes | None,
    control: Any,
    phases: queue.SimpleQueue[dict[str, Any]],
) -> Finished:
    from acp_bridge.config import load_config
    from acp_bridge.errors import BridgeError

    try:
        loaded = await anyio.to_thread.run_sync(load_config)
    except BridgeError:
        loaded = None  # the run loads it again and ends with its config_error
    timeout = effective_timeout(task.request, loaded)
    cancel = anyio.Event()

    def started(cwd: str) -> None:
        phases.put({"phase": "running", "cwd": cwd, "timeout": timeout})

    async with anyio.create_task_group() as tg:
        tg.start_soon(_watch, control, cancel)
        finished = await run_task_here(
            task, task_id, config=loaded, cancel=cancel, started=started, upload=upload,
            measuring=lambda: phases.put({"phase": "measuring"}),
        )  # fmt: skip
        tg.cancel_scope.cancel()
    return finished


async def _watch(control: Any, cancel: anyio.Event) -> None:
    """Sets ``cancel`` when the batch is cancelled; a control actor that died (its node
    lost) cancels nothing."""
    try:
        await control.wait.remote()
    except ray.exceptions.RayError:
        return
    cancel.set()


def _result(finished: Finished) -> dict[str, Any]:
    envelope = finished.envelope.to_dict()
    meta = envelope["meta"]
    artifacts = {}
    for name in ("diff", "transcript"):
        path = meta.get(name)
        if not path:
            continue
        try:  # one larger than the cap stays on the node (its path is in the envelope)
            artifacts[name] = read_bytes(path, what=f"a run's {name}", limit=ARTIFACT_BYTES)
        except OSError:
            continue
    return {
        "phase": "result",
        "envelope": envelope,
        "inspection": finished.inspection,
        "artifacts": artifacts,
    }
