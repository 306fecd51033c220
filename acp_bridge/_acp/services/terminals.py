"""The five ``terminal/*`` methods: commands we run for the agent
(docs/explanation/security.md, terminals).

What a terminal gets: a cwd inside the roots (default: the session cwd); the constructed
environment plus the request's ``env`` — which may change anything (PATH, LD_PRELOAD: the
command line could do the same) except ``ACP_BRIDGE_DEPTH`` and the group marker, which the
bridge sets last; no stdin; its own process group (``_os/process/procgroup.py``).

Output (stdout and stderr merged) goes into a :class:`TailBuffer`, which keeps the *last*
``outputByteLimit`` bytes (the smaller of the request's and the profile's) and hands them out
cut on UTF-8 boundaries. A command that outlives the profile's ``terminal.timeout`` is
killed. Output stays readable after exit or kill until ``terminal/release``; every terminal
of a session is released when the session ends.

Killing: SIGTERM to the group, then SIGKILL; then whatever still carries the group's marker
(children that left the group with ``setsid``) — see ``_os/process/procgroup.py`` for the safety
rule.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import stat
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from acp_bridge._acp.rpc.router import RequestError
from acp_bridge._acp.wire.schema import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND,
    CreateTerminalParams,
    TerminalIdParams,
)
from acp_bridge._os.buffers import TailBuffer
from acp_bridge._os.fs.roots import Roots
from acp_bridge._os.os_errors import errno_name, os_reason
from acp_bridge._os.process.environment import DEPTH_ENV
from acp_bridge._os.process.procgroup import Graceful, Launcher, ProcessGroup, signal_name
from acp_bridge._records.bounded import BoundedList
from acp_bridge.config import TerminalSettings
from acp_bridge.envelope import TerminalRecord
from acp_bridge.errors import LimitExceeded, SpawnError
from acp_bridge.events import EventSink

KILL_GRACE = 2.0
MAX_RECORDS = 10_000
"""Terminals recorded for ``meta.terminals``; later ones are counted (``_records/bounded.py``)."""
TAIL_WAIT = 0.5  # after exit, for output still in the pipe
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_./+-]+")
_ENV_NAME = re.compile(r"[^=\0]+")


def shell_argv(command: str, args: list[str]) -> list[str]:
    """The argv to run: a shell line (no args, shell syntax) goes through /bin/sh -c."""
    if args or _PLAIN_WORD.fullmatch(command):
        return [command, *args]
    return ["/bin/sh", "-c", command]


class Terminal:
    # A plain class, not a dataclass: those compile their methods as every command starts.
    __slots__ = ("command", "eof", "exited", "group", "id", "output", "timed_out")

    def __init__(
        self,
        id: str,  # the ACP terminal id
        command: str,
        group: ProcessGroup,
        output: TailBuffer,
        exited: anyio.Event | None = None,
        eof: anyio.Event | None = None,
        timed_out: bool = False,
    ) -> None:
        self.id = id
        self.command = command
        self.group = group
        self.output = output
        self.exited = anyio.Event() if exited is None else exited
        self.eof = anyio.Event() if eof is None else eof
        self.timed_out = timed_out

    @property
    def marker(self) -> str:
        return self.group.marker

    @property
    def exit_status(self) -> dict[str, Any] | None:
        code = self.group.returncode
        if code is None or not self.exited.is_set():
            return None
        if code < 0:
            return {"exitCode": None, "signal": signal_name(-code)}
        return {"exitCode": code, "signal": None}

    def record(self) -> TerminalRecord:
        status = self.exit_status or {}
        return TerminalRecord(
            terminal_id=self.id,
            command=self.command,
            exit_code=status.get("exitCode"),
            signal=status.get("signal"),
            truncated=self.output.truncated,
            timed_out=self.timed_out,
        )

    async def kill(self) -> None:
        """The command's group, then whatever left it."""
        await self.group.terminate(KILL_GRACE, why="terminal killed")

    async def close(self) -> None:
        """Kill what is left and let go of the pipe (the reader task then ends)."""
        await self.kill()
        await self.group.aclose(KILL_GRACE)


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
        launcher: Launcher | None = None,
    ) -> None:
        self.roots = roots
        self._launcher = launcher
        self.cwd = cwd
        self.env = dict(env)
        self.settings = settings
        self._tg = tg
        self._sink = sink
        self._terminals: dict[str, Terminal] = {}
        self._starting = 0  # creates between their capacity check and their registration
        self._counter = 0
        self.records: BoundedList[TerminalRecord] = BoundedList("terminals", MAX_RECORDS)

    def _get(self, request: TerminalIdParams) -> Terminal:
        terminal = self._terminals.get(request.terminal_id)
        if terminal is None:
            raise RequestError(
                RESOURCE_NOT_FOUND, f"no terminal {request.terminal_id!r} (released or unknown)"
            )
        return terminal

    def _working_dir(self, requested: str | None) -> Path:
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
                        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
                return where.path
        except OSError as exc:  # why, in words: missing, not a folder, not searchable, a loop
            raise RequestError(
                INVALID_PARAMS,
                f"terminal cwd {requested} is not an existing directory it may use: "
                f"{os_reason(exc)}",
                {"reason": "os_error", "errno": errno_name(exc)},
            ) from exc

    def _environment(self, request: CreateTerminalParams) -> dict[str, str]:
        """Constructed env + request env; the depth is ours to set (the marker too, later)."""
        env = dict(self.env)
        for variable in request.env:
            if not _ENV_NAME.fullmatch(variable.name) or "\0" in variable.value:
                raise RequestError(
                    INVALID_PARAMS, f"invalid environment variable {variable.name!r}"
                )
            env[variable.name] = variable.value
        if DEPTH_ENV in self.env:
            env[DEPTH_ENV] = self.env[DEPTH_ENV]
        return env

    def _check_capacity(self) -> None:
        running = self._starting + sum(t.group.returncode is None for t in self._terminals.values())
        open_now = self._starting + len(self._terminals)
        for count, cap, why in (
            (running, self.settings.max_concurrent, "are already running (max_concurrent)"),
            (open_now, self.settings.max_open, "are open, not released (max_open)"),
        ):
            if count >= cap:
                raise LimitExceeded(f"refused: {count} terminals {why}; release or kill some")

    async def create(self, request: CreateTerminalParams) -> dict[str, Any]:
        shown = " ".join([request.command, *request.args])
        self._check_capacity()
        self._starting += 1  # the slot is ours across the awaits below
        try:
            cwd = await anyio.to_thread.run_sync(self._working_dir, request.cwd)
            group = await self._spawn(request, cwd, self._environment(request))
        finally:
            self._starting -= 1
        limit = self.settings.output_byte_limit
        if request.output_byte_limit is not None:
            limit = max(1, min(limit, request.output_byte_limit))
        self._counter += 1
        terminal = Terminal(f"term_{self._counter}", shown, group, TailBuffer(limit))
        self._terminals[terminal.id] = terminal
        if self._sink is not None:
            self._sink.emit(
                "terminal", terminal_id=terminal.id, command=shown, cwd=str(cwd), state="started"
            )
        self._tg.start_soon(self._run, terminal)
        return {"terminalId": terminal.id}

    async def _spawn(
        self, request: CreateTerminalParams, cwd: Path, env: dict[str, str]
    ) -> ProcessGroup:
        argv = shell_argv(request.command, request.args)
        graceful: Graceful | None = None
        dies = False
        try:
            if self._launcher is not None:  # in the run's sandbox, like the agent itself
                launch = self._launcher(argv, env, cwd)
                argv, env, cwd, graceful = launch.argv, launch.env, launch.cwd, launch.graceful
                dies = launch.dies_with_parent
            return await ProcessGroup.start(
                argv,
                env=env,
                cwd=cwd,
                stderr=subprocess.STDOUT,
                graceful=graceful,
                dies_with_parent=dies,
            )
        except (OSError, SpawnError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise RequestError(INTERNAL_ERROR, f"cannot start {argv[0]}: {reason}") from exc

    async def _run(self, terminal: Terminal) -> None:
        try:
            async with anyio.create_task_group() as tg:
                # Output is pumped separately from the exit: a background child the command
                # forked may keep the pipe open long after the command itself exited.
                tg.start_soon(self._pump, terminal)
                if not await terminal.group.exits_within(self.settings.timeout):
                    terminal.timed_out = True
                    await terminal.kill()
                with anyio.move_on_after(TAIL_WAIT):  # the last bytes still in the pipe
                    await terminal.eof.wait()
                self._exited(terminal)
        finally:
            # Shielded: a session that ends mid-command must still leave nothing behind.
            # Children that outlive a finished command are ended on release, not here.
            with anyio.CancelScope(shield=True):
                if terminal.group.returncode is None:
                    await terminal.kill()
                await terminal.group.aclose(KILL_GRACE)

    def _exited(self, terminal: Terminal) -> None:
        terminal.exited.set()
        record = terminal.record()
        self.records.add(record)
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
        stream = terminal.group.process.stdout
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

    async def output(self, request: TerminalIdParams) -> dict[str, Any]:
        terminal = self._get(request)
        reply: dict[str, Any] = {
            "output": terminal.output.text(complete=terminal.eof.is_set()),
            "truncated": terminal.output.truncated,
        }
        status = terminal.exit_status
        if status is not None:
            reply["exitStatus"] = status
        return reply

    async def wait_for_exit(self, request: TerminalIdParams) -> dict[str, Any]:
        terminal = self._get(request)
        await terminal.exited.wait()
        return terminal.exit_status or {"exitCode": None, "signal": None}

    async def kill(self, request: TerminalIdParams) -> dict[str, Any]:
        await self._get(request).kill()
        return {}

    async def release(self, request: TerminalIdParams) -> dict[str, Any]:
        terminal = self._get(request)
        del self._terminals[terminal.id]
        await terminal.close()
        return {}

    async def release_all(self) -> None:
        """End every terminal of the session (and what they forked)."""
        terminals, self._terminals = list(self._terminals.values()), {}
        if not terminals:  # most runs: no task group to open for nothing
            return
        async with anyio.create_task_group() as tg:
            for terminal in terminals:
                tg.start_soon(terminal.close)
