"""The bash-direct entry path: one shell command, no model loop
(docs/explanation/envelope.md).

``bash(command)`` runs the command as a subtask: one level deeper (so the depth limit
applies), observe profile ``long_shell``, and a ``subtask.bash.result.v1`` envelope whatever
happens (exit 0 → done; N → failed; timeout → 124; cannot start → -1; cancelled → failed
``cancelled`` with what it printed so far). ``run_in_subtask=False`` is a plain call at the
caller's own level: it returns the bare :class:`CommandResult` (the same fields, no envelope)
and raises typed errors like any library call.

Either way the command runs under ``bash -c`` in its own process group
(``_os/process/procgroup.py``), with a constructed environment (never the whole host
environment), stdin closed, each output stream kept as head and tail up to
``max_output_bytes``. When the command ends, times out or is cancelled, the whole group is
ended, so background children never outlive it.
"""

from __future__ import annotations

import codecs
import dataclasses
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast, overload

import anyio
from anyio.abc import ByteReceiveStream
from typing_extensions import Unpack

from acp_bridge._entries.confinement import confined
from acp_bridge._entries.depth import current_depth, inherited_max_depth
from acp_bridge._entries.entry_table import ENTRY_TABLE, checked_or_error
from acp_bridge._entries.enveloped import RunContext, resolve_timeout, run_enveloped
from acp_bridge._entries.options import BashOptions
from acp_bridge._entries.sync import synchronous
from acp_bridge._os.buffers import HeadTail
from acp_bridge._os.process.environment import constructed_env
from acp_bridge._os.process.procgroup import ProcessGroup
from acp_bridge._os.race import race, wait_any, wait_event
from acp_bridge.config import MAX_BYTES, LoadedConfig, SandboxSettings, load_config
from acp_bridge.envelope import (
    BASH_RESULT_SCHEMA,
    Meta,
    SubtaskResult,
    done,
    failed,
    first_line,
    new_task_id,
)
from acp_bridge.errors import ConfigError, ErrorCode, SpawnError
from acp_bridge.events import EventHandler, EventSink

TIMEOUT_EXIT_CODE = 124
NOT_STARTED_EXIT_CODE = -1
TERM_GRACE = 2.0
"""Seconds a timed-out or cancelled command's group gets between SIGTERM and SIGKILL."""
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
    cancelled: bool = False
    start_error: str = ""
    sandbox: dict[str, Any] | None = None
    """How the command was confined (``meta.sandbox`` of its envelope)."""

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
        elif self.cancelled:
            out["error"] = "cancelled"
        elif self.timed_out_after is not None:
            out["error"] = f"timed out after {self.timed_out_after:g}s"
        return out

    def failure(self) -> tuple[ErrorCode, str] | None:
        """Why the command counts as failed, if it does."""
        if self.start_error:
            return ErrorCode.SPAWN_FAILED, f"bash could not start: {self.start_error}"
        if self.cancelled:
            return ErrorCode.CANCELLED, "bash was cancelled"
        if self.timed_out_after is not None:
            return ErrorCode.TIMEOUT, f"bash timed out after {self.timed_out_after:g}s"
        if self.exit_code != 0:
            return ErrorCode.NONZERO_EXIT, f"bash exited with code {self.exit_code}"
        return None

    def envelope(self, *, task_id: str | None = None, meta: Meta | None = None) -> SubtaskResult:
        """The ``subtask.bash.result.v1`` envelope (docs/reference/envelope.md)."""
        common: dict[str, Any] = {
            "output": self.to_output(),
            "output_kind": "json",
            "output_schema": BASH_RESULT_SCHEMA,
            "meta": meta,
            "task_id": task_id,
        }
        failure = self.failure()
        if failure is not None:
            return failed(failure[1], failure[0], **common)
        summary = first_line(self.stdout) or first_line(self.stderr) or "exit 0 (no output)"
        return done(summary=summary, **common)


# --- the entry ----------------------------------------------------------------------------


@overload
async def bash(
    command: str,
    *,
    run_in_subtask: Literal[True] = True,
    on_event: EventHandler | None = None,
    config: LoadedConfig | None = None,
    cancel: anyio.Event | None = None,
    abort: anyio.Event | None = None,
    **options: Unpack[BashOptions],
) -> SubtaskResult: ...


@overload
async def bash(
    command: str,
    *,
    run_in_subtask: Literal[False],
    on_event: EventHandler | None = None,
    config: LoadedConfig | None = None,
    cancel: anyio.Event | None = None,
    abort: anyio.Event | None = None,
    **options: Unpack[BashOptions],
) -> CommandResult: ...


