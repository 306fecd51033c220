"""The five ``terminal/*`` methods: commands we run for the agent (DESIGN §5).

What a terminal gets: a cwd inside the roots (default: the session cwd); the constructed
environment plus the request's ``env`` — which may change anything (PATH, LD_PRELOAD: the
command line could do the same) except ``ACP_BRIDGE_DEPTH`` and the terminal's own marker
``ACP_BRIDGE_TERMINAL``, which the bridge sets last; no stdin; its own process group.

Output (stdout and stderr merged) goes into :class:`OutputTail`, which keeps the *last*
``outputByteLimit`` bytes (the smaller of the request's and the profile's) and hands them out
cut on UTF-8 boundaries. A command that outlives the profile's ``terminal.timeout`` is
killed. Output stays readable after exit or kill until ``terminal/release``; every terminal
of a session is released when the session ends.

Killing: SIGTERM to the group, then SIGKILL; then every process still carrying the
terminal's marker (children that left the group with ``setsid``) gets SIGKILL too — see
reaper.py for what that can and cannot find. Signals go to the group only while its leader
is unreaped: after that the group id could in principle name someone else's group.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import re
import secrets
import signal
import stat
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process, TaskGroup

from acp_bridge._acp.connection import RpcFailure
from acp_bridge._acp.schema import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND,
    CreateTerminalParams,
    TerminalIdParams,
)
from acp_bridge._entries.runner import DEPTH_ENV
from acp_bridge._os.reaper import kill_marked
from acp_bridge._os.roots import Roots
from acp_bridge.config import TerminalSettings
from acp_bridge.envelope import RefusalRecord, TerminalRecord
from acp_bridge.errors import SandboxViolation
from acp_bridge.events import EventSink

TERMINAL_MARKER_ENV = "ACP_BRIDGE_TERMINAL"
KILL_GRACE = 2.0
TAIL_WAIT = 0.5  # after exit, for output still in the pipe
SMALL_OUTPUT = 1 << 16  # output kept in a growing buffer; beyond, in a ring of the limit
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_./+-]+")
_ENV_NAME = re.compile(r"[^=\0]+")


# --- the output buffer ------------------------------------------------------------------------


def _char_start(data: bytes) -> int:
    """Where the first whole character starts: past at most three UTF-8 continuation bytes
    (0b10xxxxxx) left over from a character cut in half at the front."""
    skip = 0
    while skip < min(3, len(data)) and data[skip] & 0xC0 == 0x80:
        skip += 1
    return skip


def _complete_end(data: bytes) -> int:
    """Where the last whole character ends: before a multi-byte character whose last bytes
    have not arrived yet (the command is still writing it)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:
            continue  # a continuation byte: the lead byte is further back
        return len(data) - back if _utf8_length(byte) > back else len(data)
    return len(data)


def _utf8_length(lead: int) -> int:
    """How many bytes the character starting with ``lead`` has (1 for anything invalid)."""
    for length, prefix, shift in ((2, 0b110, 5), (3, 0b1110, 4), (4, 0b11110, 3)):
        if lead >> shift == prefix:
            return length
    return 1


