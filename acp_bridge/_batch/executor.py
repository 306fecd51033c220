"""What an executor does for a batch, and the local one.

An executor is opened once per batch (connecting to a cluster, say) and then runs one
*attempt* of a task at a time, as often as the batch asks, concurrently: it reports when
the task starts on its node and returns its envelope, with ``meta.node`` set, whatever
happened there. Before submitting, a batch asks whether the executor can run a task at all
(:meth:`Session.refusal`): a remote executor refuses an agent that no live node offers.

The local executor runs tasks in this process, through the entries table like any front
end, under the limits the run store's lanes keep for detached runs: the profile's
``max_concurrent`` per agent and ``runs.max_concurrent`` for all runs together.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import anyio

from acp_bridge._batch.node_run import effective_timeout, hostname, run_task_here
from acp_bridge._batch.tasks import BatchTask
from acp_bridge._os.race import race
from acp_bridge._runs import foreground
from acp_bridge._runs.store import lanes
from acp_bridge.config import LoadedConfig, load_config
from acp_bridge.envelope import Meta, SubtaskResult, failed
from acp_bridge.errors import BridgeError, ConfigError, ErrorCode

GUARD_MARGIN = 30.0
"""Seconds past a task's own timeout before the local executor gives up on it: a run ends
by its timeout + 4 s whatever its worker does, so only a bug reaches this."""

Started = Callable[[str, str], None]
"""``started(node, cwd)``: the attempt's task is about to start on ``node``, in ``cwd``."""


@dataclass(frozen=True)
class Attempt:
    """How one attempt of a task ended: its envelope (``meta.node`` set where known), the
    node, and what the task's ``inspect`` found in its workspace."""

    envelope: SubtaskResult
    node: str | None
    inspection: Any = None


class Session(Protocol):
    """An executor opened for one batch."""

    @property
    def default_concurrency(self) -> int | None:
        """Attempts at once when the batch does not say (None: as many as there are)."""

    def refusal(self, task: BatchTask) -> BridgeError | None:
        """Why this executor cannot run ``task`` at all (checked before each attempt)."""

    async def run(
        self, task: BatchTask, task_id: str, *, started: Started, cancel: anyio.Event
    ) -> Attempt:
        """One attempt. ``cancel``: end it gracefully (its envelope: ``cancelled``)."""


class Executor(Protocol):
    """Where a batch runs its tasks: :class:`LocalExecutor` (this process, the default),
    :class:`~acp_bridge.RayExecutor` (a Ray cluster), or any class with these two members.

    ``open`` is entered once per batch and yields a :class:`Session`, which runs one attempt
    of a task at a time, concurrently, and reports the node each ran on (see the module
    docstring).
    """

    name: str
    """What the command line calls this executor (``local``, ``ray``)."""

    def open(self, config: LoadedConfig | None) -> AbstractAsyncContextManager[Session]:
        """The executor, ready for one batch; :class:`~acp_bridge.ExecutorError` when it
        cannot be (an unreachable cluster)."""


class LocalExecutor:
    """Runs every task in this process (the default executor)."""

    name = "local"

    def __init__(self, *, concurrency: int = 4) -> None:
        self.concurrency = concurrency

    @asynccontextmanager
    async def open(self, config: LoadedConfig | None) -> AsyncIterator[Session]:
        if config is None:
            try:
                config = await anyio.to_thread.run_sync(load_config)
            except BridgeError:
                config = None  # each run loads it again, and ends with its config_error
        yield _LocalSession(config, self.concurrency)


class _LocalSession:
    def __init__(self, config: LoadedConfig | None, concurrency: int) -> None:
        self.config = config
        self.node = hostname()
        self._concurrency = concurrency
        self._lanes: dict[str, anyio.CapacityLimiter | None] = {}

    @property
    def default_concurrency(self) -> int | None:
        return self._concurrency

    def refusal(self, task: BatchTask) -> BridgeError | None:
        return None

    def _limiters(self, task: BatchTask) -> list[anyio.CapacityLimiter]:
        """The lane limiters ``task`` must hold: its agent's, and the global one."""
        if self.config is None:
            return []
        request = task.request
        lane = lanes.lane_for(request.entry, request.agent)
        found = []
        for name in (lane, lanes.GLOBAL):
            if name not in self._lanes:
                self._lanes[name] = self._limit(name, request.agent)
            limiter = self._lanes[name]
            if limiter is not None:
                found.append(limiter)
        return found

    def _limit(self, lane: str, agent: str | None) -> anyio.CapacityLimiter | None:
        assert self.config is not None
        if lane == lanes.GLOBAL:
            limit = self.config.config.runs.max_concurrent
        else:
            try:
                limit = self.config.profiles.get(agent).profile.max_concurrent if agent else None
            except BridgeError:
                limit = None  # the run reports the broken or unknown profile
        return None if limit is None else anyio.CapacityLimiter(limit)

    async def run(
        self, task: BatchTask, task_id: str, *, started: Started, cancel: anyio.Event
    ) -> Attempt:
        limiters = self._limiters(task)
        for limiter in limiters:
            await limiter.acquire()
        try:
            # The batch records the task itself, with where it ran: the entry wrapper's
            # reporter leaves this one out.
            with foreground.recorded_elsewhere(task_id):
                guard = effective_timeout(task.request, self.config) + GUARD_MARGIN
                raced = await race(
                    lambda: run_task_here(
                        task,
                        task_id,
                        config=self.config,
                        cancel=cancel,
                        started=lambda cwd: started(self.node, cwd),
                    ),
                    timeout=guard,
                )
        finally:
            for limiter in reversed(limiters):
                limiter.release()
        if raced.value is None:  # a bug below: the run outlived its own deadline
            error = f"did not finish within {guard:g}s (the executor's guard)"
            meta = Meta(entry=task.request.entry, agent=task.request.agent, node=self.node)
            return Attempt(
                failed(error, ErrorCode.INTERNAL_ERROR, task_id=task_id, meta=meta), self.node
            )
        finished = raced.value
        meta = finished.envelope.meta.model_copy(update={"node": self.node})
        return Attempt(
            finished.envelope.model_copy(update={"meta": meta}), self.node, finished.inspection
        )


def executor_named(name: str, **settings: Any) -> Executor:
    """The executor ``name``, made with ``settings`` (those its class takes);
    :class:`~acp_bridge.ConfigError` for an unknown name or a setting it does not take."""
    import importlib
    import inspect

    from acp_bridge._batch import EXECUTORS

    if name not in EXECUTORS:
        raise ConfigError(f"no executor named {name!r}; executors: {', '.join(EXECUTORS)}")
    module, _, attribute = EXECUTORS[name].partition(":")
    cls = getattr(importlib.import_module(module), attribute)
    takes = inspect.signature(cls).parameters
    unknown = sorted(setting for setting in settings if setting not in takes)
    if unknown:
        raise ConfigError(f"the {name} executor takes no {', '.join(unknown)}")
    executor: Executor = cls(**settings)
    return executor
