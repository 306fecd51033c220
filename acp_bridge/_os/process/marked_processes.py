"""Finding and ending the processes that carry a marker variable in their environment.

Why: every process we start leads its own process group, and ``killpg`` ends the group —
but a child that called ``setsid`` (a daemon, ``nohup … &`` under some shells,
``setsid sleep 1000 &``) has left the group, and once the leader is reaped the group may no
longer be signalled by id (procgroup.py). Such a child still carries the environment it was
started with, though, and every group's environment holds a unique ``ACP_BRIDGE_MARKER``
value, so ``/proc/*/environ`` finds it.

Linux only (no ``/proc`` elsewhere: nothing is found). Best effort by nature: a process that
scrubs its environment before ``exec`` (``env -i``), or that was started by some other
service (systemd, cron, an ssh daemon) on the command's request, is not found. Signals go
through a pidfd opened *before* the environment is checked again, so a pid reused by an
unrelated process in between is never signalled.
"""

from __future__ import annotations

import os
import select
import signal
import time
from collections.abc import Sequence

from acp_bridge._os.process import proc

MAX_ROUNDS = 16  # a process forking while we kill: each round takes the new children


def marked_processes(name: str, value: str | Sequence[str]) -> list[int]:
    """Pids of live processes whose environment has ``name=value`` (or ``name=`` any of
    the values), not this process."""
    needles = _needles(name, value)
    own = os.getpid()
    return [pid for pid in proc.all_pids() if pid != own and proc.environ_has_any(pid, needles)]


def markers_present(name: str, values: Sequence[str]) -> set[str]:
    """Which of ``values`` some live process (not this one) carries as ``name=value``: one
    pass over ``/proc`` for all of them."""
    needles = _needles(name, values)
    own = os.getpid()
    found: set[bytes] = set()
    for pid in proc.all_pids():
        if pid != own:
            found |= proc.environ_matches(pid, needles)
            if len(found) == len(needles):
                break
    prefix = len(name) + 1
    return {needle[prefix:].decode() for needle in found}


def _needles(name: str, value: str | Sequence[str]) -> frozenset[bytes]:
    values = [value] if isinstance(value, str) else list(value)
    return frozenset(f"{name}={v}".encode() for v in values)


def _signal(pid: int, needles: frozenset[bytes], sig: signal.Signals) -> int | None:
    """Send ``sig`` to ``pid`` if it still carries a needle; its pidfd if sent."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:  # gone already (or no pidfds: kernel < 5.3)
        return None
    try:
        if proc.environ_has_any(pid, needles):  # else the pid now names some other process
            signal.pidfd_send_signal(pidfd, sig)
            return pidfd
    except OSError:  # gone meanwhile, or not ours to signal
        pass
    os.close(pidfd)
    return None


def _wait_gone(pidfds: list[int], timeout: float) -> None:
    """Until every process exited (a pidfd turns readable then), or ``timeout``."""
    poller = select.poll()
    for fd in pidfds:
        poller.register(fd, select.POLLIN)
    deadline = time.monotonic() + timeout
    left = len(pidfds)
    while left and (remaining := deadline - time.monotonic()) > 0:
        for fd, _ in poller.poll(remaining * 1000):
            poller.unregister(fd)
            left -= 1


def kill_marked(
    name: str,
    value: str | Sequence[str],
    sig: signal.Signals = signal.SIGKILL,
    *,
    wait: float = 5.0,
) -> int:
    """Signal every process carrying ``name=value`` (any of the values), again for the
    children they fork meanwhile, until a round finds no process it has not signalled; then
    wait up to ``wait`` seconds for them to be gone (signals are delivered asynchronously).
    Returns how many were signalled."""
    needles = _needles(name, value)
    seen: set[int] = set()
    pidfds: list[int] = []
    try:
        for _ in range(MAX_ROUNDS):
            fresh = [pid for pid in marked_processes(name, value) if pid not in seen]
            if not fresh:
                break
            seen.update(fresh)
            pidfds += [fd for fd in (_signal(pid, needles, sig) for pid in fresh) if fd is not None]
        _wait_gone(pidfds, wait)
    finally:
        for fd in pidfds:
            os.close(fd)
    return len(pidfds)
