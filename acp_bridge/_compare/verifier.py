"""The verifier: one command run on an attempt's changes, as a terminal of its agent.

For each attempt the command runs in a fresh worktree of the caller's repository at the
commit the attempts started from, with the attempt's diff applied — exactly what ``apply``
would give the caller, wherever the attempt ran (this process, a Ray node): what is verified
is what can be applied. The worktree is the one mechanism of ``isolation: worktree``
(:func:`~acp_bridge._entries.confinement.confined`: the agent's profile's sandbox, its
roots mapped into the worktree, the worktree removed at the end), and the command runs
through the terminal service the agent's own commands go through
(:class:`~acp_bridge._acp.services.terminals.TerminalService`): the profile's
``terminal.timeout`` ends it, its output is the last ``terminal.output_byte_limit`` bytes,
its environment the agent's. Passed: it exited 0.
"""

import time
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, Field

from acp_bridge._acp.rpc.router import RequestError
from acp_bridge._acp.services.terminals import TerminalService
from acp_bridge._acp.wire.schema import CreateTerminalParams, TerminalIdParams
from acp_bridge._compare.patches import apply_diff
from acp_bridge._entries.confinement import Confinement, confined
from acp_bridge._entries.depth import inherited_max_depth, subtask_level
from acp_bridge._os.fs.roots import Roots
from acp_bridge._os.process.environment import constructed_env
from acp_bridge._os.race import race
from acp_bridge.config import AgentProfile, LoadedConfig
from acp_bridge.errors import BridgeError

SETUP_SECONDS = 120.0
"""Time for the worktree and the diff before the command's own timeout starts."""
SESSION = "verify"


class VerifierResult(BaseModel):
    """How the verifier ended on one attempt's changes."""

    command: str
    passed: bool = Field(description="it ran and exited 0")
    exit_code: int | None = None
    signal: str | None = None
    timed_out: bool = Field(False, description="the profile's terminal.timeout ended it")
    output: str = Field("", description="stdout and stderr, the last output_byte_limit bytes")
    truncated: bool = False
    duration_ms: int = 0
    error: str = Field("", description="why it did not run, or did not end by itself")
    sandbox: dict[str, Any] | None = Field(None, description="how it was confined (meta.sandbox)")

    @property
    def shown(self) -> str:
        """A few words for a table."""
        if self.passed:
            return "passed"
        if self.timed_out:
            return "timed out"
        if self.error:
            return "not run" if self.exit_code is None else "stopped"
        return f"exit {self.exit_code}" if self.signal is None else f"killed ({self.signal})"


async def verify(
    command: str,
    *,
    profile: AgentProfile,
    loaded: LoadedConfig,
    cwd: Path,
    base: str,
    diff: Path | None,
    task_id: str,
    cancel: anyio.Event,
) -> VerifierResult:
    """Run ``command`` on ``base`` plus ``diff`` (None: the attempt changed nothing) for the
    attempt ``task_id`` of ``profile``'s agent; ``cwd`` is the caller's, in the repository.
    Never raises for the command's sake: what went wrong is the result's ``error``."""
    began = time.monotonic()
    roots = Roots.for_session(cwd, profile.read_roots, profile.write_roots)
    with subtask_level(loaded.config.subtasks.max_depth) as depth:  # the agent's level
        env = constructed_env(
            depth=depth,
            max_depth=inherited_max_depth(),
            extra=profile.env,
            passthrough=profile.env_passthrough,
        )
    deadline = anyio.current_time() + SETUP_SECONDS + profile.terminal.timeout
    try:
        async with confined(
            profile.sandbox.over(loaded.config.sandbox),
            task_id=f"{task_id}-verify",
            cwd=cwd,
            read_roots=roots.read,
            write_roots=roots.write,
            isolation="worktree",
            keep_worktree="never",
            worktree_start=base,
            shutdown_grace=profile.timeouts.shutdown_grace,
            deadline=deadline,
            explicit_write_roots=profile.write_roots or (),
        ) as confinement:
            result = await _in_worktree(command, confinement, diff, env, profile, cancel)
            result.sandbox = confinement.box.meta()
    except BridgeError as exc:  # no worktree or sandbox: the command never ran
        result = VerifierResult(command=command, passed=False, error=str(exc))
    duration_ms = int((time.monotonic() - began) * 1000)
    return result.model_copy(update={"duration_ms": duration_ms})


async def _in_worktree(
    command: str,
    confinement: Confinement,
    diff: Path | None,
    env: dict[str, str],
    profile: AgentProfile,
    cancel: anyio.Event,
) -> VerifierResult:
    worktree = confinement.worktree
    assert worktree is not None  # at the commit the attempts started from
    if diff is not None:
        refused = await apply_diff(diff, worktree.path, env=worktree.git_env())
        if refused:
            return VerifierResult(command=command, passed=False, error=refused)
    roots = Roots.for_session(confinement.cwd, confinement.read_roots, confinement.write_roots)
    async with anyio.create_task_group() as tg:
        service = TerminalService(
            roots=roots,
            cwd=confinement.cwd,
            env=env,
            settings=profile.terminal,
            tg=tg,
            launcher=confinement.launch,
        )
        try:
            result = await _run(command, service, cancel)
        finally:
            with anyio.CancelScope(shield=True):
                await service.release_all()
    return result


async def _run(command: str, service: TerminalService, cancel: anyio.Event) -> VerifierResult:
    try:
        created = await service.create(CreateTerminalParams(session_id=SESSION, command=command))
    except RequestError as exc:
        return VerifierResult(command=command, passed=False, error=exc.message)
    terminal = TerminalIdParams(session_id=SESSION, terminal_id=created["terminalId"])
    # The service ends the command at the profile's terminal.timeout; a cancel, at once.
    raced = await race(lambda: service.wait_for_exit(terminal), cancel.wait)
    if not raced.finished:
        await service.kill(terminal)
        await service.wait_for_exit(terminal)
    shown = await service.output(terminal)
    status = shown.get("exitStatus") or {}
    record = service.records[-1]
    code, signal = status.get("exitCode"), status.get("signal")
    return VerifierResult(
        command=command,
        passed=raced.finished and code == 0 and not record.timed_out,
        exit_code=code,
        signal=signal,
        timed_out=record.timed_out,
        output=shown["output"],
        truncated=shown["truncated"],
        error="" if raced.finished else "cancelled",
    )