class OutputTail:
    """The last ``limit`` bytes of a stream; its text starts and ends on character
    boundaries, so its UTF-8 form is at most ``limit`` bytes and a suffix of the stream.

    Small outputs live in a plain buffer. Past ``SMALL_OUTPUT`` bytes the tail moves into a
    ring of exactly ``limit`` bytes, allocated once and written in place: however much the
    command writes, nothing is reallocated and nothing kept is copied.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.truncated = False
        self.total = 0
        self._buf = bytearray()
        self._ring = False
        self._head = 0  # in the ring: where the oldest kept byte is
        self._size = 0  # in the ring: how many bytes are kept

    def append(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if not self._ring:
            if len(self._buf) + len(chunk) <= min(self.limit, SMALL_OUTPUT):
                self._buf += chunk
                return
            small, self._buf = self._buf, bytearray(self.limit)
            self._ring = True
            self._write(small)
        self._write(chunk)

    def _write(self, chunk: bytes | bytearray) -> None:
        limit, size = self.limit, len(chunk)
        if size >= limit:
            self._buf[:] = chunk[size - limit :]  # same length: written in place
            self.truncated = self.truncated or self._size > 0 or size > limit
            self._head, self._size = 0, limit
            return
        at = (self._head + self._size) % limit
        first = min(size, limit - at)
        self._buf[at : at + first] = chunk[:first]
        self._buf[: size - first] = chunk[first:]
        excess = self._size + size - limit
        if excess > 0:
            self._head = (self._head + excess) % limit
            self.truncated = True
        self._size = min(limit, self._size + size)

    def _kept(self) -> bytes:
        view = memoryview(self._buf)
        if not self._ring:
            return bytes(view)
        if self._size < self.limit:
            return bytes(view[: self._size])
        return b"".join((view[self._head :], view[: self._head]))  # oldest first, one copy

    def text(self, *, complete: bool = False) -> str:
        """The kept bytes as text. Until the stream is ``complete``, a character whose last
        bytes are still to come is left out (the next call has it); invalid bytes anywhere
        else become U+FFFD, never silently dropped."""
        data = self._kept()
        start = _char_start(data) if self.truncated else 0
        end = len(data) if complete else _complete_end(data)
        return str(memoryview(data)[start:end], "utf-8", "replace")


def shell_argv(command: str, args: list[str]) -> list[str]:
    """The argv to run: a shell line (no args, shell syntax) goes through /bin/sh -c."""
    if args or _PLAIN_WORD.fullmatch(command):
        return [command, *args]
    return ["/bin/sh", "-c", command]


# --- one terminal -----------------------------------------------------------------------------


@dataclass
class Terminal:
    id: str
    command: str
    process: Process
    output: OutputTail
    marker: str
    exited: anyio.Event = field(default_factory=anyio.Event)
    eof: anyio.Event = field(default_factory=anyio.Event)
    timed_out: bool = False

    @property
    def exit_status(self) -> dict[str, Any] | None:
        code = self.process.returncode
        if code is None or not self.exited.is_set():
            return None
        if code < 0:
            return {"exitCode": None, "signal": _signal_name(-code)}
        return {"exitCode": code, "signal": None}

    def record(self) -> TerminalRecord:
        status = self.exit_status or {}
        return TerminalRecord(
            terminal_id=self.id,
            command=self.command,
            exit_code=status.get("exitCode"),
            signal=status.get("signal"),
            truncated=self.output.truncated,
        )

    def _signal_group(self, sig: signal.Signals) -> None:
        # Only while the leader is unreaped: then its pid, which is the group id, cannot
        # have been given to anyone else.
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, sig)

    async def _leader_exits_within(self, seconds: float) -> bool:
        with anyio.move_on_after(seconds):
            await self.process.wait()
        return self.process.returncode is not None

    async def kill(self) -> None:
        """SIGTERM to the command's group, then SIGKILL; then SIGKILL to whatever still
        carries the terminal's marker (children that left the group)."""
        if self.process.returncode is None:
            self._signal_group(signal.SIGTERM)
            if not await self._leader_exits_within(KILL_GRACE):
                self._signal_group(signal.SIGKILL)
                await self._leader_exits_within(KILL_GRACE)
        await anyio.to_thread.run_sync(kill_marked, TERMINAL_MARKER_ENV, self.marker)

    async def close(self) -> None:
        """Kill what is left and let go of the pipe (the reader task then ends)."""
        await self.kill()
        await self.let_go()

    async def let_go(self) -> None:
        """Close the pipe and reap the leader (bounded: a process stuck in the kernel after
        SIGKILL must not hang the session)."""
        with anyio.move_on_after(KILL_GRACE):
            await self.process.aclose()


