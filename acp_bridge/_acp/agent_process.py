"""The agent's OS process: its own process group, stderr always drained, and shut down for
sure (docs/explanation/acp.md, ending for sure).

Why drain stderr: an agent blocked writing to a full stderr pipe stops answering on stdout,
so stderr is read continuously into a bounded tail.

Shutdown (:meth:`AgentProcess.end`): close stdin (a well-behaved agent exits on EOF) →
wait ``grace`` → SIGTERM to the group → wait ``grace`` → SIGKILL to the group; then whatever
outlived the agent (an MCP server, a daemon that left the group) is ended too —
``_os/process/procgroup.py`` has the safety rule. All of it by one absolute deadline: the polite
steps stop :data:`KILL_RESERVE` seconds before it (or at once when the caller hurries), and what is
left is SIGKILLed, whatever the polite steps managed.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, TaskGroup

from acp_bridge._os.buffers import TailBuffer
from acp_bridge._os.process.procgroup import Graceful, ProcessGroup, signal_name
from acp_bridge._os.race import on_any, race
from acp_bridge.errors import ConfigError, SpawnError
from acp_bridge.events import EventSink

STDERR_TAIL_BYTES = 64 * 1024
STDERR_TAIL_CHARS = 4000
KILL_RESERVE = 1.0
"""Seconds at the end of a shutdown kept for SIGKILL and reaping, whatever came before."""
STRAGGLER_WAIT = 0.5
"""Seconds the polite shutdown waits for SIGKILLed stragglers to be gone."""


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
        origin: str = "",
        graceful: Graceful | None = None,
        handoff: bool = False,
        dies_with_parent: bool = False,
    ) -> None:
        self.argv = list(argv)
        self._graceful = graceful
        self._handoff = handoff
        self._dies_with_parent = dies_with_parent
        self._env = dict(env)
        self._cwd = cwd
        self._grace = grace
        self._sink = sink
        self._install_hint = install_hint
        self._origin = f" ({origin})" if origin else ""
        self._ended = False
        self._group: ProcessGroup | None = None
        self._tg: TaskGroup | None = None
        self._exited = anyio.Event()
        self._stderr = TailBuffer(STDERR_TAIL_BYTES)

    # --- starting ---------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        try:
            self._group = await ProcessGroup.start(
                self.argv,
                env=self._env,
                cwd=self._cwd,
                stdin=subprocess.PIPE,
                graceful=self._graceful,
                handoff=self._handoff,
                dies_with_parent=self._dies_with_parent,
            )
        except FileNotFoundError as exc:
            hint = f"; install it with: {self._install_hint}" if self._install_hint else ""
            missing = self.argv[0] if exc.filename in (None, self.argv[0]) else exc.filename
            raise SpawnError(f"command not found: {missing}{self._origin}{hint}") from exc
        except IsADirectoryError as exc:  # the profile names a folder: its config is wrong
            raise ConfigError(
                f"cannot execute {exc.filename}: it is a directory{self._origin}"
            ) from exc
        except PermissionError as exc:
            where = exc.filename or self.argv[0]
            raise SpawnError(f"cannot execute {where}: permission denied{self._origin}") from exc
        except OSError as exc:
            raise SpawnError(
                f"cannot start {self.argv[0]}: {exc.strerror or exc}{self._origin}"
            ) from exc
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
        # Shielded: a cancelled caller must still not leave a process behind. Bounded: by
        # the default shutdown deadline, unless the owner already ended it by its own.
        with anyio.CancelScope(shield=True):
            await self.shutdown()
        self._tg.cancel_scope.cancel()
        try:
            return await self._tg.__aexit__(exc_type, exc, tb)
        finally:
            with anyio.CancelScope(shield=True):
                await self.group.aclose(KILL_RESERVE)

    @property
    def group(self) -> ProcessGroup:
        assert self._group is not None, "use AgentProcess as an async context manager"
        return self._group

    @property
    def started(self) -> bool:
        return self._group is not None

    @property
    def notes(self) -> list[str]:
        """What shutdown had to do (SIGTERM, SIGKILL, stragglers), for meta and transcript."""
        return self._group.notes if self._group is not None else []

    @property
    def pid(self) -> int:
        return self.group.pid

    @property
    def stdout(self) -> ByteReceiveStream:
        stream = self.group.stdout
        assert stream is not None
        return stream

    @property
    def stdin(self) -> ByteSendStream:
        stream = self.group.stdin
        assert stream is not None
        return stream

    @property
    def returncode(self) -> int | None:
        return self.group.returncode

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
            return f"was killed by {signal_name(-code)}"
        return f"exited with code {code}"

    # --- stderr -------------------------------------------------------------------------

    async def _drain_stderr(self) -> None:
        stream = self.group.process.stderr
        assert stream is not None
        partial = b""
        live = self._sink is not None and self._sink.wants("stderr")
        try:
            async for chunk in stream:
                self._stderr.append(chunk)
                if live:
                    assert self._sink is not None
                    *lines, partial = (partial + chunk).split(b"\n")
                    for line in lines:
                        self._sink.emit("stderr", line=line.decode("utf-8", "replace"))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return

    def stderr_tail(self, chars: int = STDERR_TAIL_CHARS) -> str:
        """The last ``chars`` characters the agent wrote on stderr (whole lines if possible)."""
        text = self._stderr.text(complete=True)
        if len(text) <= chars:
            return text
        cut = text[-chars:]
        newline = cut.find("\n")
        return cut[newline + 1 :] if 0 <= newline < len(cut) - 1 else cut

    @property
    def stderr_bytes(self) -> int:
        return self._stderr.total

    # --- ending -------------------------------------------------------------------------

    async def _watch_exit(self) -> None:
        await self.group.process.wait()
        self._exited.set()

    async def close_stdin(self) -> None:
        with (
            anyio.move_on_after(KILL_RESERVE),
            contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError),
        ):
            await self.stdin.aclose()

    async def shutdown(self) -> None:
        """:meth:`end` by the default deadline: both graces, then the kill."""
        await self.end(anyio.current_time() + 2 * self._grace + KILL_RESERVE)

    async def end(self, until: float, hurry: anyio.Event | None = None) -> None:
        """The shutdown sequence, all of it by ``until`` (``anyio.current_time()``): polite
        until :data:`KILL_RESERVE` before it or until ``hurry`` is set, then SIGKILL to the
        group and to every straggler. Once is enough: later calls return at once."""
        if self._ended:
            return
        polite = await race(self._polite_end, on_any(hurry), deadline=until - KILL_RESERVE)
        if not polite.finished:  # cut short: whatever is left dies now
            await self.group.kill(wait=max(0.1, until - anyio.current_time()))
        self._ended = True

    async def _polite_end(self) -> None:
        """Close stdin → grace → SIGTERM the group → grace → SIGKILL the group; then sweep."""
        await self.close_stdin()
        if await self.group.exits_within(self._grace):
            await self.group.sweep(wait=STRAGGLER_WAIT)
        else:
            await self.group.terminate(
                self._grace,
                why="the agent did not exit after stdin closed",
                kill_wait=STRAGGLER_WAIT,
            )
