"""The five ``terminal/*`` methods: commands we run for the agent (DESIGN §5).

Each terminal runs in its own process group (so ``kill`` reaches the children it forks)
with a constructed environment plus the request's ``env``, in a cwd inside the roots.
Output (stdout and stderr merged) goes into :class:`OutputTail`, which keeps the *last*
``outputByteLimit`` bytes cut on a UTF-8 boundary. A command that outlives the profile's
``terminal.timeout`` is killed. Output stays readable after exit or kill until
``terminal/release``; every terminal of a session is released when the session ends.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process, TaskGroup

from acp_bridge.config import TerminalSettings
from acp_bridge.envelope import TerminalRecord
from acp_bridge.errors import SandboxViolation
from acp_bridge.events import EventSink
from acp_bridge.jsonrpc import RpcFailure
from acp_bridge.protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND,
    CreateTerminalParams,
    TerminalIdParams,
)
from acp_bridge.sandbox import Roots

KILL_GRACE = 2.0
TAIL_WAIT = 0.5  # after exit, for output still in the pipe
READ_SIZE = 1 << 16
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_./+-]+")


class OutputTail:
    """The last ``limit`` bytes of a stream; the text starts on a character boundary."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.truncated = False
        self._data = bytearray()

    def append(self, chunk: bytes) -> None:
        self._data += chunk
        excess = len(self._data) - self.limit
        if excess > 0:
            del self._data[:excess]  # O(1) amortized in CPython: the start pointer moves
            self.truncated = True

    def text(self) -> str:
        data = bytes(self._data)
        if self.truncated:
            # Drop a character cut in half at the front: UTF-8 continuation bytes are
            # 0b10xxxxxx, and a character has at most three of them.
            skip = 0
            while skip < min(3, len(data)) and data[skip] & 0xC0 == 0x80:
                skip += 1
            data = data[skip:]
        # A character cut at the end (still being written) is left for the next read.
        return data.decode("utf-8", "ignore" if not self.truncated else "replace")


def shell_argv(command: str, args: list[str]) -> list[str]:
    """The argv to run: a shell line (no args, shell syntax) goes through /bin/sh -c."""
    if args or _PLAIN_WORD.fullmatch(command):
        return [command, *args]
    return ["/bin/sh", "-c", command]


@dataclass
class Terminal:
    id: str
    command: str
    process: Process
    output: OutputTail
    exited: anyio.Event = field(default_factory=anyio.Event)
    eof: anyio.Event = field(default_factory=anyio.Event)
    timed_out: bool = False
    killed: bool = False

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

    async def kill(self) -> None:
        """SIGTERM to the command's group, then SIGKILL if it is still there."""
        if self.exited.is_set():
            _signal_group(self.process.pid, signal.SIGKILL)  # forked children, if any
            return
        self.killed = True
        _signal_group(self.process.pid, signal.SIGTERM)
        with anyio.move_on_after(KILL_GRACE):
            await self.exited.wait()
        _signal_group(self.process.pid, signal.SIGKILL)
        with anyio.move_on_after(KILL_GRACE):
            await self.exited.wait()


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
        self._counter = 0
        self.records: list[TerminalRecord] = []

    def _get(self, params: dict[str, Any]) -> Terminal:
        request = TerminalIdParams.model_validate(params)
        terminal = self._terminals.get(request.terminal_id)
        if terminal is None:
            raise RpcFailure(
                RESOURCE_NOT_FOUND, f"no terminal {request.terminal_id!r} (released or unknown)"
            )
        return terminal

    def _working_dir(self, requested: str | None) -> Path:
        if requested is None:
            return self.cwd
        try:
            where = _inside_any(Path(requested), self.roots)
        except SandboxViolation as exc:
            raise RpcFailure(INVALID_PARAMS, f"terminal cwd {exc}") from exc
        if not where.is_dir():
            raise RpcFailure(INVALID_PARAMS, f"terminal cwd {requested} is not a directory")
        return where

    async def create(self, **params: Any) -> dict[str, Any]:
        request = CreateTerminalParams.model_validate(params)
        alive = sum(not t.exited.is_set() for t in self._terminals.values())
        if alive >= self.settings.max_concurrent:
            raise RpcFailure(
                INVALID_PARAMS,
                f"refused: {alive} terminals already running (terminal.max_concurrent)",
            )
        cwd = self._working_dir(request.cwd)
        env = {**self.env, **{v.name: v.value for v in request.env}}
        argv = shell_argv(request.command, request.args)
        shown = " ".join([request.command, *request.args])
        limit = self.settings.output_byte_limit
        if request.output_byte_limit is not None:
            limit = min(limit, request.output_byte_limit)
        try:
            process = await anyio.open_process(
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
        self._counter += 1
        terminal = Terminal(f"term_{self._counter}", shown, process, OutputTail(limit))
        self._terminals[terminal.id] = terminal
        if self._sink is not None:
            self._sink.emit("terminal", terminal_id=terminal.id, command=shown, state="started")
        self._tg.start_soon(self._run, terminal)
        return {"terminalId": terminal.id}

    async def _run(self, terminal: Terminal) -> None:
        async with anyio.create_task_group() as tg:
            # Output is pumped separately from the exit: a background child the command
            # forked may keep the pipe open long after the command itself exited.
            tg.start_soon(self._pump, terminal)
            with anyio.move_on_after(self.settings.timeout) as scope:
                await terminal.process.wait()
            if scope.cancelled_caught:
                terminal.timed_out = True
                await self._stop(terminal)
            with anyio.move_on_after(TAIL_WAIT):  # the last bytes still in the pipe
                await terminal.eof.wait()
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
        wants_output = self._sink is not None and self._sink.wants("terminal_output")
        try:
            async for chunk in stream:
                terminal.output.append(chunk)
                if wants_output and self._sink is not None:
                    self._sink.emit(
                        "terminal_output",
                        terminal_id=terminal.id,
                        text=chunk.decode("utf-8", "replace"),
                    )
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            terminal.eof.set()

    async def _stop(self, terminal: Terminal) -> None:
        _signal_group(terminal.process.pid, signal.SIGTERM)
        with anyio.move_on_after(KILL_GRACE):
            await terminal.process.wait()
        _signal_group(terminal.process.pid, signal.SIGKILL)
        await terminal.process.wait()

    async def output(self, **params: Any) -> dict[str, Any]:
        terminal = self._get(params)
        reply: dict[str, Any] = {
            "output": terminal.output.text(),
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
        await terminal.kill()
        return {}

    async def release_all(self) -> None:
        """End every terminal of the session (and what they forked)."""
        terminals, self._terminals = list(self._terminals.values()), {}
        async with anyio.create_task_group() as tg:
            for terminal in terminals:
                tg.start_soon(terminal.kill)


def _inside_any(path: Path, roots: Roots) -> Path:
    try:
        return roots.check_write(path)
    except SandboxViolation:
        return roots.check_read(path)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"SIG{number}"
