"""The bash-direct entry path: one shell command, no model loop (DESIGN §1-§2).

``bash(command, run_in_subtask=True)`` runs the command as a subtask: one level deeper (so the
depth limit applies), observe profile ``long_shell``, and a ``subtask.bash.result.v1``
envelope whatever happens (exit 0 → done; N → failed; timeout → 124; cannot start → -1).
``run_in_subtask=False`` is a plain call at the caller's own level: it returns the bare
:class:`CommandResult` (the same fields, no envelope) and raises typed errors like any library
call. The caller chooses the shape explicitly; nothing here switches it behind their back.

Either way the command runs under ``bash -c`` in its own process group, with a constructed
environment (never the whole host environment), stdin closed, each output stream kept as head
and tail up to ``max_output_bytes``. When the command ends, times out or the caller cancels,
the whole group is killed, so background children and grandchildren never outlive it.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict, Unpack, overload

import anyio
from anyio.abc import ByteReceiveStream, Process

from acp_bridge._entries.runner import SubtaskContext, current_depth, run_configured
from acp_bridge._os.buffers import HeadTail
from acp_bridge._os.roots import constructed_env
from acp_bridge.config import LoadedConfig, load_config
from acp_bridge.envelope import SubtaskResult, bash_result
from acp_bridge.errors import ConfigError
from acp_bridge.events import EventHandler, EventSink

TIMEOUT_EXIT_CODE = 124
NOT_STARTED_EXIT_CODE = -1
TERM_GRACE = 2.0
"""Seconds a timed-out command's group gets between SIGTERM and SIGKILL."""
DRAIN_GRACE = 1.0
"""Seconds to wait for the output pipes to close once the group is gone. Only a process that
left the group on purpose (``setsid``) can hold them open longer; it must not hang the result."""


@dataclass(frozen=True)
class CommandResult:
    """How one command ended and what it printed (head and tail of each stream)."""

    exit_code: int
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    timed_out_after: float | None = None
    start_error: str = ""

    def to_output(self) -> dict[str, Any]:
        """The ``subtask.bash.result.v1`` output object (also the plain tool result)."""
        return {
            "exit_code": self.exit_code,
            "stdout_truncated": self.stdout_truncated,
            "stderr_truncated": self.stderr_truncated,
            "stdout": self.stdout,
            "stderr": self.stderr,
        }

    def to_tool_output(self) -> dict[str, Any]:
        """The plain tool result: the output object, plus ``error`` when the command did not
        end on its own (a model cannot tell exit 124 from a real exit 124 otherwise)."""
        out = self.to_output()
        if self.start_error:
            out["error"] = f"could not start: {self.start_error}"
        elif self.timed_out_after is not None:
            out["error"] = f"timed out after {self.timed_out_after:g}s"
        return out

    def envelope(self, *, task_id: str | None = None) -> SubtaskResult:
        return bash_result(
            exit_code=self.exit_code,
            stdout=self.stdout,
            stderr=self.stderr,
            stdout_truncated=self.stdout_truncated,
            stderr_truncated=self.stderr_truncated,
            timeout_s=self.timed_out_after,
            start_error=self.start_error,
            task_id=task_id,
        )


# --- the entry ----------------------------------------------------------------------------


class BashOptions(TypedDict, total=False):
    """The keyword options of :func:`bash`, whichever shape it returns."""

    timeout: float | None
    """Seconds before the command's group is killed (default: ``tools.bash.timeout``)."""
    cwd: str | Path | None
    env: Mapping[str, str] | None
    """Explicit variables added to the constructed environment."""
    max_output_bytes: int | None
    """Bytes kept per stream, head and tail (default: ``tools.bash.max_output_bytes``)."""
    observe_profile: str | None
    on_event: EventHandler | None
    config: LoadedConfig | None


@overload
async def bash(
    command: str, *, run_in_subtask: Literal[True] = True, **options: Unpack[BashOptions]
) -> SubtaskResult: ...


@overload
async def bash(
    command: str, *, run_in_subtask: Literal[False], **options: Unpack[BashOptions]
) -> CommandResult: ...


async def bash(
    command: str, *, run_in_subtask: bool = True, **options: Unpack[BashOptions]
) -> SubtaskResult | CommandResult:
    """Run one shell command; see the module docstring for the two shapes and
    :class:`BashOptions` for the options. Live events go to ``on_event``: ``terminal``, and
    with ``long_shell`` (the default profile here) ``terminal_output``."""
    _check_options(options)
    if not run_in_subtask:
        config = options.get("config")
        loaded = config if config is not None else load_config()
        sink = EventSink(options.get("on_event"), options.get("observe_profile") or "long_shell")
        return await _run_configured_command(command, loaded, sink, current_depth(), options)

    async def body(ctx: SubtaskContext, loaded: LoadedConfig) -> SubtaskResult:
        sink = EventSink(
            options.get("on_event"),
            options.get("observe_profile") or "long_shell",
            task_id=ctx.task_id,
            started=ctx.started,
        )
        result = await _run_configured_command(command, loaded, sink, ctx.depth, options)
        return result.envelope(task_id=ctx.task_id)

    return await run_configured("bash", options.get("config"), body)


