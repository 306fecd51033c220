"""Subtask levels: one depth limit shared by every entry path
(docs/explanation/envelope.md, one depth limit).

A host runs at level 0; each subtask runs one level deeper; a run that would go past
``subtasks.max_depth`` fails with ``depth_limit``. The level travels in-process in a context
variable and across processes in ``ACP_BRIDGE_DEPTH`` (set for every agent and terminal we
start), so a bridge started inside a subtask's terminal refuses to go deeper too. The limit
travels with it, in ``ACP_BRIDGE_MAX_DEPTH``: a nested bridge uses the smaller of its own
config's limit and the inherited one, so it can never raise the limit its host set.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

from acp_bridge._os.process.environment import DEPTH_ENV, MAX_DEPTH_ENV
from acp_bridge.errors import ConfigError, DepthLimitError

_level: ContextVar[int | None] = ContextVar("acp_bridge_level", default=None)
_limit: ContextVar[int | None] = ContextVar("acp_bridge_limit", default=None)


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


def would_be_depth(*, nested: bool = True) -> int | None:
    """The level a new run would take, or None when the depth itself is unreadable."""
    try:
        return current_depth() + nested
    except ConfigError:
        return None
