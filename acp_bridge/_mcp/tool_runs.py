"""A synchronous tool's run in progress, owned by the server rather than by one request.

Why not simply run the entry inside the ``tools/call`` handler: on the 2026-07-28 protocol a
server cannot send the host a request mid-call. A question (an ``ask`` permission, the
agent's own elicitation) goes back as the call's ``input_required`` result, and the answers
come in a *new* ``tools/call`` that carries them — while the agent waits, mid-turn. So the run
lives in the server's task group (:class:`ToolRuns`, entered with the server's lifespan) as a
:class:`ToolRun`, and each request that follows it (:mod:`.relay`) takes what it has to tell:
progress (from live events), log lines, questions, and at last the envelope. On the
handshake protocols one request follows the tool run from start to end.

Bounds: events queue up to ``MAX_QUEUED`` items (message chunks merge into one line; beyond
that, progress lines are dropped and counted, never questions or the envelope); a question
waits ``ask_timeout`` seconds for its answer, then takes the headless decision; a finished
tool run nobody came back for is forgotten after ``KEEP`` seconds. On shutdown every tool run is
cancelled the graceful way and given ``SHUTDOWN_GRACE`` seconds to finish.
"""

from __future__ import annotations

import itertools
import secrets
import threading
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import anyio
import mcp.types as types
from anyio.abc import TaskGroup

from acp_bridge._mcp.progress import CHUNKS, clip, describe
from acp_bridge.envelope import Meta, SubtaskResult, failed
from acp_bridge.errors import ErrorCode
from acp_bridge.events import Event

MAX_QUEUED = 1000
KEEP = 600.0
SHUTDOWN_GRACE = 10.0

ElicitParams = types.ElicitRequestFormParams | types.ElicitRequestURLParams


@dataclass(frozen=True)
class Progress:
    text: str
    kind: str = ""


@dataclass(frozen=True)
class LogLine:
    level: types.LoggingLevel
    logger: str
    text: str


class Question:
    """One thing the host is asked, and its answer (None: no answer; the safe default)."""

    def __init__(self, key: str, params: ElicitParams) -> None:
        self.key = key
        self.params = params
        self.sent = False
        """Sent to the host as part of an ``input_required`` result (2026-07-28 rounds)."""
        self.answer: types.ElicitResult | None = None
        self.answered = anyio.Event()

    def settle(self, answer: types.ElicitResult | None) -> None:
        if not self.answered.is_set():
            self.answer = answer
            self.answered.set()


@dataclass(frozen=True)
class Finished:
    result: SubtaskResult


Item = Progress | LogLine | Question | Finished