async def bash(
    command: str,
    *,
    run_in_subtask: bool = True,
    on_event: EventHandler | None = None,
    config: LoadedConfig | None = None,
    cancel: anyio.Event | None = None,
    abort: anyio.Event | None = None,
    **options: Unpack[BashOptions],
) -> SubtaskResult | CommandResult:
    """Run one shell command; see the module docstring for the two shapes.

    ``options`` are :class:`~acp_bridge.BashOptions`: ``timeout`` (default
    ``tools.bash.timeout``) kills the command's group; ``env`` adds explicit variables to the
    constructed environment; ``max_output_bytes`` (default ``tools.bash.max_output_bytes``)
    is kept per stream, head and tail. Live events go to ``on_event``: ``terminal``, and
    with ``long_shell`` (the default here) ``terminal_output``. ``cancel`` stops the command
    (SIGTERM, then SIGKILL after a grace); ``abort`` SIGKILLs it at once. Either way what it
    printed so far is kept. ``task_id`` names the subtask run (default: a fresh ``sub_…``
    id; a plain call has none). A plain call raises :class:`~acp_bridge.ConfigError` for a
    bad option; a subtask answers with a failed envelope.
    """
    given, invalid = checked_or_error("bash", options)
    checked = cast(BashOptions, given)
    profile = checked.get("observe_profile") or "long_shell"
    cwd, env, timeout = checked.get("cwd"), checked.get("env"), checked.get("timeout")
    keep = checked.get("max_output_bytes")
    if not run_in_subtask:
        if invalid is not None:
            raise invalid
        loaded = config if config is not None else load_config()
        shell = _Shell(command, cwd, env, EventSink(on_event, profile), cancel, abort)
        return await shell.run(loaded, timeout, keep, current_depth(), new_task_id())

    async def body(ctx: RunContext) -> SubtaskResult:
        if invalid is not None:
            raise invalid
        sink = EventSink(on_event, profile, task_id=ctx.task_id, started=ctx.started)
        shell = _Shell(command, cwd, env, sink, cancel, abort)
        result = await shell.run(ctx.config, timeout, keep, ctx.depth, ctx.task_id)
        return result.envelope(task_id=ctx.task_id, meta=Meta(sandbox=result.sandbox))

    return await run_enveloped(
        "bash", body, config=config, task_id=checked.get("task_id"), task=command, cwd=cwd,
        cancel=cancel,
    )  # fmt: skip


bash_sync = synchronous(bash)


@dataclass
class _Shell:
    command: str
    cwd: str | Path | None
    env: Mapping[str, str] | None
    sink: EventSink
    cancel: anyio.Event | None
    abort: anyio.Event | None = None

    async def run(
        self,
        loaded: LoadedConfig,
        timeout: float | None,
        keep: int | None,
        depth: int,
        task_id: str,
    ) -> CommandResult:
        settings = loaded.config.tools.bash
        limit = resolve_timeout(timeout, ENTRY_TABLE["bash"].default_timeout(loaded, None))
        keep = settings.max_output_bytes if keep is None else keep
        if not 2 <= keep <= MAX_BYTES:
            raise ConfigError(f"max_output_bytes must be from 2 to {MAX_BYTES}, got {keep}")
        environment = constructed_env(depth=depth, max_depth=inherited_max_depth(), extra=self.env)
        shell = shutil.which("bash", path=environment["PATH"])
        if shell is None:
            return _not_started(f"bash not found on PATH ({environment['PATH']})")
        if self.cwd is not None and not await anyio.Path(self.cwd).is_dir():
            return _not_started(f"working directory does not exist: {self.cwd}")
        where = Path(await anyio.Path(self.cwd or ".").resolve())
        # The command runs in the config's default sandbox, its cwd the one write root.
        sandbox = loaded.config.sandbox.over(SandboxSettings())
        async with confined(
            sandbox, task_id=task_id, cwd=where, read_roots=(), write_roots=(where,), measure=False
        ) as confinement:
            try:
                launch = confinement.launch([shell, "-c", self.command], environment, where)
                group = await ProcessGroup.start(
                    launch.argv,
                    env=launch.env,
                    cwd=launch.cwd,
                    graceful=launch.graceful,
                    dies_with_parent=launch.dies_with_parent,
                )
            except (OSError, SpawnError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                return _not_started(f"{shell}: {reason}")
            result = await self._supervise(group, limit, keep)
        return dataclasses.replace(result, sandbox=confinement.box.meta())

    async def _supervise(self, group: ProcessGroup, limit: float, keep: int) -> CommandResult:
        sink, command = self.sink, self.command
        sink.emit("terminal", state="started", command=command, pid=group.pid)
        stdout, stderr = HeadTail(keep), HeadTail(keep)
        try:
            async with anyio.create_task_group() as readers:
                readers.start_soon(_drain, group.process.stdout, stdout, "stdout", sink)
                readers.start_soon(_drain, group.process.stderr, stderr, "stderr", sink)
                raced = await race(
                    group.process.wait, lambda: wait_any(self.cancel, self.abort), timeout=limit
                )
                if not raced.finished:
                    # SIGTERM and a grace, unless the caller hurries: then SIGKILL now.
                    await race(lambda: group.terminate(TERM_GRACE), lambda: wait_event(self.abort))
                    if group.returncode is None:
                        await group.kill(wait=TERM_GRACE)
                # The command is over; whatever it started in the background goes with it (and
                # lets go of the pipes, so the readers see their end).
                await group.sweep()
                readers.cancel_scope.deadline = anyio.current_time() + DRAIN_GRACE
        finally:
            # Also on cancellation by the caller: no process outlives the call.
            with anyio.CancelScope(shield=True):
                if group.returncode is None:
                    await group.terminate(TERM_GRACE)
                await group.aclose()
        exit_code = TIMEOUT_EXIT_CODE if raced.timed_out else _exit_code(group.returncode)
        sink.emit(
            "terminal",
            state="exited",
            command=command,
            exit_code=exit_code,
            timed_out=raced.timed_out,
        )
        return CommandResult(
            exit_code=exit_code,
            stdout=stdout.text(),
            stderr=stderr.text(),
            stdout_truncated=stdout.truncated,
            stderr_truncated=stderr.truncated,
            timed_out_after=limit if raced.timed_out else None,
            cancelled=raced.stopped_by is not None,
        )


def _not_started(reason: str) -> CommandResult:
    return CommandResult(exit_code=NOT_STARTED_EXIT_CODE, start_error=reason)


def _exit_code(returncode: int | None) -> int:
    # Killed by signal N: report 128 + N as a shell would, keeping -1 for "never started".
    if returncode is None:
        return NOT_STARTED_EXIT_CODE
    return 128 - returncode if returncode < 0 else returncode


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
