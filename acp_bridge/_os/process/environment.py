"""Constructed environments: what a process we start sees of ours
(docs/explanation/security.md, the environment of agents and terminals).

Agents, terminals and commands never get the whole host environment (it holds the host's
secrets): only a small base list, the profile's explicit variables, the host variables it
names for passing through, and the subtask level — ``ACP_BRIDGE_DEPTH`` and the limit in
``ACP_BRIDGE_MAX_DEPTH`` — so a bridge started inside refuses to go deeper than the limit
its host set.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType

DEPTH_ENV = "ACP_BRIDGE_DEPTH"
MAX_DEPTH_ENV = "ACP_BRIDGE_MAX_DEPTH"
BASE_ENV_NAMES: tuple[str, ...] = ("PATH", "HOME", "LANG", "TERM", "USER", "SHELL", "TMPDIR")
BASE_ENV_PREFIXES: tuple[str, ...] = ("LC_",)


class _HostSnapshot:
    """``os.environ`` decoded, with the names the base list keeps, for as long as the
    process's environment holds the same bytes."""

    def __init__(self, raw: dict[bytes, bytes] | None) -> None:
        self.raw = raw
        if raw is None:
            decoded = dict(os.environ)
        else:  # decoded from the copy itself: what it says is exactly what was compared
            # Typed for str in typeshed; on POSIX they take the bytes os.environ keeps.
            key: Callable[[bytes], str] = os.environ.decodekey  # type: ignore[assignment]
            value: Callable[[bytes], str] = os.environ.decodevalue  # type: ignore[assignment]
            decoded = {key(name): value(text) for name, text in raw.items()}
        self.environ: Mapping[str, str] = MappingProxyType(decoded)
        self.base_names = tuple(
            name for name in decoded if name in BASE_ENV_NAMES or name.startswith(BASE_ENV_PREFIXES)
        )


_snapshot: _HostSnapshot | None = None
_snapshot_lock = threading.Lock()


def _host_snapshot() -> _HostSnapshot:
    """The snapshot of ``os.environ`` as it is now. Why: ``os.environ`` decodes every name
    and value it hands out (four Python calls an item), and a run asked for the whole of it
    twice (the config's ``${VAR}``\\ s, the agent's environment): ~500 calls a run in a
    fan-out. Never stale: the process's environment as bytes (what ``os.environ`` keeps,
    every change included) is compared whole, in C, on every call."""
    global _snapshot
    raw = getattr(os.environ, "_data", None)  # CPython's os.environ: bytes names and values
    if not isinstance(raw, dict) or not hasattr(os.environ, "decodevalue"):
        # Some other implementation: no snapshot to trust.
        return _HostSnapshot(None)
    with _snapshot_lock:
        known = _snapshot
        if known is None or known.raw != raw:
            known = _snapshot = _HostSnapshot(dict(raw))
        return known


def host_environ() -> Mapping[str, str]:
    """``os.environ`` as it is now, decoded once for as long as it stays the same (a
    read-only mapping: copy it to change it)."""
    return _host_snapshot().environ


def constructed_env(
    *,
    depth: int,
    max_depth: int | None = None,
    extra: Mapping[str, str] | None = None,
    passthrough: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment for a process started at subtask level ``depth`` on an agent's behalf
    (or for the agent itself). ``max_depth``: the limit that travels with it."""
    if environ is None:
        snapshot = _host_snapshot()
        host, names = snapshot.environ, snapshot.base_names
    else:
        host = environ
        names = tuple(
            name for name in host if name in BASE_ENV_NAMES or name.startswith(BASE_ENV_PREFIXES)
        )
    env = {name: host[name] for name in names}
    env.setdefault("PATH", os.defpath)  # a host without PATH: commands still resolve
    env.update({name: host[name] for name in passthrough if name in host})
    env.update(extra or {})
    env[DEPTH_ENV] = str(depth)
    if max_depth is not None:  # the limit travels with the depth: a nested bridge cannot raise it
        env[MAX_DEPTH_ENV] = str(max_depth)
    return env