def bash_sync(command: str, **options: Unpack[BashOptions]) -> SubtaskResult:
    """``bash(command, run_in_subtask=True, ...)`` for callers without an event loop (it
    starts one)."""

    async def call() -> SubtaskResult:
        return await bash(command, **options)

    return anyio.run(call)


def _check_options(options: BashOptions) -> None:
    # **options is typed for checkers only; a misspelt option must not pass unnoticed.
    unknown = set(options) - set(BashOptions.__annotations__)
    if unknown:
        raise TypeError(f"bash() got unexpected keyword arguments: {', '.join(sorted(unknown))}")


async def _run_configured_command(
    command: str, loaded: LoadedConfig, sink: EventSink, depth: int, options: BashOptions
) -> CommandResult:
    settings = loaded.config.tools.bash
    time_limit = options.get("timeout")
    keep = options.get("max_output_bytes")
    limit = settings.timeout if time_limit is None else time_limit
    keep = settings.max_output_bytes if keep is None else keep
    if limit <= 0:
        raise ConfigError(f"timeout must be a positive number of seconds, got {limit}")
    if keep < 2:
        raise ConfigError(f"max_output_bytes must be at least 2, got {keep}")
    return await run_command(
        command,
        time_limit=limit,
        cwd=options.get("cwd"),
        env=options.get("env"),
        max_output_bytes=keep,
        sink=sink,
        depth=depth,
    )


# --- running one command ------------------------------------------------------------------


async def run_command(
    command: str,
    *,
    time_limit: float,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    max_output_bytes: int,
    sink: EventSink | None = None,
    depth: int,
) -> CommandResult:
    """Run ``command`` under ``bash -c`` in its own process group; never leaves a process.

    ``depth`` is the subtask level the command runs at (passed down in ``ACP_BRIDGE_DEPTH``
    so a bridge started by the command knows it).
    """
    sink = sink or EventSink(None)
    environment = constructed_env(depth=depth, extra=env)
    shell = shutil.which("bash", path=environment["PATH"])
    if shell is None:
        return _not_started(f"bash not found on PATH ({environment['PATH']})")
    if cwd is not None and not await anyio.Path(cwd).is_dir():
        return _not_started(f"working directory does not exist: {cwd}")
    try:
        process = await anyio.open_process(
            [shell, "-c", command],
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=environment,
            start_new_session=True,  # its own process group: one signal reaches every child
        )
    except OSError as exc:
        return _not_started(f"{shell}: {exc.strerror or exc}")
    sink.emit("terminal", state="started", command=command, pid=process.pid)
    stdout, stderr = HeadTail(max_output_bytes), HeadTail(max_output_bytes)
    try:
        async with anyio.create_task_group() as readers:
            readers.start_soon(_drain, process.stdout, stdout, "stdout", sink)
            readers.start_soon(_drain, process.stderr, stderr, "stderr", sink)
            exit_code, timed_out = await _wait(process, time_limit)
            # The command is over; whatever it started in the background goes with it (and
            # lets go of the pipes, so the readers see their end).
            _signal_group(process.pid, signal.SIGKILL)
            readers.cancel_scope.deadline = anyio.current_time() + DRAIN_GRACE
    finally:
        # Also on cancellation by the caller: no process outlives the call.
        with anyio.CancelScope(shield=True):
            _signal_group(process.pid, signal.SIGKILL)
            await process.aclose()
    sink.emit("terminal", state="exited", command=command, exit_code=exit_code, timed_out=timed_out)
    return CommandResult(
        exit_code=exit_code,
        stdout=stdout.text(),
        stderr=stderr.text(),
        stdout_truncated=stdout.truncated,
        stderr_truncated=stderr.truncated,
        timed_out_after=time_limit if timed_out else None,
    )


def _not_started(reason: str) -> CommandResult:
    return CommandResult(exit_code=NOT_STARTED_EXIT_CODE, start_error=reason)


async def _wait(process: Process, time_limit: float) -> tuple[int, bool]:
    """The command's exit code and whether it timed out (then the code is 124)."""
    with anyio.move_on_after(time_limit):
        return _exit_code(await process.wait()), False
    _signal_group(process.pid, signal.SIGTERM)  # a chance to clean up, then no more
    with anyio.move_on_after(TERM_GRACE):
        await process.wait()
        return TIMEOUT_EXIT_CODE, True
    _signal_group(process.pid, signal.SIGKILL)
    await process.wait()
    return TIMEOUT_EXIT_CODE, True


def _exit_code(returncode: int) -> int:
    # Killed by signal N: report 128 + N as a shell would, keeping -1 for "never started".
    return 128 - returncode if returncode < 0 else returncode


def _signal_group(pgid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone
        os.killpg(pgid, signum)


async def _drain(
    stream: ByteReceiveStream | None, buffer: HeadTail, name: str, sink: EventSink
) -> None:
    if stream is None:
        return
    # Chunks may split a UTF-8 character; live events decode incrementally.
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    live = sink.wants("terminal_output")
    async for chunk in stream:
        buffer.feed(chunk)
        if live and (text := decoder.decode(chunk)):
            sink.emit("terminal_output", stream=name, text=text)
