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
of its own with its own deadline (``live_turns.py``). Under ``protocol: auto`` an agent whose
v2 replies do not validate before any prompt is wound down and started again on v1, once,
in the same sandbox and under the same deadline (:meth:`AcpRun._restart_on_v1`).

Start the agent first (issue 24): this module needs none of the session machinery to get
the agent's process started. The session's phases and the records of what the run gathers
(and the wire schema's models they bring) are imported once the agent's process is
starting, so that their import overlaps the agent's own start-up; a run that never starts
an agent imports the records only for its envelope.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from acp_bridge._acp.agent_executable import (
    check_installed,
    install_hint,
    spawn_error,
)
from acp_bridge._acp.agent_process import KILL_RESERVE, AgentProcess
from acp_bridge._acp.session.tracing import set_attributes
from acp_bridge._entries.acp_spawn.run_state import RunState
from acp_bridge._entries.confinement import Confinement, confined
from acp_bridge._entries.enveloped import log
from acp_bridge._os.fs.roots import Roots
from acp_bridge._os.process.procgroup import Launched, RunProcesses, run_processes
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import BridgeError, ConfigError, SpawnError

if TYPE_CHECKING:
    # Imported when the agent starts (see the module's docstring), named here for types.
    from acp_bridge._entries.acp_spawn.session_phases import SessionPhases


class AcpRun(RunState):
    """One ``acp_spawn`` run, from spawn to envelope."""

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
                explicit_write_roots=self.profile.write_roots or (),
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
        try:
            v1_instead = await self._start_agent(confinement, started)
            if v1_instead is not None:
                await self._restart_on_v1(v1_instead, confinement, started)
        finally:
            with anyio.CancelScope(shield=True):  # no matter what: nothing outlives the run
                await started.kill_all(wait=KILL_RESERVE)

    async def _restart_on_v1(
        self, why: str, confinement: Confinement, started: RunProcesses
    ) -> None:
        """Start the agent again, on v1, in the same run: its v2 session setup did not
        validate (``SessionPhases.v1_instead``), before any prompt. The first agent has been
        wound down and ended; whatever it left is killed before the second starts. The run
        keeps its sandbox, workspace, deadline and transcript; what it gathered starts
        afresh, with the warning that says why."""
        first = self.records().process
        ended = first.exit_description() if first is not None else "never started"
        await started.kill_all(wait=KILL_RESERVE)
        warning = f"restarted on ACP v1: {why}"
        self.transcript.note(f"restarting the agent on ACP v1: the agent (v2) {ended}; {why}")
        self.sink.emit("warning", message=warning)
        self.profile = self.profile.model_copy(update={"protocol": "1"})
        self.result = None
        self.records().warnings.append(warning)
        await self._start_agent(confinement, started)

    async def _start_agent(self, confinement: Confinement, started: RunProcesses) -> str | None:
        """Start the agent and take it through the session's phases; why it must be started
        again on v1, else None."""
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
                return await phases.run_session()
        except BridgeError as exc:  # spawn failures: nothing ran
            result = self.records()
            result.error = result.error or exc
            return None