class ToolRun:
    """One run and what it has to tell whoever follows it."""

    def __init__(self, *, ask_timeout: float) -> None:
        self.id = f"toolrun_{secrets.token_hex(16)}"  # unguessable: it is the request_state
        self.ask_timeout = ask_timeout
        self.cancel = anyio.Event()
        self.finished = anyio.Event()
        self.collected = anyio.Event()
        self.result: SubtaskResult | None = None
        self.progress = 0
        """The last progress number sent: it only grows, across rounds too."""
        self.following = False
        self.questions: dict[str, Question] = {}
        self.dropped = 0
        self._items: deque[Item] = deque()
        self._wake = anyio.Event()
        self._keys = itertools.count(1)
        self._thread = threading.get_ident()

    # --- the run's side (called on the event loop, synchronously) -----------------------

    def _push(self, item: Item) -> None:
        if isinstance(item, Progress | LogLine) and len(self._items) >= MAX_QUEUED:
            self.dropped += 1
            return
        self._items.append(item)
        self._wake.set()

    def on_event(self, event: Event) -> None:
        """The run's ``on_event``: one progress line per event, message chunks merged."""
        text = describe(event)
        if text is None:
            return
        last = self._items[-1] if self._items else None
        if event.kind in CHUNKS and isinstance(last, Progress) and last.kind == event.kind:
            self._items[-1] = Progress(clip(last.text + event.data.get("text", "")), event.kind)
            return
        self._push(Progress(text, event.kind))

    def log(self, line: LogLine) -> bool:
        """Queue a log line for the host; False from another thread (it cannot be queued)."""
        if threading.get_ident() != self._thread:
            return False
        self._push(line)
        return True

    async def ask(self, params: ElicitParams) -> types.ElicitResult | None:
        """Ask the host; its answer, or None after ``ask_timeout`` seconds."""
        question = Question(f"q{next(self._keys)}", params)
        self.questions[question.key] = question
        self._push(question)
        try:
            with anyio.move_on_after(self.ask_timeout):
                await question.answered.wait()
        finally:
            del self.questions[question.key]
        return question.answer

    def finish(self, result: SubtaskResult) -> None:
        self.result = result
        if self.dropped:  # past the bound, but the host should know it missed some
            self._items.append(
                Progress(f"({self.dropped} progress lines dropped: read too slowly)")
            )
        self._push(Finished(result))
        self.finished.set()

    # --- the follower's side -----------------------------------------------------------

    async def take(self) -> list[Item]:
        """Everything queued since the last take; waits while there is nothing."""
        while not self._items:
            self._wake = anyio.Event()
            await self._wake.wait()
        items = list(self._items)
        self._items.clear()
        return items

    def answer(self, responses: dict[str, Any] | None) -> None:
        """Answers that came with a host's next round; questions it was sent but did not
        answer get the default."""
        for key, response in (responses or {}).items():
            question = self.questions.get(key)
            if question is not None:
                question.settle(response if isinstance(response, types.ElicitResult) else None)
        for question in list(self.questions.values()):
            if question.sent:
                question.settle(None)


Run = Callable[[ToolRun], Awaitable[SubtaskResult]]

CURRENT: ContextVar[ToolRun | None] = ContextVar("acp_bridge_mcp_tool_run", default=None)
"""The tool run whose run this code is part of (log lines go to its host)."""


class ToolRuns:
    """Every tool run of one server, in the server's task group."""

    def __init__(self, tg: TaskGroup) -> None:
        self._tg = tg
        self._running: dict[str, ToolRun] = {}

    def start(self, tool_run: ToolRun, run: Run) -> None:
        self._running[tool_run.id] = tool_run
        self._tg.start_soon(self._run, tool_run, run)

    def find(self, tool_run_id: str) -> ToolRun | None:
        return self._running.get(tool_run_id)

    async def _run(self, tool_run: ToolRun, run: Run) -> None:
        CURRENT.set(tool_run)  # this task's own context: the run's tasks inherit it
        try:
            result = await run(tool_run)
        except anyio.get_cancelled_exc_class():
            tool_run.finish(_cancelled("the MCP server shut down"))
            self._running.pop(tool_run.id, None)
            raise
        tool_run.finish(result)
        # A host on 2026-07-28 rounds may still come back for the envelope.
        with anyio.move_on_after(KEEP):
            await tool_run.collected.wait()
        self._running.pop(tool_run.id, None)

    async def cancel_all(self) -> None:
        """Cancel every tool run gracefully and wait (bounded) for them to finish."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(SHUTDOWN_GRACE):
            for tool_run in list(self._running.values()):
                tool_run.cancel.set()
            for tool_run in list(self._running.values()):
                await tool_run.finished.wait()


def _cancelled(why: str) -> SubtaskResult:
    return failed(why, ErrorCode.CANCELLED, meta=Meta())


@asynccontextmanager
async def tool_runs_lifespan(_server: Any) -> AsyncIterator[ToolRuns]:
    """The server's lifespan: its tool runs' task group, ended gracefully."""
    async with anyio.create_task_group() as tg:
        tool_runs = ToolRuns(tg)
        try:
            yield tool_runs
        finally:
            await tool_runs.cancel_all()
            tg.cancel_scope.cancel()
