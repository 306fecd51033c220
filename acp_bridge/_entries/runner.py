"""Subtask levels and the contract every entry path keeps (DESIGN §1-§2).

One depth limit is shared by ``acp_spawn``, ``spawn`` and ``bash``: a host runs at level 0;
each subtask runs one level deeper; a run that would go past ``subtasks.max_depth`` fails
with ``depth_limit``. The level travels in-process in a context variable and across
processes in ``ACP_BRIDGE_DEPTH`` (set for every agent and terminal we start), so a bridge
started inside a subtask's terminal refuses to go deeper too. The limit travels with it, in
``ACP_BRIDGE_MAX_DEPTH``: a nested bridge uses the smaller of its own config's limit and the
inherited one, so it can never raise the limit its host set.

:func:`run_subtask` wraps an entry path's body: it enters the level, times the run, and turns
every error into a failed envelope. No exception escapes an entry point; only cancellation of
the caller's own scope propagates, as structured concurrency requires.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from acp_bridge.config import LoadedConfig, load_config
from acp_bridge.envelope import Entry, Meta, SubtaskResult, failed, from_error, new_task_id
from acp_bridge.errors import BridgeError, ConfigError, DepthLimitError, ErrorCode

DEPTH_ENV = "ACP_BRIDGE_DEPTH"
MAX_DEPTH_ENV = "ACP_BRIDGE_MAX_DEPTH"

_level: ContextVar[int | None] = ContextVar("acp_bridge_level", default=None)
_limit: ContextVar[int | None] = ContextVar("acp_bridge_limit", default=None)
log = logging.getLogger("acp_bridge")


def _env_number(name: str, environ: Mapping[str, str] | None) -> int | None:
    raw = (os.environ if environ is None else environ).get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit():
        raise ConfigError(f"{name}={raw!r} is not a whole number; refusing to guess the depth")
    return int(raw)


def current_depth(environ: Mapping[str, str] | None = None) -> int:
    """The level this code runs at: 0 in a host, N inside the N-th subtask level."""
    in_process = _level.get()
    if in_process is not None:
        return in_process
    return _env_number(DEPTH_ENV, environ) or 0


def inherited_max_depth(environ: Mapping[str, str] | None = None) -> int | None:
    """The limit set by the run this code is part of, if any (in-process or inherited)."""
    in_process = _limit.get()
    return in_process if in_process is not None else _env_number(MAX_DEPTH_ENV, environ)


def _next_level(max_depth: int) -> tuple[int, int]:
    """The level a new subtask takes and the limit that applies to it."""
    inherited = inherited_max_depth()
    limit = max_depth if inherited is None else min(max_depth, inherited)
    depth = current_depth() + 1
    if depth > limit:
        source = " (inherited from the run that started this one)" if limit < max_depth else ""
        raise DepthLimitError(
            f"subtask depth limit reached: this would be level {depth}, "
            f"subtasks.max_depth is {limit}{source}"
        )
    return depth, limit


def check_depth(max_depth: int) -> int:
    """The level a new subtask would take; raises :class:`DepthLimitError` past the limit.

    For callers that must refuse before they can even load an entry path; the entry paths
    themselves check through :func:`subtask_level`.
    """
    return _next_level(max_depth)[0]


@contextmanager
def subtask_level(max_depth: int) -> Iterator[int]:
    """Enter one subtask level below the current one; yields the new level."""
    depth, limit = _next_level(max_depth)
    level_token, limit_token = _level.set(depth), _limit.set(limit)
    try:
        yield depth
    finally:
        _limit.reset(limit_token)
        _level.reset(level_token)


@dataclass(frozen=True)
class SubtaskContext:
    """What an entry body knows about its own run."""

    task_id: str
    depth: int
    started: float

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)


Body = Callable[[SubtaskContext], Awaitable[SubtaskResult]]


async def run_subtask(
    entry: Entry, max_depth: int, body: Body, *, meta: Meta | None = None
) -> SubtaskResult:
    """Run ``body`` one level deeper and return its envelope, whatever happens.

    ``meta`` is the base for failures raised before or outside the body's own envelope
    (e.g. the agent name). The returned envelope always carries the task id, entry, depth
    and duration.
    """
    return await _enveloped(entry, lambda: subtask_level(max_depth), body, meta)


async def run_host(entry: Entry, body: Body, *, meta: Meta | None = None) -> SubtaskResult:
    """Like :func:`run_subtask`, but at the caller's own level: for a host loop (``ask``),
    which is not a subtask and so opens no level and is never refused by the depth limit."""
    return await _enveloped(entry, _same_level, body, meta)


ConfiguredBody = Callable[[SubtaskContext, LoadedConfig], Awaitable[SubtaskResult]]


async def run_configured(
    entry: Entry,
    config: LoadedConfig | None,
    body: ConfiguredBody,
    *,
    meta: Meta | None = None,
) -> SubtaskResult:
    """:func:`run_subtask` at the config's ``subtasks.max_depth``, the config loaded (by the
    usual search) when not given. A config that does not load is a ``config_error``
    envelope, with the same bookkeeping as any other failure."""
    loaded: list[LoadedConfig] = []

    @contextmanager
    def level() -> Iterator[int]:
        # Loading happens inside the guarded region, so a broken file becomes an envelope.
        loaded.append(config if config is not None else load_config())
        with subtask_level(loaded[0].config.subtasks.max_depth) as depth:
            yield depth

    async def configured(ctx: SubtaskContext) -> SubtaskResult:
        return await body(ctx, loaded[0])

    return await _enveloped(entry, level, configured, meta)


@contextmanager
def _same_level() -> Iterator[int]:
    yield current_depth()


async def _enveloped(
    entry: Entry,
    level: Callable[[], AbstractContextManager[int]],
    body: Body,
    meta: Meta | None,
) -> SubtaskResult:
    task_id = new_task_id()
    started = time.monotonic()
    base = (meta or Meta()).model_copy(update={"entry": entry})
    depth = _would_be_depth(nested=level is not _same_level)
    try:
        with level() as depth:
            result = await body(SubtaskContext(task_id, depth, started))
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
    update = {
        "entry": entry,
        "depth": depth,
        "duration_ms": int((time.monotonic() - started) * 1000),
    }
    return result.model_copy(
        update={"task_id": task_id, "meta": result.meta.model_copy(update=update)}
    )


def _would_be_depth(*, nested: bool) -> int | None:
    """The level a run is about to take, or None when the depth itself is unreadable."""
    try:
        return current_depth() + nested
    except ConfigError:
        return None


def current_depth_or_none() -> int | None:
    """The would-be level of a new subtask, or None when the depth itself is unreadable."""
    return _would_be_depth(nested=True)
