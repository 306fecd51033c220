"""Following one attempt of a task on a Ray node, phase by phase, under our own deadlines.

The node reports ``accepted`` → ``running`` → ``measuring`` → ``result``
(:mod:`.node_task`). Each phase but the first has a bound here, on the submitting side,
because a frozen or cut-off node tells nothing and Ray notices only much later:

- ``accepted`` → ``running``: the executor's ``setup_timeout`` (making the workspace);
- ``running`` → the end of the run: the run's timeout + the executor's ``grace`` (the run
  itself ends by timeout + END_GRACE on the node, whatever its worker does);
- ``measuring`` → ``result``: ``measure_timeout``.

Past a bound the attempt is ``node_lost`` (``lost_reason: deadline``), force-cancelled in
Ray, and its node suspected (later attempts avoid it). Queued (no phase yet) has no bound:
the task waits for a slot as long as some live node could take it; when none can any
more, it is refused (``executor_error``).

A cancel (Ctrl-C): a queued task is cancelled in Ray and never starts; a started one is
told through the batch's control actor, ends gracefully on its node, and its own
``cancelled`` envelope comes back — or, past the grace, is force-cancelled and given one
here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import ray

from acp_bridge._batch.executor import Attempt, Started
from acp_bridge._batch.ray import faults
from acp_bridge._batch.tasks import BatchTask
from acp_bridge._os.fs.locations import state_dir
from acp_bridge._os.fs.private_files import private_dir, write_private
from acp_bridge._os.race import race
from acp_bridge._version import __version__
from acp_bridge.envelope import Meta, SubtaskResult, failed
from acp_bridge.errors import ErrorCode


class PhaseLimits:
    """Seconds each phase of an attempt may take (set on :class:`~.ray_executor.RayExecutor`):
    ``grace`` past the task's own timeout before its node counts as lost, ``setup_timeout``
    to make its workspace on the node, ``measure_timeout`` to measure what it changed there."""

    # A plain class, not a named tuple: this module postpones its annotations.
    __slots__ = ("grace", "measure_timeout", "setup_timeout")

    def __init__(self, grace: float, setup_timeout: float, measure_timeout: float) -> None:
        self.grace = grace
        self.setup_timeout = setup_timeout
        self.measure_timeout = measure_timeout


class AttemptFollower:
    """One submitted attempt: read its phases, keep the deadlines, make its envelope."""

    def __init__(
        self,
        limits: PhaseLimits,
        generator: Any,
        task: BatchTask,
        task_id: str,
        started: Started,
        cancel: anyio.Event,
        infeasible: Callable[[], str | None],
        suspect: Callable[[str], None],
        tell_cancel: Callable[[], None],
        changes: Callable[[], anyio.Event],
    ) -> None:
        self.limits = limits
        self.generator = generator
        self.task = task
        self.task_id = task_id
        self.started = started
        self.cancel = cancel
        self.infeasible = infeasible
        self.suspect = suspect
        self.tell_cancel = tell_cancel
        self.changes = changes
        self.phase = "queued"
        self.node: str | None = None
        self.timeout = 0.0
        self.warnings: list[str] = []
        self.cancel_deadline = math.inf
        self.ended = False

    async def follow(self) -> Attempt:
        send, receive = anyio.create_memory_object_stream[tuple[str, Any]](math.inf)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read, send)
                result = await self._loop(receive)
                tg.cancel_scope.cancel()
            return result
        finally:
            if not self.ended:  # whatever stopped us: nothing is left running in Ray
                ray.cancel(self.generator, force=True)

    async def _read(self, send: Any) -> None:
        """Every item of the generator into ``send``; then how it ended."""
        try:
            async for ref in self.generator:
                send.send_nowait(("item", await ref))
            send.send_nowait(("end", None))
        except Exception as exc:  # Ray's errors are the attempt's outcome
            send.send_nowait(("error", exc))

    async def _loop(self, receive: Any) -> Attempt:
        placement_changed = self.changes()
        while True:
            deadline = min(self._phase_deadline(), self.cancel_deadline)
            stoppers: dict[str, Callable[[], Any]] = {}
            if self.cancel_deadline == math.inf:
                stoppers["cancel"] = self.cancel.wait
            if self.phase == "queued":
                stoppers["placement"] = placement_changed.wait
            raced = await race(receive.receive, *stoppers.values(), deadline=deadline)
            if raced.finished:
                assert raced.value is not None
                kind, value = raced.value
                done = self._on(kind, value)
                if done is not None:
                    return done
            elif raced.timed_out:
                return self._past_deadline()
            elif list(stoppers)[raced.stopped_by or 0] == "cancel":
                if self.phase == "queued":  # never started: Ray drops it from its queue
                    ray.cancel(self.generator)
                    self.ended = True
                    error = "the batch was interrupted before this task started"
                    return self._attempt(self._failed(error, ErrorCode.CANCELLED))
                # told through the control actor; its own envelope should come back
                self.tell_cancel()
                self.cancel_deadline = anyio.current_time() + self.limits.grace
            else:
                placement_changed = self.changes()
                why = self.infeasible()
                if why is not None:
                    ray.cancel(self.generator)
                    self.ended = True
                    return self._attempt(self._failed(why, ErrorCode.EXECUTOR_ERROR))

    def _phase_deadline(self) -> float:
        now = anyio.current_time()
        bounds = {
            "queued": math.inf,
            "accepted": self.limits.setup_timeout,
            "running": self.timeout + self.limits.grace,
            "measuring": self.limits.measure_timeout,
        }
        return now + bounds[self.phase] if self.phase != "queued" else math.inf

    def _on(self, kind: str, value: Any) -> Attempt | None:
        if kind == "error":
            self.ended = True
            started = self.phase in ("running", "measuring")
            envelope = faults.envelope_for(value, self.task, self.task_id, self.node, started)
            return self._attempt(envelope)
        if kind == "end":
            self.ended = True
            return self._attempt(self._failed("the node ended the task without a result"))
        phase = value.get("phase")
        if phase == "accepted":
            self.node = value["node"]
            if value.get("version") != __version__:
                self.warnings.append(
                    f"node {value['node'][:8]} runs acp-bridge {value.get('version')}, "
                    f"this machine {__version__}"
                )
        elif phase == "running":
            self.timeout = float(value["timeout"])
            assert self.node is not None
            self.started(self.node, value["cwd"])
        elif phase == "result":
            self.ended = True
            return self._result(value)
        self.phase = phase
        return None

    def _result(self, value: dict[str, Any]) -> Attempt:
        if "error" in value:
            return self._attempt(self._failed(f"the task failed on its node: {value['error']}"))
        envelope = SubtaskResult.model_validate(value["envelope"])
        update: dict[str, Any] = {"node": self.node}
        for name, content in (value.get("artifacts") or {}).items():
            update[name] = str(_keep_artifact(self.task_id, name, envelope, content))
        for name in ("diff", "transcript"):
            if getattr(envelope.meta, name) and name not in update:
                self.warnings.append(f"{name} left on node {(self.node or '?')[:8]}: too large")
        if self.warnings:
            update["warnings"] = [*(envelope.meta.warnings or []), *self.warnings]
        envelope = envelope.model_copy(update={"meta": envelope.meta.model_copy(update=update)})
        return Attempt(envelope, self.node, value.get("inspection"))

    def _past_deadline(self) -> Attempt:
        ray.cancel(self.generator, force=True)
        self.ended = True
        if self.cancel_deadline != math.inf and anyio.current_time() >= self.cancel_deadline:
            error = (
                f"the batch was interrupted and node {(self.node or '?')[:8]} did not end the "
                f"task within {self.limits.grace:g} s: force-cancelled"
            )
            return self._attempt(self._failed(error, ErrorCode.CANCELLED))
        if self.node is not None:
            self.suspect(self.node)
        bound = {
            "accepted": f"setting up its workspace took over {self.limits.setup_timeout:g} s",
            "running": (
                f"no result within the task's timeout {self.timeout:g} s + {self.limits.grace:g} s"
            ),
            "measuring": f"measuring took over {self.limits.measure_timeout:g} s",
        }[self.phase]
        detail = f"node {(self.node or '?')[:8]} stopped answering: {bound}"
        return self._attempt(
            faults.node_lost(self.task, self.task_id, self.node, "deadline", detail)
        )

    def _failed(self, error: str, code: ErrorCode = ErrorCode.EXECUTOR_ERROR) -> SubtaskResult:
        request = self.task.request
        meta = Meta(entry=request.entry, agent=request.agent, node=self.node)
        return failed(error, code, task_id=self.task_id, meta=meta)

    def _attempt(self, envelope: SubtaskResult) -> Attempt:
        if self.warnings and not envelope.meta.warnings:
            meta = envelope.meta.model_copy(update={"warnings": list(self.warnings)})
            envelope = envelope.model_copy(update={"meta": meta})
        return Attempt(envelope, self.node)


def _keep_artifact(task_id: str, name: str, envelope: SubtaskResult, content: bytes) -> Path:
    """A file the node sent back, written under this machine's state directory."""
    suffix = Path(str(getattr(envelope.meta, name))).suffix or ".txt"
    folder = private_dir(state_dir() / "batches" / task_id)
    path = folder / f"{name}{suffix}"
    write_private(path, content)
    return path
