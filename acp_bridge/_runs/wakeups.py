"""Wakeups: how a process waiting on a run learns, at once, that the run changed.

A waiter (``wait``, ``logs -f``, a supervisor waiting for its lane or for a stop request)
binds a unix datagram socket in the Linux abstract namespace under a random name, and records
that name in the store's ``wakeups`` table for the runs it watches. Whoever changes a run
(envelope committed, run claimed, stop requested, events flushed, run found lost) commits
first and then sends one byte to every wakeup of that run. The byte means nothing: the waiter
wakes and reads the store again. The order makes wake-ups impossible to miss: a waiter records
its wakeup before it reads the run, a changer commits before it reads the wakeups, so either
the changer sees the wakeup or the waiter sees the change.

Why this and not a poll: ``wait`` must return within 100 ms of the end, and fifty supervisors
waiting for a lane must not each query SQLite ten times a second. Why not a named pipe or a
socket file: no file to clean up after a crash, no path length limit (108 bytes). An abstract
socket has no permissions; anyone on the host can send to a wakeup, which costs the waiter
one extra read of the store and tells nobody anything. A wakeup left by a process that died
is found when sending to it fails, and removed.

Waiting also watches pidfds (a supervisor's death makes its pidfd readable), so a waiter
notices a SIGKILLed supervisor at once rather than at its next fallback look.
"""

from __future__ import annotations

import contextlib
import os
import select
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

from acp_bridge._runs.store.run_store import Store

if TYPE_CHECKING:
    import socket


def _datagram_socket() -> socket.socket:
    # Imported here: ``ps`` and ``show`` import this module but wake nobody unless they find
    # a run lost (the module costs a few ms of their start-up).
    import socket

    flags = socket.SOCK_DGRAM | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC
    return socket.socket(socket.AF_UNIX, flags)


def _address(name: str) -> bytes:
    return b"\0" + name.encode()


class Wakeup:
    """A wakeup for some runs; a context manager (the record is removed on exit)."""

    def __init__(self, store: Store, run_ids: Iterable[str] = ()) -> None:
        self._store = store
        self.name = f"acp-bridge/{os.urandom(8).hex()}"
        self._sock = _datagram_socket()
        try:
            self._sock.bind(_address(self.name))
            self.watch(run_ids)
        except BaseException:
            self._sock.close()
            raise

    def watch(self, run_ids: Iterable[str]) -> None:
        """Wake for these runs too."""
        ids = list(run_ids)
        if ids:
            _record(self._store, self.name, ids)

    def close(self) -> None:
        if self._sock.fileno() < 0:
            return
        with contextlib.suppress(Exception):  # the store may be gone with its folder
            _forget(self._store, [self.name])
        self._sock.close()

    def __enter__(self) -> Wakeup:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _drain(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while self._sock.recv(64):
                pass

    def wait_sync(self, timeout: float, fds: Sequence[int] = ()) -> bool:
        """Block until the wakeup is woken, one of ``fds`` is readable, or ``timeout`` passes;
        whether anything woke it before the timeout."""
        poller = select.poll()
        for fd in (self._sock.fileno(), *fds):
            poller.register(fd, select.POLLIN)
        woken = bool(poller.poll(max(0, int(timeout * 1000))))
        self._drain()
        return woken

    async def wait(self, timeout: float, fds: Sequence[int] = ()) -> bool:
        """:meth:`wait_sync` for an event loop."""
        # Imported here: a queued run's supervisor waits with wait_sync and stays light
        # (anyio costs it ~40 ms and 3 MB while it may sit in the queue for hours).
        import anyio

        with anyio.move_on_after(timeout) as waiting:
            async with anyio.create_task_group() as tg:

                async def readable(fd: int) -> None:
                    await anyio.wait_readable(fd)
                    tg.cancel_scope.cancel()

                for fd in (self._sock.fileno(), *fds):
                    tg.start_soon(readable, fd)
        self._drain()
        return not waiting.cancelled_caught


def wake(store: Store, run_ids: Iterable[str], *, besides: str = "") -> None:
    """Wake every process waiting on these runs (call after committing the change)."""
    names = _names(store, run_ids) - {besides}
    if not names:
        return
    dead = []
    with _datagram_socket() as sock:
        for name in names:
            try:
                sock.sendto(b"!", _address(name))
            except BlockingIOError:  # its queue is full: a wake-up is pending already
                continue
            except (ConnectionRefusedError, FileNotFoundError):  # its process is gone
                dead.append(name)
            except OSError:
                continue
    if dead:
        _forget(store, dead)


# --- the store's ``wakeups`` table: which wakeups are woken for which runs -----------------


def _record(store: Store, name: str, run_ids: list[str]) -> None:
    with store.write() as db:
        db.executemany(
            "INSERT OR IGNORE INTO wakeups (name, run_id, pid) VALUES (?, ?, ?)",
            [(name, run_id, os.getpid()) for run_id in run_ids],
        )


def _forget(store: Store, names: list[str]) -> None:
    if names:
        with store.write() as db:
            db.executemany("DELETE FROM wakeups WHERE name = ?", [(n,) for n in names])


def _names(store: Store, run_ids: Iterable[str]) -> set[str]:
    ids = list(run_ids)
    if not ids:
        return set()
    marks = ", ".join("?" * len(ids))
    rows = store.db.execute(f"SELECT name FROM wakeups WHERE run_id IN ({marks})", ids)
    return {name for (name,) in rows}