# --- the service --------------------------------------------------------------------------------


class TerminalService:
    """The terminals of one session. ``tg`` owns their reader tasks."""

    def __init__(
        self,
        *,
        roots: Roots,
        cwd: Path,
        env: Mapping[str, str],
        settings: TerminalSettings,
        tg: TaskGroup,
        sink: EventSink | None = None,
    ) -> None:
        self.roots = roots
        self.cwd = cwd
        self.env = dict(env)
        self.settings = settings
        self._tg = tg
        self._sink = sink
        self._terminals: dict[str, Terminal] = {}
        self._starting = 0  # creates between their capacity check and their registration
        self._counter = 0
        self.records: list[TerminalRecord] = []
        self.refusals: list[RefusalRecord] = []

    def _get(self, params: dict[str, Any]) -> Terminal:
        request = TerminalIdParams.model_validate(params)
        terminal = self._terminals.get(request.terminal_id)
        if terminal is None:
            raise RpcFailure(
                RESOURCE_NOT_FOUND, f"no terminal {request.terminal_id!r} (released or unknown)"
            )
        return terminal

    def _refuse(self, command: str, message: str, *, sandbox: bool = True) -> RpcFailure:
        self.refusals.append(
            RefusalRecord(method="terminal/create", target=command, reason=message)
        )
        return RpcFailure(
            INVALID_PARAMS, message, {"reason": "sandbox_violation"} if sandbox else None
        )

    def _working_dir(self, requested: str | None, command: str) -> Path:
        """The request's cwd, resolved inside the roots (read or write) and a directory.

        Resolving is all the confinement a cwd can get: the command may ``cd`` anywhere.
        """
        if requested is None:
            return self.cwd
        try:
            with self.roots.resolve(
                requested, write=False, follow_last=True, what="terminal cwd"
            ) as where:
                if where.name:
                    info = os.stat(where.name, dir_fd=where.dir_fd)
                    if not stat.S_ISDIR(info.st_mode):
                        raise NotADirectoryError(requested)
                return where.path
        except SandboxViolation as exc:
            raise self._refuse(command, str(exc)) from exc
        except OSError as exc:
            raise RpcFailure(
                INVALID_PARAMS, f"terminal cwd {requested} is not an existing directory"
            ) from exc

    def _environment(self, request: CreateTerminalParams, marker: str) -> dict[str, str]:
        """Constructed env + request env; the depth and the marker are ours to set."""
        env = dict(self.env)
        for variable in request.env:
            if not _ENV_NAME.fullmatch(variable.name) or "\0" in variable.value:
                raise RpcFailure(INVALID_PARAMS, f"invalid environment variable {variable.name!r}")
            env[variable.name] = variable.value
        if DEPTH_ENV in self.env:
            env[DEPTH_ENV] = self.env[DEPTH_ENV]
        env[TERMINAL_MARKER_ENV] = marker
        return env

    def _check_capacity(self, command: str) -> None:
        running = self._starting + sum(
            t.process.returncode is None for t in self._terminals.values()
        )
        open_now = self._starting + len(self._terminals)
        for count, cap, why in (
            (running, self.settings.max_concurrent, "are already running (max_concurrent)"),
            (open_now, self.settings.max_open, "are open, not released (max_open)"),
        ):
            if count >= cap:
                raise self._refuse(
                    command,
                    f"refused: {count} terminals {why}; release or kill some",
                    sandbox=False,
                )

    async def create(self, **params: Any) -> dict[str, Any]:
        request = CreateTerminalParams.model_validate(params)
        shown = " ".join([request.command, *request.args])
        self._check_capacity(shown)
        self._starting += 1  # the slot is ours across the awaits below
        try:
            cwd = await anyio.to_thread.run_sync(self._working_dir, request.cwd, shown)
            marker = f"{os.getpid()}-{secrets.token_hex(8)}"
            process = await self._spawn(request, cwd, self._environment(request, marker))
        finally:
            self._starting -= 1
        limit = self.settings.output_byte_limit
        if request.output_byte_limit is not None:
            limit = min(limit, request.output_byte_limit)
        self._counter += 1
        terminal = Terminal(f"term_{self._counter}", shown, process, OutputTail(limit), marker)
        self._terminals[terminal.id] = terminal
        if self._sink is not None:
            self._sink.emit(
                "terminal", terminal_id=terminal.id, command=shown, cwd=str(cwd), state="started"
            )
        self._tg.start_soon(self._run, terminal)
        return {"terminalId": terminal.id}

    @staticmethod
    async def _spawn(request: CreateTerminalParams, cwd: Path, env: dict[str, str]) -> Process:
        argv = shell_argv(request.command, request.args)
        try:
            return await anyio.open_process(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise RpcFailure(
                INTERNAL_ERROR, f"cannot start {argv[0]}: {exc.strerror or exc}"
            ) from exc

    async def _run(self, terminal: Terminal) -> None:
        try:
            async with anyio.create_task_group() as tg:
                # Output is pumped separately from the exit: a background child the command
                # forked may keep the pipe open long after the command itself exited.
                tg.start_soon(self._pump, terminal)
                with anyio.move_on_after(self.settings.timeout) as scope:
                    await terminal.process.wait()
                if scope.cancelled_caught:
                    terminal.timed_out = True
                    await terminal.kill()
                with anyio.move_on_after(TAIL_WAIT):  # the last bytes still in the pipe
                    await terminal.eof.wait()
                self._exited(terminal)
        finally:
            # Shielded: a session that ends mid-command must still leave nothing behind.
            # Children that outlive a finished command are ended on release, not here.
            with anyio.CancelScope(shield=True):
                if terminal.process.returncode is None:
                    await terminal.kill()
                await terminal.let_go()

    def _exited(self, terminal: Terminal) -> None:
        terminal.exited.set()
        record = terminal.record()
        self.records.append(record)
        if self._sink is not None:
            self._sink.emit(
                "terminal",
                terminal_id=terminal.id,
                command=terminal.command,
                state="exited",
                exit_code=record.exit_code,
                signal=record.signal,
                timed_out=terminal.timed_out,
            )

    async def _pump(self, terminal: Terminal) -> None:
        stream = terminal.process.stdout
        assert stream is not None
        sink = (
            self._sink if self._sink is not None and self._sink.wants("terminal_output") else None
        )
        # Incremental: a character split across two reads is shown whole, once.
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        try:
            async for chunk in stream:
                terminal.output.append(chunk)
                if sink is not None:
                    sink.emit(
                        "terminal_output", terminal_id=terminal.id, text=decoder.decode(chunk)
                    )
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            terminal.eof.set()

    async def output(self, **params: Any) -> dict[str, Any]:
        terminal = self._get(params)
        reply: dict[str, Any] = {
            "output": terminal.output.text(complete=terminal.eof.is_set()),
            "truncated": terminal.output.truncated,
        }
        status = terminal.exit_status
        if status is not None:
            reply["exitStatus"] = status
        return reply

    async def wait_for_exit(self, **params: Any) -> dict[str, Any]:
        terminal = self._get(params)
        await terminal.exited.wait()
        return terminal.exit_status or {"exitCode": None, "signal": None}

    async def kill(self, **params: Any) -> dict[str, Any]:
        await self._get(params).kill()
        return {}

    async def release(self, **params: Any) -> dict[str, Any]:
        terminal = self._get(params)
        del self._terminals[terminal.id]
        await terminal.close()
        return {}

    async def release_all(self) -> None:
        """End every terminal of the session (and what they forked)."""
        terminals, self._terminals = list(self._terminals.values()), {}
        async with anyio.create_task_group() as tg:
            for terminal in terminals:
                tg.start_soon(terminal.close)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"SIG{number}"
