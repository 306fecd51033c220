"""The Ray executor: a batch's tasks spread over the nodes of a Ray cluster
(docs/explanation/batches.md).

::

    results = await batch(tasks, executor=RayExecutor(address="10.0.0.5:6379"), retries=1)

This process joins the cluster as a driver (it must run on a node of it, like any Ray
driver), and each task becomes one Ray task (:mod:`.node_task`) that asks for the custom
resources of :mod:`.placement`, with Ray's own retries off: the bridge decides what runs
again. Opening the executor checks, within seconds, what would otherwise hang: the address
must answer (``ray.init`` itself retries an unreachable one for minutes), and a runtime
environment given here must be usable on a node (one probe task). Either failing gives
every task ``executor_error`` with the reason.

Ray is imported here and only here (and in the modules this one imports): nothing else in
acp-bridge loads it, and ``import acp_bridge`` never does.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import signal
import socket
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from acp_bridge._batch.executor import Attempt, Session, Started
from acp_bridge._batch.ray.placement import NodeView, nodes_from_ray, requirements, why_not
from acp_bridge._batch.ray.window import MIN_WINDOW, Window, window_size
from acp_bridge._batch.tasks import BatchTask
from acp_bridge._batch.workspace import MAX_UPLOAD_BYTES, pack
from acp_bridge._entries.enveloped import END_GRACE
from acp_bridge._os.race import race
from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import Meta, failed, from_error
from acp_bridge.errors import BridgeError, ErrorCode, ExecutorError

NAMESPACE = "acp-bridge"
NODES_EVERY = 2.0
"""Seconds between looks at the cluster's nodes while the batch has tasks to run. Ray offers
a driver no notification of node changes, so the batch asks (one small GCS call), sizes its
submission window to the live nodes' slots (:mod:`.window`: a node that joins is used at
once), and wakes the tasks still queued when the nodes changed: one whose agent no live
node offers any more is refused instead of waiting for ever."""


GCS_TIMEOUT = 10.0
"""Seconds the cluster's control store (the GCS) may take to give the node list. Past them
the cluster counts as lost and the batch ends: every task not ended gets ``executor_error``.
Ray's own clients wait for a lost GCS for 60 s and then end the whole process (exit 1),
before the results file was written."""


class RayExecutor:
    """Runs a batch's tasks on a Ray cluster.

    ``address``: the cluster's ``HOST:PORT`` (default: ``$RAY_ADDRESS``, else the cluster
    this machine belongs to). ``grace``: seconds past a task's own timeout before its node
    counts as lost (the run itself ends by timeout + 4 s there). ``setup_timeout`` /
    ``measure_timeout``: bounds of making a workspace and of measuring its changes.
    ``runtime_env``: Ray's, for every task (probed once on opening). ``max_upload_bytes``:
    the largest uploaded workspace, packed. ``connect_timeout``: seconds to reach the
    cluster.
    """

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        grace: float = END_GRACE + 6.0,
        setup_timeout: float = 300.0,
        measure_timeout: float = 120.0,
        runtime_env: dict[str, Any] | None = None,
        max_upload_bytes: int = MAX_UPLOAD_BYTES,
        connect_timeout: float = 15.0,
    ) -> None:
        for name, value in (
            ("grace", grace),
            ("setup_timeout", setup_timeout),
            ("measure_timeout", measure_timeout),
            ("connect_timeout", connect_timeout),
        ):
            if not value > 0:
                raise ExecutorError(f"RayExecutor: {name} must be a positive number of seconds")
        self.address = address
        self.grace = grace
        self.setup_timeout = setup_timeout
        self.measure_timeout = measure_timeout
        self.runtime_env = runtime_env
        self.max_upload_bytes = max_upload_bytes
        self.connect_timeout = connect_timeout

    @asynccontextmanager
    async def open(self, config: LoadedConfig | None) -> AsyncIterator[Session]:
        session = _RaySession(self)
        await session.connect()
        try:
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(session.watch_nodes)
                    yield session
                    tg.cancel_scope.cancel()
            except BaseExceptionGroup as group:  # the cluster lost: the batch hears it alone
                lost = group.subgroup(ExecutorError)
                if lost is None or lost.exceptions != group.exceptions:
                    raise
                raise lost.exceptions[0] from None
        finally:
            # On this thread, blocking it briefly (ray.shutdown takes ~0.1 s): this thread
            # drops the batch's object refs. Ray's shutdown ends the core worker first and
            # forgets it after; a ref dropped here in between, with shutdown in a worker
            # thread, reached the ended core worker, which exits the whole process (code 1,
            # no traceback) — a host program, or the CLI in the middle of its interrupt.
            session.close()


class _NoSigtermNotice(logging.Filter):
    """``ray.init`` runs in a worker thread on purpose: from the main thread it would take
    SIGTERM over (``sys.exit``), and the batch's own graceful cancel would never run. Ray
    warns about that on every connection; the warning is dropped, nothing else."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("SIGTERM handler is not set")


