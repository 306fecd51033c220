"""Running a batch: every task on the executor, one envelope each, in input order.

::

    results = await batch(
        [{"key": "a", "entry": "acp_spawn", "agent": "demo", "task": "Reply with exactly A"},
         EntryRequest(entry="bash", task="make test")],
        executor=RayExecutor(address="head:6379"),
        retries=1,
    )

The promises, whatever the executor does:

- one :class:`~acp_bridge.SubtaskResult` per task, in the order given, with
  ``meta.batch = {id, key, index, node, attempts}``; a task's failure is its envelope, never an
  exception (a malformed task is a :class:`~acp_bridge.ConfigError` before anything runs);
- no silent re-run: an attempt whose node was lost (``node_lost``, or ``lost``: the process
  running it died) runs again elsewhere only when ``retries`` allows, and
  ``meta.batch.attempts`` counts; any other failure is the task's own result;
- an executor that cannot run anything (an unreachable cluster) gives every task an
  ``executor_error`` envelope saying why;
- ``cancel`` set (Ctrl-C): running tasks are cancelled where they run, tasks not started
  are not started; both end ``cancelled`` with ``meta.batch.interrupted`` (one that never
  started is not a run: it has no row in the run store);
- every task is recorded in this machine's run store (:mod:`.store_records`);
- when the host traces with OpenTelemetry, the batch is one span and each task a span under
  it (``spans``: their names; compare and smoke name theirs), with the task's key, node and
  status, and a task run in this process is traced under its own.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import TaskGroup

from acp_bridge._acp.session.tracing import Tracing, set_attributes, set_status
from acp_bridge._batch.executor import Executor, LocalExecutor, Session
from acp_bridge._batch.store_records import TaskRecord
from acp_bridge._batch.tasks import Keyed, TaskLike, keyed
from acp_bridge._entries.enveloped import check_task_id
from acp_bridge._entries.sync import synchronous
from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import Meta, SubtaskResult, failed, from_error, new_task_id
from acp_bridge.errors import ErrorCode, ExecutorError

MAX_STARTED = 1024
"""Tasks under way at once in this process when neither the batch nor its executor limits
them (the Ray executor's window does, further on): each costs a few KB while it waits, and
100 000 started at once held ~8 KB each."""

Spans = tuple[str, str]
"""The names of a batch's span and of each task's span."""
BATCH_SPANS: Spans = ("acp_bridge.batch", "acp_bridge.batch.task")

RETRIED = frozenset({ErrorCode.NODE_LOST, ErrorCode.LOST})
"""Error codes of attempts the batch may run again (when ``retries`` allows): the task's
node or the process running it was lost, so its own result is unknown."""

ResultHook = Callable[[SubtaskResult], None]
Progress = Callable[[str, Keyed, "str | None", "SubtaskResult | None"], None]
"""``progress(what, task, node, envelope)``: ``started`` (on ``node``), ``retrying``,
``ended`` (with its envelope)."""


@dataclass
class TaskOutcome:
    """A task's final envelope (``meta.batch`` filled in) and its inspection."""

    task: Keyed
    envelope: SubtaskResult
    inspection: Any = None


async def run_batch(
    tasks: Sequence[Keyed],
    *,
    executor: Executor | None = None,
    config: LoadedConfig | None = None,
    concurrency: int | None = None,
    retries: int = 0,
    on_result: ResultHook | None = None,
    progress: Progress | None = None,
    cancel: anyio.Event | None = None,
    on_outcome: Callable[[TaskOutcome], None] | None = None,
    spans: Spans = BATCH_SPANS,
    keep: bool = True,
    batch_id: str | None = None,
) -> list[TaskOutcome]:
    """Run ``tasks``; an outcome for each, in their order (see the module docstring).
    ``on_outcome``: like ``on_result``, with what the task's ``inspect`` found (called
    inside the task's span). ``keep`` False: the outcomes are only handed to the hooks,
    and none is returned (an envelope kept until the batch ends is ~4.5 KB: 100 000 of
    them, half a GB). ``batch_id``: the id every task's row and ``meta.batch.id`` carry
    (default: a new ``batch_…``; a comparison passes its ``cmp_…``)."""
    if retries < 0:
        raise ExecutorError(f"retries must be 0 or more, got {retries}")
    if concurrency is not None and concurrency < 1:
        raise ExecutorError(f"concurrency must be 1 or more, got {concurrency}")
    batch = _Batch(tasks, retries, on_result, progress, cancel or anyio.Event(), config)
    batch.on_outcome = on_outcome
    batch.keep = keep
    batch.batch_id = batch_id or new_batch_id()
    batch.task_span = spans[1]
    with batch.tracing.span(spans[0], **{"acp.batch.tasks": len(tasks)}) as span:
        try:
            async with (executor or LocalExecutor()).open(config) as session:
                set_attributes(span, **{"acp.executor": getattr(executor, "name", "local")})
                await batch.run_all(session, concurrency)
        except ExecutorError as exc:  # the executor as a whole: every task not ended says why
            set_status(span, False, str(exc))
            await batch.refuse_rest(exc)
    return [outcome for outcome in batch.outcomes if outcome is not None]


class _Batch:
    def __init__(
        self,
        tasks: Sequence[Keyed],
        retries: int,
        on_result: ResultHook | None,
        progress: Progress | None,
        cancel: anyio.Event,
        config: LoadedConfig | None,
    ) -> None:
        self.tasks = tasks
        self.retries = retries
        self.on_result = on_result
        self.progress = progress or (lambda what, task, node, envelope: None)
        self.cancel = cancel
        self.config = config
        self.outcomes: list[TaskOutcome | None] = [None] * len(tasks)
        self.ended = bytearray(len(tasks))
        """1 for each task that has its outcome (kept in :attr:`outcomes` only if ``keep``)."""
        self.keep = True
        self.task_ids = [_task_id(item) for item in tasks]
        self.records: dict[int, TaskRecord] = {}
        """The rows of tasks that began waiting: one executor's failure ends them in the
        same row (a row already ``running`` gets its envelope, not a second row)."""
        self.writes: TaskGroup | None = None
        self.on_outcome: Callable[[TaskOutcome], None] | None = None
        self.tracing = Tracing.from_host()
        self.task_span = BATCH_SPANS[1]
        self.batch_id = ""

    async def run_all(self, session: Session, concurrency: int | None) -> None:
        limit = concurrency or session.default_concurrency
        limiter = anyio.CapacityLimiter(limit) if limit else None
        # A task is started only when one ends past the bound: a waiting task costs nothing
        # but its place in the list.
        started = anyio.Semaphore(limit or MAX_STARTED)
        async with anyio.create_task_group() as tg:
            self.writes = tg  # the store's rows are begun beside the tasks
            for position, item in enumerate(self.tasks):
                await started.acquire()
                tg.start_soon(self._started, started, position, item, session, limiter)

    async def _started(
        self,
        started: anyio.Semaphore,
        position: int,
        item: Keyed,
        session: Session,
        limiter: anyio.CapacityLimiter | None,
    ) -> None:
        try:
            await self._task(position, item, session, limiter)
        finally:
            started.release()

    async def _task(
        self, position: int, item: Keyed, session: Session, limiter: anyio.CapacityLimiter | None
    ) -> None:
        task_id = self.task_ids[position]
        request = item.task.request
        record = TaskRecord(task_id, request.task, request.entry, request.agent, self.batch_id)
        self.records[position] = record
        began = time.monotonic()
        if limiter is not None:
            await limiter.acquire()
        names = {
            "acp.batch.key": item.key,
            "acp.batch.index": item.index,
            "acp.task_id": task_id,
            "acp.entry": request.entry,
            "acp.agent": request.agent,
        }
        with self.tracing.span(self.task_span, **names) as span:
            try:
                outcome = await self._attempts(item, task_id, session, record)
            except Exception as exc:  # an executor's bug: the task still gets its envelope
                error = f"internal error in the executor: {type(exc).__name__}: {exc}"
                meta = _meta(item)
                envelope = failed(error, ErrorCode.INTERNAL_ERROR, task_id=task_id, meta=meta)
                outcome = TaskOutcome(item, _stamp(envelope, item, None, 1, began))
            finally:
                if limiter is not None:
                    limiter.release()
            ended = outcome.envelope
            set_attributes(
                span,
                **{
                    "acp.node": ended.meta.node,
                    "acp.status": ended.status,
                    "acp.error_code": ended.meta.error_code,
                    "acp.batch.attempts": (ended.meta.batch or {}).get("attempts"),
                },
            )
            set_status(span, ended.ok, ended.error)
            await self._end(position, outcome, record)
        self.records.pop(position, None)

    async def _attempts(
        self, item: Keyed, task_id: str, session: Session, record: TaskRecord
    ) -> TaskOutcome:
        began = time.monotonic()
        attempts = 0
        where = [""]  # the cwd of the attempt that started last
        while True:
            if self.cancel.is_set():
                return self._interrupted(item, task_id, attempts, began)
            refusal = session.refusal(item.task)
            if refusal is not None:
                envelope = from_error(refusal, task_id=task_id, meta=_meta(item))
                return TaskOutcome(item, _stamp(envelope, item, None, attempts, began))
            attempts += 1

            def started(node: str, cwd: str) -> None:
                where[0] = cwd
                self.progress("started", item, node, None)
                if not record.begun:  # the row is the task's, whichever attempt ends it
                    record.begun = anyio.Event()
                    assert self.writes is not None
                    self.writes.start_soon(record.begin, cwd, self.config)

            attempt = await session.run(item.task, task_id, started=started, cancel=self.cancel)
            code = attempt.envelope.meta.error_code
            if code in RETRIED and attempts <= self.retries and not self.cancel.is_set():
                self.progress("retrying", item, attempt.node, attempt.envelope)
                continue
            envelope = _stamp(attempt.envelope, item, attempt.node, attempts, None, where[0])
            if self.cancel.is_set() and code == ErrorCode.CANCELLED:
                envelope = _mark_interrupted(envelope)
            return TaskOutcome(item, envelope, attempt.inspection)

    def _interrupted(self, item: Keyed, task_id: str, attempts: int, began: float) -> TaskOutcome:
        error = "the batch was interrupted before this task started"
        envelope = failed(error, ErrorCode.CANCELLED, task_id=task_id, meta=_meta(item))
        return TaskOutcome(item, _mark_interrupted(_stamp(envelope, item, None, attempts, began)))

    async def _end(self, position: int, outcome: TaskOutcome, record: TaskRecord) -> None:
        outcome.envelope = _with_batch_id(outcome.envelope, self.batch_id)
        batch = outcome.envelope.meta.batch or {}
        if record.begun is not None or not (batch.get("interrupted") and not batch["attempts"]):
            await record.ended(outcome.envelope)
        # else interrupted before it started: no run, no row. Thousands of rows, each its own
        # commit, kept a Ctrl-C of a big batch waiting for seconds after the second signal.
        self.ended[position] = 1
        if self.keep:
            self.outcomes[position] = outcome
        self.progress("ended", outcome.task, outcome.envelope.meta.node, outcome.envelope)
        if self.on_result is not None:
            self.on_result(outcome.envelope)
        if self.on_outcome is not None:
            self.on_outcome(outcome)

    async def refuse_rest(self, exc: ExecutorError) -> None:
        for position, item in enumerate(self.tasks):
            if self.ended[position]:
                continue
            task_id = self.task_ids[position]
            envelope = from_error(exc, task_id=task_id, meta=_meta(item))
            outcome = TaskOutcome(item, _stamp(envelope, item, None, 0, None))
            request = item.task.request
            record = self.records.get(position) or TaskRecord(
                task_id, request.task, request.entry, request.agent, self.batch_id
            )
            await self._end(position, outcome, record)


def _task_id(item: Keyed) -> str:
    given = item.task.request.task_id
    return new_task_id() if given is None else check_task_id(given)


def _meta(item: Keyed) -> Meta:
    request = item.task.request
    return Meta(entry=request.entry, agent=request.agent)


def _stamp(
    envelope: SubtaskResult,
    item: Keyed,
    node: str | None,
    attempts: int,
    began: float | None,
    cwd: str = "",
) -> SubtaskResult:
    """``envelope`` with ``meta.batch`` (and a duration, for an envelope made here)."""
    node = node or envelope.meta.node
    info: dict[str, Any] = {"key": item.key, "index": item.index, "node": node}
    info["attempts"] = attempts
    if cwd:
        info["cwd"] = cwd  # on the node (its workspace is gone unless kept)
    update: dict[str, Any] = {"batch": info, "node": node}
    if began is not None:
        update["duration_ms"] = int((time.monotonic() - began) * 1000)
    update["entry"] = envelope.meta.entry or item.task.request.entry
    return envelope.model_copy(update={"meta": envelope.meta.model_copy(update=update)})


def new_batch_id() -> str:
    """A fresh batch id: ``batch_`` and 12 hex digits."""
    return f"batch_{secrets.token_hex(6)}"


def _with_batch_id(envelope: SubtaskResult, batch_id: str) -> SubtaskResult:
    info = {**(envelope.meta.batch or {}), "id": batch_id}
    return envelope.model_copy(update={"meta": envelope.meta.model_copy(update={"batch": info})})


def _mark_interrupted(envelope: SubtaskResult) -> SubtaskResult:
    info = {**(envelope.meta.batch or {}), "interrupted": True}
    return envelope.model_copy(update={"meta": envelope.meta.model_copy(update={"batch": info})})


async def batch(
    requests: Iterable[TaskLike],
    *,
    executor: Executor | None = None,
    concurrency: int | None = None,
    retries: int = 0,
    on_result: ResultHook | None = None,
    config: LoadedConfig | None = None,
    cancel: anyio.Event | None = None,
) -> list[SubtaskResult]:
    """Run every request on ``executor`` (default: :class:`LocalExecutor`, in this process)
    and return one envelope per request, in their order; see :mod:`acp_bridge._batch.batch_run`.

    A request is a :class:`BatchTask`, an :class:`~acp_bridge.EntryRequest`, or JSON data
    (the request's fields plus ``key`` and ``workspace``). ``concurrency``: tasks at once
    (default: the executor's). ``retries``: how often a task whose node was lost may run
    again elsewhere. ``on_result``: called with each envelope as its task ends (in the order
    they end). ``cancel``: set it to stop the batch (Ctrl-C)."""
    tasks = keyed(requests)
    outcomes = await run_batch(
        tasks,
        executor=executor,
        config=config,
        concurrency=concurrency,
        retries=retries,
        on_result=on_result,
        cancel=cancel,
    )
    return [outcome.envelope for outcome in outcomes]


batch_sync = synchronous(batch)
