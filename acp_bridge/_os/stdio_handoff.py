"""The agent's stdin and stdout, handed to the agent inside bubblewrap past bwrap's own
processes.

Why: a child inherits its stdio from whoever starts it, and under bubblewrap that is bwrap
— the outer bwrap and its init (PID 1 of the sandbox) both keep copies of fds 0 and 1 for
as long as the sandbox lives. An agent that closed its stdout and kept running was then
never seen to close it (the pipe still had writers): the run waited for its timeout instead
of ending ``agent_exited``, as it does without a sandbox.

How: bwrap is started with ``/dev/null`` for stdin and stdout and one end of a socket pair
(its number in :data:`HANDOFF_ENV`); the command bwrap runs is a small Python shim
(:func:`handoff_argv`) that receives the two pipe ends over the socket (``SCM_RIGHTS``), puts
them at 0 and 1, and ``exec``\\s the agent (keeping its pid, PID 2 of the sandbox). The
bridge keeps the other ends (:class:`HandedStdio`), as non-blocking fds read and written
through anyio. stderr stays inherited: bwrap's own messages go there too, and nothing waits
for its end.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

HANDOFF_ENV = "ACP_BRIDGE_STDIO_FD"
RECEIVE_TIMEOUT = 30.0
# The shim imports only C modules (``_socket``, not ``socket``: socket.py pulls in enum and
# selectors, ~7 ms of every sandboxed agent's start-up), so the fds are read from the
# ancillary data by hand: native ints, SCM_RIGHTS.
_SHIM = f"""
import os, sys, _socket
fd = int(os.environ.pop({HANDOFF_ENV!r}))
fds = []
channel = _socket.socket(fileno=fd)
channel.settimeout({RECEIVE_TIMEOUT!r})
try:
    _, ancillary, _, _ = channel.recvmsg(1, _socket.CMSG_LEN(2 * 4))
    for level, kind, data in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += [int.from_bytes(data[i : i + 4], sys.byteorder, signed=True)
                    for i in range(0, len(data) - len(data) % 4, 4)]
except OSError:
    pass
channel.close()
if len(fds) != 2:
    sys.stderr.write("acp-bridge: the agent's stdin and stdout never arrived\\n")
    sys.exit(127)
os.dup2(fds[0], 0)
os.dup2(fds[1], 1)
for fd in fds:
    os.close(fd)
try:
    os.execvp(sys.argv[1], sys.argv[1:])
except OSError as exc:
    sys.stderr.write(f"acp-bridge: cannot execute {{sys.argv[1]}}: {{exc.strerror}}\\n")
    sys.exit(127)
"""


def handoff_argv(argv: list[str]) -> list[str]:
    """``argv`` run through the shim that takes its stdin and stdout from the socket."""
    return [sys.executable, "-I", "-S", "-c", _SHIM, *argv]


class HandedStdio:
    """The pipes and the socket of one handoff: ``stdin`` and ``stdout`` are ours."""

    def __init__(self) -> None:
        self._agent_in, ours_in = os.pipe()  # close-on-exec: no other child inherits them
        ours_out, self._agent_out = os.pipe()
        self._ours, self._theirs = socket.socketpair()
        self.stdin = FdSendStream(ours_in)
        self.stdout = FdReceiveStream(ours_out)

    @property
    def child_fd(self) -> int:
        """The socket end bwrap (and so the shim) inherits."""
        return self._theirs.fileno()

    def hand_over(self) -> None:
        """Send the agent's ends to the shim (queued in the socket until it reads them) and
        drop every copy of them here."""
        try:
            socket.send_fds(self._ours, [b"s"], [self._agent_in, self._agent_out])
        finally:
            self.close_agent_ends()

    def close_agent_ends(self) -> None:
        for fd in (self._agent_in, self._agent_out):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._agent_in = self._agent_out = -1
        self._ours.close()
        self._theirs.close()


class FdReceiveStream(ByteReceiveStream):
    """Bytes from a non-blocking pipe fd."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            if self._fd < 0:
                raise anyio.ClosedResourceError
            try:
                data = os.read(self._fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        _close(self)


class FdSendStream(ByteSendStream):
    """Bytes to a non-blocking pipe fd."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            if self._fd < 0:
                raise anyio.ClosedResourceError
            try:
                view = view[os.write(self._fd, view) :]
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
            except (BrokenPipeError, OSError) as exc:
                raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        _close(self)


def _close(stream: FdReceiveStream | FdSendStream) -> None:
    fd, stream._fd = stream._fd, -1
    if fd >= 0:
        anyio.notify_closing(fd)  # a task waiting on it wakes with ClosedResourceError
        with contextlib.suppress(OSError):
            os.close(fd)