def _sigterm_back_from_ray() -> None:
    """Give SIGTERM back to the handler Python has for it, once Ray's core worker exists.

    Why: the core worker that ``ray.init`` makes installs abseil's failure signal handler,
    for SIGTERM as well as the crash signals. On a SIGTERM it prints a stack, hands the
    signal to the handler before it (ours), and arms a 3-second alarm that aborts the
    process (``alarm_on_failure_secs``: it takes any such signal for the process's end). A
    batch interrupted by SIGTERM cancels its tasks on their nodes and writes their
    envelopes; when that took more than 3 s (a loaded machine, an agent slow to stop) the
    CLI died of SIGABRT, exit -6, the envelopes not written. Setting Python's own handler
    again (the CLI's; SIG_DFL or SIG_IGN as a host left it) takes abseil's off SIGTERM; the
    crash signals stay Ray's. Only the main thread may set a handler: a host connecting
    from another thread keeps Ray's.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    handler = signal.getsignal(signal.SIGTERM)  # Python's, not the C-level one Ray put in
    if handler is not None:  # None: set from outside Python, not ours to restore
        signal.signal(signal.SIGTERM, handler)


class _RaySession:
    def __init__(self, executor: RayExecutor) -> None:
        self.executor = executor
        self.nodes: list[NodeView] = []
        self.suspects: set[str] = set()
        self.waiting = 0
        self.control: Any = None
        self.owns_connection = False
        self.placement_changed = anyio.Event()
        self.cancel_told = False
        self.lost = False
        """The GCS stopped answering: nothing more is asked of the cluster."""
        self.window = Window(MIN_WINDOW)
        self.tried: set[str] = set()
        """Tasks with an attempt so far: another one is a retry, and enters the window first."""

    @property
    def default_concurrency(self) -> int | None:
        return None  # the window (:mod:`.window`) keeps what Ray holds to the nodes' slots

    async def connect(self) -> None:
        address = self.executor.address
        if address and ":" in address and "://" not in address:
            await self._reachable(address)
        try:
            with anyio.fail_after(self.executor.connect_timeout + 15):
                await anyio.to_thread.run_sync(self._init, abandon_on_cancel=True)
        except TimeoutError:
            raise ExecutorError(
                f"Ray did not connect to {address or 'its cluster'} in time"
            ) from None
        if self.owns_connection:  # a host that connected Ray itself chose its handlers
            _sigterm_back_from_ray()
        self.nodes = await anyio.to_thread.run_sync(self._nodes)
        self.window.resize(window_size(self._usable()))
        if self.executor.runtime_env is not None:
            await self._probe()

    async def _reachable(self, address: str) -> None:
        host, _, port = address.rpartition(":")

        def dial() -> None:
            with socket.create_connection((host, int(port)), timeout=self.executor.connect_timeout):
                pass

        try:
            await anyio.to_thread.run_sync(dial)
        except (OSError, ValueError) as exc:
            raise ExecutorError(f"cannot reach the Ray cluster at {address}: {exc}") from None

    def _init(self) -> None:
        try:
            import ray
        except ImportError:
            raise ExecutorError(
                "the ray executor needs Ray: pip install 'acp-bridge[ray]'"
            ) from None
        from acp_bridge._batch.ray.node_task import BatchControl

        logging.getLogger("ray._private.worker").addFilter(_NoSigtermNotice())
        try:
            if not ray.is_initialized():
                ray.init(
                    address=self.executor.address,
                    namespace=NAMESPACE,
                    logging_level=logging.WARNING,
                    log_to_driver=False,
                    runtime_env=self.executor.runtime_env,
                )
                self.owns_connection = True
            here = ray.get_runtime_context().get_node_id()
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            strategy = NodeAffinitySchedulingStrategy(node_id=here, soft=True)
            self.control = BatchControl.options(  # type: ignore[attr-defined]
                scheduling_strategy=strategy, max_concurrency=100_000
            ).remote()
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ExecutorError(f"cannot connect to the Ray cluster: {exc}") from None

    def _nodes(self) -> list[NodeView]:
        import ray

        return nodes_from_ray(ray.nodes())  # type: ignore[no-untyped-call]

    async def _probe(self) -> None:
        import ray

        from acp_bridge._batch.ray.node_task import probe

        ref = probe.remote()
        try:
            with anyio.fail_after(self.executor.connect_timeout * 4):
                await ref
        except TimeoutError:
            ray.cancel(ref, force=True)
            raise ExecutorError(
                f"no node started a task with the runtime environment within "
                f"{self.executor.connect_timeout * 4:g} s"
            ) from None
        except ray.exceptions.RayError as exc:
            lines = [line for line in str(exc).splitlines() if line.strip()]
            raise ExecutorError(
                f"the runtime environment cannot be used: {lines[-1] if lines else exc}"
            ) from None

    def close(self) -> None:
        import ray

        control, self.control = self.control, None
        if self.lost:
            # Each of these would wait for the GCS until Ray ends the process (exit 1), and
            # so would the shutdown Ray runs at the interpreter's exit: the connection is
            # left, and the process that made it ends as soon as its caller is done.
            if self.owns_connection:
                atexit.unregister(ray.shutdown)
            return
        with contextlib.suppress(Exception):
            if control is not None:
                ray.kill(control)
        del control  # its handle goes before the connection does
        if self.owns_connection:
            ray.shutdown()

    async def watch_nodes(self) -> None:
        """Keep the node list fresh while tasks wait for a node; wake them on a change."""
        while True:
            await anyio.sleep(NODES_EVERY)
            if not self.waiting:
                continue
            nodes = await self._poll_nodes()
            if [(n.node_id, n.alive) for n in nodes] != [(n.node_id, n.alive) for n in self.nodes]:
                self.nodes = nodes
                self.window.resize(window_size(self._usable()))
                changed, self.placement_changed = self.placement_changed, anyio.Event()
                changed.set()

    async def _poll_nodes(self) -> list[NodeView]:
        """The node list, or :class:`ExecutorError` when the GCS does not give it in time.

        Asked from a daemon thread of its own, not a worker thread of anyio's: a call to a
        lost GCS returns only when Ray gives up (60 s), and the interpreter's exit waits for
        every thread that is not a daemon."""
        answered = anyio.Event()
        answer: list[list[NodeView] | Exception] = []
        token = anyio.lowlevel.current_token()

        def ask() -> None:
            try:
                answer.append(self._nodes())
            except Exception as exc:  # Ray's errors of a lost connection: any is the loss
                answer.append(exc)
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                anyio.from_thread.run_sync(answered.set, token=token)

        threading.Thread(target=ask, name="acp-bridge node list", daemon=True).start()
        with anyio.move_on_after(GCS_TIMEOUT):
            await answered.wait()
        if answer and not isinstance(answer[0], Exception):
            return answer[0]
        why = f"{type(answer[0]).__name__}: {answer[0]}" if answer else "no answer"
        self.lost = True
        raise ExecutorError(
            f"lost the Ray cluster: its control store (GCS) gave no node list within "
            f"{GCS_TIMEOUT:g} s ({why})"
        )

    def refusal(self, task: BatchTask) -> BridgeError | None:
        why = why_not(task.request, self._usable())
        return None if why is None else ExecutorError(why)

    def _usable(self) -> list[NodeView]:
        return [n for n in self.nodes if n.node_id not in self.suspects]

    async def run(
        self, task: BatchTask, task_id: str, *, started: Started, cancel: anyio.Event
    ) -> Attempt:
        retry = task_id in self.tried
        self.tried.add(task_id)
        self.waiting += 1
        try:
            entered = await race(lambda: self.window.enter(first=retry), cancel.wait)
            if not entered.finished:
                request = task.request
                meta = Meta(entry=request.entry, agent=request.agent)
                error = "the batch was interrupted before this task started"
                return Attempt(failed(error, ErrorCode.CANCELLED, task_id=task_id, meta=meta), None)
            try:
                return await self._submit(task, task_id, started, cancel)
            finally:
                self.window.leave()
        finally:
            self.waiting -= 1

    async def _submit(
        self, task: BatchTask, task_id: str, started: Started, cancel: anyio.Event
    ) -> Attempt:
        """One attempt in Ray, followed to its end (its place in the window held)."""
        from acp_bridge._batch.ray.attempts import AttemptFollower, PhaseLimits
        from acp_bridge._batch.ray.node_task import run_on_node

        request = task.request
        meta = Meta(entry=request.entry, agent=request.agent)
        try:
            upload = await self._upload(task)
        except BridgeError as exc:
            return Attempt(from_error(exc, task_id=task_id, meta=meta), None)
        # Checked again as it enters (no await from here until the follower watches the
        # nodes): they may have changed while it waited, and a task in Ray's queue hears
        # only of the changes after it was submitted.
        why = why_not(request, self._usable())
        if why is not None:
            return Attempt(from_error(ExecutorError(why), task_id=task_id, meta=meta), None)
        options: dict[str, Any] = {
            "resources": requirements(task.request),
            "scheduling_strategy": "SPREAD",
            "max_retries": 0,
            "name": f"acp-bridge {task_id}",
        }
        if self.suspects:  # a node that froze under an earlier attempt gets no more
            options["label_selector"] = {
                "ray.io/node-id": f"!in({','.join(sorted(self.suspects))})"
            }
        generator = run_on_node.options(**options).remote(task, task_id, upload, self.control)
        settings = self.executor
        follower = AttemptFollower(
            PhaseLimits(settings.grace, settings.setup_timeout, settings.measure_timeout),
            generator,
            task,
            task_id,
            started,
            cancel,
            infeasible=lambda: why_not(task.request, self._usable()),
            suspect=self.suspect,
            tell_cancel=self.tell_cancel,
            changes=lambda: self.placement_changed,
        )
        return await follower.follow()

    def suspect(self, node: str) -> None:
        """``node`` froze under an attempt: later attempts avoid it, and its slots leave
        the window."""
        self.suspects.add(node)
        self.window.resize(window_size(self._usable()))

    def tell_cancel(self) -> None:
        """The control actor hears of the cancel, once: every started task's node ends its
        run gracefully."""
        if self.cancel_told:
            return
        self.cancel_told = True
        with contextlib.suppress(Exception):
            self.control.cancel.remote()

    async def _upload(self, task: BatchTask) -> Any:
        """The task's uploaded workspace, in the object store (None: nothing to upload)."""
        space = task.workspace
        if space is None or space.upload is None:
            return None
        import ray

        data = await anyio.to_thread.run_sync(pack, space.upload, self.executor.max_upload_bytes)
        return await anyio.to_thread.run_sync(ray.put, data)
