"""The one sync helper: an entry path for callers without an event loop.

``synchronous(acp_spawn)`` has exactly ``acp_spawn``'s signature (a ``ParamSpec``; overloads
kept) and runs it in a fresh event loop. Calling it from inside a running loop is an error
(anyio says so): await the async entry there instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

import anyio

P = ParamSpec("P")
T = TypeVar("T")


def synchronous(func: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """``func`` as a blocking call that starts and ends its own event loop."""

    @functools.wraps(func)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        return anyio.run(functools.partial(func, *args, **kwargs))

    run.__name__ = run.__qualname__ = f"{func.__name__}_sync"
    run.__doc__ = f"The blocking form of :func:`{func.__name__}` (it starts its own event loop)."
    return run
