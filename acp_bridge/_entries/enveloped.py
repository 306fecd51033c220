"""The one wrapper every entry path goes through: the contract they all keep
(docs/explanation/envelope.md).

:func:`run_enveloped` wraps an entry's body: it loads the config (when the caller gave none)
inside the guarded region, enters one subtask level (or stays at the caller's, for a host
loop), times the run, and turns every error into a failed envelope. No exception escapes an
entry point; only cancellation of the caller's own scope propagates, as structured
concurrency requires. The returned envelope always carries the task id, entry, depth and
duration.

:func:`resolve_timeout` is the one check of a ``timeout`` argument, and
:func:`check_task_id` of a caller's ``task_id``, so every entry accepts and refuses the same
values. When a run reporter is installed (see :mod:`.reporting`), every run is reported to it: the
envelope is recorded before the caller gets it. A run given ``timeout`` T ends by
T + :data:`END_GRACE`, whatever its worker does: T bounds the work (start-up and setup
included), the grace is for winding down (asking the worker to stop, waiting for it, then
SIGKILL to everything).

A run whose ``cancel`` event is already set when it starts (Ctrl-C during start-up) does no
work: it ends at once, ``cancelled``, with the same full envelope as any other run.
"""

import logging
import math
import os
import re
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import anyio

from acp_bridge._entries.depth import (
    current_depth,
    inherited_max_depth,
    subtask_level,
    would_be_depth,
)
from acp_bridge._entries.reporting import RunReport, RunStart, installed_reporter
from acp_bridge._os.limits import MAX_TASK_BYTES
from acp_bridge.config import MAX_SECONDS, LoadedConfig, load_config
from acp_bridge.envelope import Entry, Meta, SubtaskResult, failed, from_error, new_task_id
from acp_bridge.errors import BridgeError, ConfigError, ErrorCode, RunCancelled

log = logging.getLogger("acp_bridge")

END_GRACE = 4.0
"""Seconds a run may take past its timeout (or its cancel) to wind down: ask the worker to
stop, wait for it, close, then SIGKILL to every process it started. Profile graces
(``cancel_grace``, ``shutdown_grace``) are cut to fit inside it. 4 s, so that a CLI run with
``--timeout T``, its own start-up and exit included, is over by T + 5 s."""


class RunContext(NamedTuple):
    """What an entry body knows about its own run."""

    task_id: str
    depth: int
    max_depth: int | None
    """The depth limit that travels with processes started at this level."""
    started: float
    config: LoadedConfig

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def deadline(self, timeout: float) -> float:
        """The absolute time (``anyio.current_time()``) ``timeout`` seconds after the run
        started: start-up and config loading count against it too."""
        return anyio.current_time() + timeout - (time.monotonic() - self.started)


Body = Callable[[RunContext], Awaitable[SubtaskResult]]


async def run_enveloped(
    entry: Entry,
    body: Body,
    *,
    config: LoadedConfig | None = None,
    nested: bool = True,
    meta: Meta | None = None,
    task_id: str | None = None,
    task: str = "",
    cwd: str | Path | None = None,
    cancel: anyio.Event | None = None,
) -> SubtaskResult:
    """Run ``body`` one level deeper (``nested`` false: at the caller's own level, for a
    host loop, which is never refused by the depth limit) and return its envelope, whatever
    happens. ``meta`` is the base for failures raised before or outside the body's own
    envelope (e.g. the agent name). ``task_id`` names the run (default: a fresh id);
    ``task`` and ``cwd`` describe it to the run reporter, when one is installed."""
    started = time.monotonic()
    base = (meta or Meta()).model_copy(update={"entry": entry})
    depth = would_be_depth(nested=nested)
    try:
        task_id = new_task_id() if task_id is None else check_task_id(task_id)
    except ConfigError as exc:  # a bad id cannot name the envelope: it gets a fresh one
        task_id = new_task_id()
        return finish_envelope(from_error(exc, task_id=task_id, meta=base), entry, depth, started)
    try:
        check_text("task", task)  # before the reporter, which could not record it either
    except ConfigError as exc:
        return finish_envelope(from_error(exc, task_id=task_id, meta=base), entry, depth, started)
    reporter = installed_reporter()
    record = None if reporter is None else reporter.record(_start(task_id, entry, task, base, cwd))
    loaded: LoadedConfig | None = None
    try:
        try:
            with _level(config, nested, cancel) as (depth, loaded):
                ctx = RunContext(task_id, depth, inherited_max_depth(), started, loaded)
                result = await (body(ctx) if record is None else _recorded(record, body, ctx))
        except BridgeError as exc:
            result = from_error(exc, task_id=task_id, meta=base)
        except Exception as exc:  # the envelope contract: an entry point never raises
            log.exception("internal error in %s", entry)
            result = failed(
                f"internal error: {type(exc).__name__}: {exc}",
                ErrorCode.INTERNAL_ERROR,
                task_id=task_id,
                meta=base,
            )
    except BaseException:  # the caller's own scope was cancelled: no envelope
        if record is not None:
            record.abandoned()
        raise
    result = finish_envelope(result, entry, depth, started, task_id)
    if record is not None:
        record.ended(result)  # committed before the caller learns the run ended
    return result


