"""What a task's envelope says when Ray, not the task, ended it.

Measured here (Ray 2.60, 2 cores): a node that dies fails its tasks with ``NodeDiedError``
within a tenth of a second; a node frozen with SIGSTOP fails nothing for over half a minute
and its tasks' force-cancels wait for it to wake, which is why the submitting side keeps a
deadline of its own (:mod:`.ray_executor`). The mapping:

============================  ===================  =========================================
Ray says                      ``error_code``       meaning for the caller
============================  ===================  =========================================
``NodeDiedError``             ``node_lost``        the node died (``lost_reason: node_died``)
(the bridge's deadline)       ``node_lost``        the node stopped answering (``deadline``)
``WorkerCrashedError``,       ``lost``             the process running the task died; the
``ObjectLostError``, OOM                           node lives on
``TaskCancelledError``        ``cancelled``        the batch cancelled it
``RuntimeEnvSetupError``,     ``executor_error``   the task could not start there
``RayTaskError``, other
============================  ===================  =========================================

In every lost case the task's own effects are unknown: it may have done all, some or none
of its work. It runs again only when the caller asked for retries.
"""

from __future__ import annotations

import re
from typing import Literal

import ray.exceptions as rex

from acp_bridge._batch.tasks import BatchTask
from acp_bridge.envelope import Meta, SubtaskResult, failed
from acp_bridge.errors import ErrorCode

_NODE_ID = re.compile(r"node ID: ([0-9a-f]{16,})")
LostReason = Literal["node_died", "deadline"]


def node_in(message: str) -> str | None:
    """The node id a Ray error message names (its exceptions carry no field for it)."""
    found = _NODE_ID.search(message)
    return found.group(1) if found else None


def _meta(task: BatchTask, node: str | None, lost_reason: LostReason | None = None) -> Meta:
    request = task.request
    return Meta(entry=request.entry, agent=request.agent, node=node, lost_reason=lost_reason)


def node_lost(
    task: BatchTask, task_id: str, node: str | None, reason: LostReason, detail: str
) -> SubtaskResult:
    meta = _meta(task, node, reason)
    return failed(detail, ErrorCode.NODE_LOST, task_id=task_id, meta=meta)


def envelope_for(
    exc: BaseException, task: BatchTask, task_id: str, node: str | None, started: bool
) -> SubtaskResult:
    """The envelope of an attempt that Ray ended with ``exc``."""
    where = f"node {node[:8]}" if node else "its node"
    if isinstance(exc, rex.NodeDiedError):
        node = node or node_in(str(exc))
        when = "while the task ran" if started else "before the task reported its start"
        detail = f"node {node[:8] if node else '?'} died {when}"
        return node_lost(task, task_id, node, "node_died", detail)
    if isinstance(exc, rex.TaskCancelledError):
        error = "the batch cancelled the task"
        return failed(error, ErrorCode.CANCELLED, task_id=task_id, meta=_meta(task, node))
    if isinstance(exc, rex.WorkerCrashedError | rex.ObjectLostError | rex.OutOfMemoryError):
        error = f"the Ray worker process running the task on {where} died ({type(exc).__name__})"
        return failed(error, ErrorCode.LOST, task_id=task_id, meta=_meta(task, node))
    if isinstance(exc, rex.RuntimeEnvSetupError):
        error = f"the runtime environment cannot be set up on {where}: {_last_line(exc)}"
        return failed(error, ErrorCode.EXECUTOR_ERROR, task_id=task_id, meta=_meta(task, node))
    if isinstance(exc, rex.RayTaskError):
        cause = exc.cause if isinstance(exc.cause, BaseException) else None
        text = f"{type(cause).__name__}: {cause}" if cause is not None else _last_line(exc)
        error = f"the task failed on {where} before it could run: {text}"
        return failed(error, ErrorCode.EXECUTOR_ERROR, task_id=task_id, meta=_meta(task, node))
    error = f"Ray: {type(exc).__name__}: {_last_line(exc)}"
    return failed(error, ErrorCode.EXECUTOR_ERROR, task_id=task_id, meta=_meta(task, node))


def _last_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__
