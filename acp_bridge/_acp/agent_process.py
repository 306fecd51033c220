"""The agent's OS process: started in its own process group, stderr always drained, and
shut down for sure (DESIGN §4, shutdown).

Why a process group: adapters start grandchildren (npx → node → agent → MCP servers). The
agent is started with ``start_new_session`` so it leads a new group, and every signal goes
to the whole group. Why drain stderr: an agent blocked writing to a full stderr pipe stops
answering on stdout, so stderr is read continuously into a bounded tail.

Shutdown: close stdin (a well-behaved agent exits on EOF) → wait ``grace`` → SIGTERM to the
group → wait ``grace`` → SIGKILL to the group. Members left behind by an agent that exited
on its own (an MCP server, a stray child) get SIGTERM and then SIGKILL too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process, TaskGroup

from acp_bridge.errors import SpawnError
from acp_bridge.events import EventSink

STDERR_TAIL_BYTES = 64 * 1024
STDERR_TAIL_CHARS = 4000
KILL_WAIT = 5.0  # after SIGKILL; only a process stuck in the kernel takes longer
STRAGGLER_PAUSE = 0.2  # between SIGTERM and SIGKILL for group members the agent left behind


class AgentProcess:
    """A started agent. Use as ``async with``: leaving the block always ends the process."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        grace: float,
        sink: EventSink | None = None,
        install_hint: str = "",
    ) -> None:
        self.argv = list(argv)
        self._env = dict(env)
        self._cwd = cwd
        self._grace = grace
        self._sink = sink
        self._install_hint = install_hint
        self._process: Process | None = None
        self._tg: TaskGroup | None = None
        self._exited = anyio.Event()
        self._tail = bytearray()
        self._stderr_bytes = 0
        self.notes: list[str] = []
        """What shutdown had to do (SIGTERM, SIGKILL, stragglers), for meta and transcript."""

    # --- starting ---------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        try:
            self._process = await anyio.open_process(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self._cwd,
                env=self._env,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            hint = f"; install it with: {self._install_hint}" if self._install_hint else ""
            missing = self.argv[0] if exc.filename in (None, self.argv[0]) else exc.filename
            raise SpawnError(f"command not found: {missing}{hint}") from exc
        except PermissionError as exc:
            raise SpawnError(f"cannot execute {self.argv[0]}: permission denied") from exc
        except OSError as exc:
            raise SpawnError(f"cannot start {self.argv[0]}: {exc.strerror or exc}") from exc
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._drain_stderr)
        self._tg.start_soon(self._watch_exit)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None
        # Shielded: a cancelled caller must still not leave a process behind.
        with anyio.CancelScope(shield=True):
            await self.shutdown()
        self._tg.cancel_scope.cancel()
        try:
            return await self._tg.__aexit__(exc_type, exc, tb)
        finally:
            with anyio.CancelScope(shield=True):
                await self._close_transport()

    async def _close_transport(self) -> None:
        """Release the pipes and the event loop's handle on the (exited) process; left to
        the garbage collector, they would be closed after the loop and warn."""
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await self.process.aclose()

    @property
    def process(self) -> Process:
        assert self._process is not None, "use AgentProcess as an async context manager"
        return self._process

    @property
    def started(self) -> bool:
        return self._process is not None

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def stdout(self) -> ByteReceiveStream:
        stream = self.process.stdout
        assert stream is not None
        return stream

    @property
    def stdin(self) -> ByteSendStream:
        stream = self.process.stdin
        assert stream is not None
        return stream

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    @property
    def exited(self) -> bool:
        return self._exited.is_set()

    async def wait_exited(self) -> None:
        await self._exited.wait()

    def exit_description(self) -> str:
        """``exited with code 3`` / ``was killed by SIGKILL`` / ``is still running``."""
        code = self.returncode
        if code is None:
            return "is still running"
        if code < 0:
            return f"was killed by {_signal_name(-code)}"
        return f"exited with code {code}"

    # --- stderr -------------------------------------------------------------------------

    async def _drain_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        partial = b""
        try:
            async for chunk in stream:
                self._stderr_bytes += len(chunk)
                self._tail += chunk
                if len(self._tail) > STDERR_TAIL_BYTES:
                    del self._tail[: len(self._tail) - STDERR_TAIL_BYTES]
                if self._sink is not None and self._sink.wants("stderr"):
                    *lines, partial = (partial + chunk).split(b"\n")
                    for line in lines:
                        self._sink.emit("stderr", line=line.decode("utf-8", "replace"))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return

    def stderr_tail(self, chars: int = STDERR_TAIL_CHARS) -> str:
        """The last ``chars`` characters the agent wrote on stderr (whole lines if possible)."""
        text = self._tail.decode("utf-8", "replace")
        if len(text) <= chars:
            return text
        cut = text[-chars:]
        newline = cut.find("\n")
        return cut[newline + 1 :] if 0 <= newline < len(cut) - 1 else cut

    @property
    def stderr_bytes(self) -> int:
        return self._stderr_bytes

    # --- ending -------------------------------------------------------------------------

    async def _watch_exit(self) -> None:
        await self.process.wait()
        self._exited.set()

    async def close_stdin(self) -> None:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await self.stdin.aclose()

    async def shutdown(self) -> None:
        """Close stdin → grace → SIGTERM the group → grace → SIGKILL the group; then sweep."""
        await self.close_stdin()
        if not await self._exits_within(self._grace):
            self._signal_group(signal.SIGTERM, "did not exit after stdin closed")
            if not await self._exits_within(self._grace):
                self._signal_group(signal.SIGKILL, "ignored SIGTERM")
                await self._exits_within(KILL_WAIT)
        await self._sweep_stragglers()

    async def _exits_within(self, seconds: float) -> bool:
        with anyio.move_on_after(seconds):
            await self._exited.wait()
        return self._exited.is_set()

    def _signal_group(self, sig: signal.Signals, why: str) -> None:
        self.notes.append(f"agent {why}: sent {sig.name} to its process group")
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    async def _sweep_stragglers(self) -> None:
        """Members of the agent's group still alive after it exited (its orphans) end too.

        The group id cannot be reused while any member lives, so signalling it cannot hit
        an unrelated process.
        """
        if not _group_alive(self.pid):
            return
        self.notes.append("agent left processes behind: sent SIGTERM to its process group")
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGTERM)
        await anyio.sleep(STRAGGLER_PAUSE)  # one chance to exit cleanly, then no more
        if _group_alive(self.pid):
            self.notes.append("processes ignored SIGTERM: sent SIGKILL to the group")
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