def finish_envelope(
    result: SubtaskResult,
    entry: Entry,
    depth: int | None,
    started: float,
    task_id: str | None = None,
) -> SubtaskResult:
    """``result`` stamped as the envelope of one run: its task id (``task_id``, else its
    own), entry, depth, and the duration since ``started`` (``time.monotonic()``)."""
    update = {
        "entry": entry,
        "depth": depth,
        "duration_ms": int((time.monotonic() - started) * 1000),
    }
    return result.model_copy(
        update={"task_id": task_id or result.task_id, "meta": result.meta.model_copy(update=update)}
    )


def _start(task_id: str, entry: Entry, task: str, base: Meta, cwd: str | Path | None) -> RunStart:
    where = os.path.abspath(os.fspath(cwd)) if cwd is not None else os.getcwd()  # noqa: PTH100, PTH109
    return RunStart(task_id, entry, task, base.agent, where)


async def _recorded(record: RunReport, body: Body, ctx: RunContext) -> SubtaskResult:
    """``body(ctx)``, with the reporter's ``begin`` in a worker thread beside it (importing
    SQLite and opening the store cost a cold run several ms it need not wait for)."""
    outcome: SubtaskResult | Exception | None = None

    async def begin() -> None:
        # A hop of its own, not a pass shared with the runs starting beside it: the begins
        # of one pass run one after another, and in a 64-run fan-out, with the loop busy
        # starting agents, the last rows were written ~1 s late (~0.1 s this way: the
        # reporter's writer takes every row queued meanwhile).
        await anyio.to_thread.run_sync(record.begin, ctx.config)

    async with anyio.create_task_group() as tg:
        tg.start_soon(begin)
        try:
            outcome = await body(ctx)
        except Exception as exc:  # re-raised below: a task group would wrap it in a group
            outcome = exc
    if isinstance(outcome, Exception):
        try:
            raise outcome
        finally:  # the frame must not hold its own traceback's exception (a cycle)
            outcome = None
    assert outcome is not None
    return outcome


_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def check_task_id(value: str) -> str:
    """A caller's ``task_id``, checked: it names files (transcripts) and branches."""
    if not isinstance(value, str) or not _TASK_ID.fullmatch(value):
        shown = repr(value)
        shown = shown if len(shown) <= 80 else f"{shown[:80]}…"  # a bounded echo
        raise ConfigError(
            f"task_id must be 1-64 letters, digits, '_', '.' or '-', starting with a letter "
            f"or digit; got {shown}"
        )
    return value


def check_text(name: str, text: str) -> str:
    """Text every entry can carry: Unicode that UTF-8 can encode (the wire, transcripts and
    the run store all write UTF-8), at most MAX_TASK_BYTES of it. Bytes that are not UTF-8
    (a command line or stdin in another encoding) reach Python as lone surrogates."""
    try:
        size = len(text.encode())
    except UnicodeEncodeError:
        raise ConfigError(
            f"{name}: not valid UTF-8 text (bytes from a command line or stdin in another "
            "encoding?)"
        ) from None
    if size > MAX_TASK_BYTES:
        raise ConfigError(f"{name}: longer than {MAX_TASK_BYTES} bytes ({size})")
    return text


@contextmanager
def _level(
    config: LoadedConfig | None, nested: bool, cancel: anyio.Event | None
) -> Iterator[tuple[int, LoadedConfig]]:
    # Loading happens inside the guarded region, so a broken file becomes an envelope.
    loaded = config if config is not None else load_config()
    if cancel is not None and cancel.is_set():  # interrupted before anything started
        raise RunCancelled("the run was cancelled before it started")
    if not nested:
        yield current_depth(), loaded
        return
    with subtask_level(loaded.config.subtasks.max_depth) as depth:
        yield depth, loaded


def resolve_timeout(value: float | None, default: float, *, what: str = "timeout") -> float:
    """``value`` (seconds) checked the same way for every entry; ``default`` when None."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{what} must be a number of seconds, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{what} must be a positive number of seconds, got {value}")
    if value > MAX_SECONDS:
        raise ConfigError(f"{what} must be at most {MAX_SECONDS:g} seconds, got {value:g}")
    return float(value)
