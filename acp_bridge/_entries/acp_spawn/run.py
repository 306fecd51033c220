"""One ``acp_spawn`` run, from spawn to envelope: the mechanics behind the entry function
(``entry.py``).

Data flows one way: profile → constructed environment → confinement → :class:`AgentProcess`
→ the session's phases (``session_phases.py``: :class:`JsonRpcConnection`,
:class:`AcpSession`, the client's services) → :class:`SubtaskResult` (``result.py``).
The run's timeout bounds the whole run; start-up and session setup have their own limits
inside it, and every wait on the agent runs under the current one (``clock.py``). When the
host uses OpenTelemetry each phase has its span (``acp.initialize``, ``acp.session``,
``acp.prompt``, ``acp.shutdown``). Whatever happens, the run ends in the same bounded
wind-down (SIGKILL to all it started at the end) and one envelope with what was gathered.
Given ``follow_ups``, the session may take further turns before that wind-down, each a run
of its own with its own deadline (``live_turns.py``).

Start the agent first (issue 24): this module needs none of the session machinery to get
the agent's process started. The session's phases and the records of what the run gathers
(and the wire schema's models they bring) are imported once the agent's process is
starting, so that their import overlaps the agent's own start-up; a run that never starts
an agent imports the records only for its envelope.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from acp_bridge._acp.agent_process import KILL_RESERVE, AgentProcess
from acp_bridge._acp.tracing import Tracing, set_attributes
from acp_bridge._acp.transcript import run_transcript
from acp_bridge._entries.acp_spawn.clock import RunClock
from acp_bridge._entries.acp_spawn.live_turns import FollowUps, Turn
from acp_bridge._entries.agent_commands import (
    agent_command,
    check_installed,
    install_hint,
    session_cwd,
    spawn_error,
)
from acp_bridge._entries.confinement import Confinement, confined
from acp_bridge._entries.options import AcpSpawnOptions
from acp_bridge._entries.runner import RunContext, log
from acp_bridge._os.environment import constructed_env
from acp_bridge._os.procgroup import Launched, RunProcesses, run_processes
from acp_bridge._os.redact import Redactor
from acp_bridge._os.roots import Roots
from acp_bridge._output_schema import SchemaRegistry
from acp_bridge.config import AgentProfile
from acp_bridge.config._sandbox import IsolationMode, KeepWorktree
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import BridgeError, ConfigError, SpawnError
from acp_bridge.events import EventSink

if TYPE_CHECKING:
    # Imported when the agent starts (see the module's docstring), named here for types.
    from acp_bridge._acp.services.elicitation import ElicitationHook
    from acp_bridge._acp.services.permissions import PermissionHook
    from acp_bridge._entries.acp_spawn.result import AcpResult
    from acp_bridge._entries.acp_spawn.session_phases import SessionPhases


class AcpRun:
    """One ``acp_spawn`` run, from spawn to envelope."""

    def __init__(
        self,
        ctx: RunContext,
        profile: AgentProfile,
        task: str,
        options: AcpSpawnOptions,
        *,
        timeout: float,
        sink: EventSink,
        cancel: anyio.Event | None,
        abort: anyio.Event | None = None,
        permission_hook: PermissionHook | None = None,
        elicitation_hook: ElicitationHook | None = None,
        origin: str = "",
        follow_ups: FollowUps | None = None,
    ) -> None:
        """``options`` checked (:func:`~acp_bridge._entries.options.check_options`)."""
        worktree = options.get("worktree")
        self.profile = profile
        self.options = options
        self.isolation: IsolationMode = options.get("isolation") or profile.isolation
        self.keep_worktree: KeepWorktree = options.get("keep_worktree") or profile.keep_worktree
        # the session's kept worktree, for a follow-up that resumes
        self.reopen = Path(worktree) if worktree is not None else None
        self.task = task
        self.ctx = ctx
        self.sink = sink
        self.permission_hook = permission_hook
        self.elicitation_hook = elicitation_hook
        self.resume = options.get("resume")
        self.fork = options.get("fork", False)
        self.unstable = options.get("unstable", False) or profile.unstable
        self.tracing = Tracing.from_host()
        self.origin = origin
        # Only when the profile keeps its agent between turns: else the one-shot run.
        self.follow_ups = follow_ups if profile.timeouts.idle > 0 else None
        self.turn = Turn(ctx.task_id, ctx.started)
        """The turn now running (the run itself, then each follow-up)."""
        self.cwd = session_cwd(options.get("cwd"), profile)
        self.roots = Roots.for_session(self.cwd, profile.read_roots, profile.write_roots)
        self.sandbox = profile.sandbox.over(ctx.config.config.sandbox)
        self.env = constructed_env(
            depth=ctx.depth,
            max_depth=ctx.max_depth,
            extra=profile.env,
            passthrough=profile.env_passthrough,
        )
        # The managed install of the profile's package, if any (agents install), else PATH.
        self.command, self.env = agent_command(profile, self.env)
        passed = [self.env[name] for name in profile.env_passthrough if name in self.env]
        self.redactor = Redactor([*profile.secret_values(), *passed])
        if self.redactor:
            sink.redact = self.redactor.data  # events reach stderr and the run store
        self.transcript = run_transcript(ctx.config.config.transcripts, ctx.task_id, self.redactor)
        grace = profile.timeouts.shutdown_grace
        self.clock = RunClock(
            ctx.deadline(timeout),
            timeout,
            cancel,
            abort,
            shutdown_grace=grace,
            transcript=self.transcript,
            stall=profile.timeouts.stall,
        )
        self.output_schema = options.get("output_schema") or ""
        self.schemas = SchemaRegistry(ctx.config.config.schemas)
        self.timeout = timeout
        self.confinement: Confinement | None = None
        self.result: AcpResult | None = None
        """What the run gathered (:meth:`records`): made as its agent starts."""

    def records(self) -> AcpResult:
        """What the run gathers for its envelope: made when its agent starts, or (a run
        that never started one) when its envelope is made."""
        if self.result is None:
            # Imported here, not above: what they bring (the turn's collector, the wire
            # schema's models) loads while the agent starts up (see the docstring).
            from acp_bridge._acp.turn_collector import TurnCollector
            from acp_bridge._entries.acp_spawn.result import AcpResult

            self.result = AcpResult(
                profile=self.profile,
                output_schema=self.output_schema,
                schemas=self.schemas,
                collector=TurnCollector(self.sink),
                transcript=self.transcript,
                redactor=self.redactor,
                timeout=self.timeout,
                tracing=self.tracing,
            )
            self.result.confinement = self.confinement
        return self.result

    def session_phases(self) -> type[SessionPhases]:
        """What the run does with its started agent (a probe takes fewer phases)."""
        # Imported here, once the agent's process is starting: the session machinery's
        # import (~20 ms of a cold run) runs beside the agent's start-up (see the docstring).
        from acp_bridge._entries.acp_spawn.session_phases import SessionPhases

        return SessionPhases

    async def execute(self) -> SubtaskResult:
        names = {"acp.agent": self.profile.name, "acp.task_id": self.ctx.task_id}
        with self.tracing.span("acp_bridge.acp_spawn", **names) as span:
            envelope = await self._execute()
            set_attributes(
                span,
                **{
                    "acp.status": envelope.status,
                    "acp.error_code": envelope.meta.error_code,
                    "acp.session_id": envelope.meta.session_id,
                    "acp.stop_reason": envelope.meta.stop_reason,
                },
            )
        return envelope

    async def _execute(self) -> SubtaskResult:
        """The run, then its envelope: never raises (the caller's cancellation aside)."""
        error: BridgeError | None = None
        diff = self.transcript.path.with_suffix(".diff") if self.transcript.path else None
        try:
            if self.output_schema:  # a broken schema file is a config error before a spawn
                self.schemas.schema(self.output_schema)
            check_installed(self.command, self.env, self.cwd, self.profile, self.origin)
            async with confined(
                self.sandbox,
                task_id=self.ctx.task_id,
                cwd=self.cwd,
                read_roots=self.roots.read,
                write_roots=self.roots.write,
                isolation=self.isolation,
                keep_worktree=self.keep_worktree,
                reopen=self.reopen,
                diff=diff,
                shutdown_grace=self.profile.timeouts.shutdown_grace,
                deadline=self.clock.deadline,
                last_deadline=lambda: self.clock.deadline,  # follow-up turns move it
            ) as confinement:
                self.confinement = confinement
                where = (confinement.cwd, confinement.read_roots, confinement.write_roots)
                if where != (self.cwd, self.roots.read, self.roots.write):  # a worktree, say
                    self.cwd = confinement.cwd
                    self.roots = Roots.for_session(*where)
                with run_processes() as started:
                    await self._run_agent(confinement, started)
        except BridgeError as exc:  # no sandbox here, no worktree: nothing ran
            error = exc
        except Exception as exc:  # a bug here must still leave what was gathered
            log.exception("internal error in acp_spawn")
            error = BridgeError(f"internal error: {type(exc).__name__}: {exc}")
        finally:
            self.transcript.close()
        result = self.records()
        result.error = result.error or error
        return result.envelope()

    def _launch(self, confinement: Confinement) -> Launched:
        argv = [self.command, *self.profile.args]
        try:
            launched = confinement.launch(argv, self.env, self.cwd, handoff=True)
        except SpawnError as exc:
            if isinstance(exc.__cause__, IsADirectoryError):  # the profile names a folder
                where = f" ({self.origin})" if self.origin else ""
                raise ConfigError(f"{exc}{where}") from exc
            raise spawn_error(exc, self.profile, self.origin) from exc
        status = {"agent": self.profile.name, "command": argv, "sandbox": confinement.mode}
        self.sink.emit("status", phase="starting", **status)
        for warning in confinement.box.warnings:  # what the sandbox cannot give: said live
            self.sink.emit("warning", message=warning)
        return launched

    async def _run_agent(self, confinement: Confinement, started: RunProcesses) -> None:
        launch = self._launch(confinement)
        process = AgentProcess(
            launch.argv,
            env=launch.env,
            cwd=launch.cwd,
            grace=self.profile.timeouts.shutdown_grace,
            sink=self.sink,
            install_hint=install_hint(self.profile),
            origin=self.origin,
            graceful=launch.graceful,
            handoff=launch.handoff,
            dies_with_parent=launch.dies_with_parent,
        )
        try:
            async with process:  # started: what follows loads while the agent starts up
                phases = self.session_phases()(self, process, confinement, started)
                await phases.run_session()
        except BridgeError as exc:  # spawn failures: nothing ran
            result = self.records()
            result.error = result.error or exc
        finally:
            with anyio.CancelScope(shield=True):  # no matter what: nothing outlives the run
                await started.kill_all(wait=KILL_RESERVE)
