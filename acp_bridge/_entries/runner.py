"""The one runner every entry path goes through: the contract they all keep (DESIGN §1-§2).

:func:`run_enveloped` wraps an entry's body: it loads the config (when the caller gave none)
inside the guarded region, enters one subtask level (or stays at the caller's, for a host
loop), times the run, and turns every error into a failed envelope. No exception escapes an
entry point; only cancellation of the caller's own scope propagates, as structured
concurrency requires. The returned envelope always carries the task id, entry, depth and
duration.

:func:`resolve_timeout` is the one check of a ``timeout`` argument, so every entry accepts
and refuses the same values. A run given ``timeout`` T ends by T + :data:`END_GRACE`,
whatever its worker does: T bounds the work (start-up and setup included), the grace is for
winding down (asking the worker to stop, waiting for it, then SIGKILL to everything).

A run whose ``cancel`` event is already set when it starts (Ctrl-C during start-up) does no
work: it ends at once, ``cancelled``, with the same full envelope as any other run.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import anyio

from acp_bridge._entries.depth import (
    current_depth,
    inherited_max_depth,
    subtask_level,
    would_be_depth,
)
from acp_bridge.config import MAX_SECONDS, LoadedConfig, load_config
from acp_bridge.envelope import Entry, Meta, SubtaskResult, failed, from_error, new_task_id
from acp_bridge.errors import BridgeError, ConfigError, ErrorCode, RunCancelled

log = logging.getLogger("acp_bridge")

END_GRACE = 4.0
"""Seconds a run may take past its timeout (or its cancel) to wind down: ask the worker to
stop, wait for it, close, then SIGKILL to every process it started. Profile graces
(``cancel_grace``, ``shutdown_grace``) are cut to fit inside it. 4 s, so that a CLI run with
``--timeout T``, its own start-up and exit included, is over by T + 5 s."""


@dataclass(frozen=True)
class RunContext:
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
    cancel: anyio.Event | None = None,
) -> SubtaskResult:
    """Run ``body`` one level deeper (``nested`` false: at the caller's own level, for a
    host loop, which is never refused by the depth limit) and return its envelope, whatever
    happens. ``meta`` is the base for failures raised before or outside the body's own
    envelope (e.g. the agent name)."""
    task_id = task_id or new_task_id()
    started = time.monotonic()
    base = (meta or Meta()).model_copy(update={"entry": entry})
    depth = would_be_depth(nested=nested)
    try:
        with _level(config, nested, cancel) as (depth, loaded):
            ctx = RunContext(task_id, depth, inherited_max_depth(), started, loaded)
            result = await body(ctx)
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
