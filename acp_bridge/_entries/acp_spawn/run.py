"""One ``acp_spawn`` run, from spawn to envelope: the mechanics behind the entry function
(``acp_agent.py``).

Data flows one way: profile → constructed environment → :class:`AgentProcess` →
:class:`JsonRpcConnection` → :class:`AcpSession` → :class:`SubtaskResult` (acp_result.py).
The run's timeout bounds the whole run; start-up and session setup have their own limits
inside it, and every wait on the agent runs under the current one (acp_clock.py). When the
host uses OpenTelemetry each phase has its span (``acp.initialize``, ``acp.session``,
``acp.prompt``, ``acp.shutdown``). Whatever happens, the run ends in the same bounded
wind-down (SIGKILL to all it started at the end) and one envelope with what was gathered.
Given ``follow_ups``, the session may take further turns before that wind-down, each a run
of its own with its own deadline (acp_turns.py).
"""

from __future__ import annotations

from pathlib import Path

import anyio

from acp_bridge._acp.agent_process import KILL_RESERVE, AgentProcess
from acp_bridge._acp.connection import JsonRpcConnection
from acp_bridge._acp.schema import Implementation
from acp_bridge._acp.services.client import ClientServices
from acp_bridge._acp.services.elicitation import ElicitationHook
from acp_bridge._acp.services.mcp_transport import ServicesOffer, ServicesReach
from acp_bridge._acp.services.permissions import PermissionHook
from acp_bridge._acp.session import AcpSession
from acp_bridge._acp.session_options import SessionChoices
from acp_bridge._acp.tracing import Tracing, set_attributes
from acp_bridge._acp.transcript import run_transcript
from acp_bridge._acp.turn import TurnOutcome, TurnSignals, turn_error
from acp_bridge._acp.turn_collector import TurnCollector
from acp_bridge._entries.acp_spawn.clock import RunClock
from acp_bridge._entries.acp_spawn.live_turns import FollowUp, FollowUps, Held, Turn
from acp_bridge._entries.acp_spawn.result import AcpResult, needs_repair, repair_prompt
from acp_bridge._entries.agent_commands import (
    agent_command,
    check_installed,
    install_hint,
    session_cwd,
    spawn_error,
)
from acp_bridge._entries.confinement import Confinement, confined
from acp_bridge._entries.options import AcpSpawnOptions
from acp_bridge._entries.runner import END_GRACE, RunContext, log, resolve_timeout
from acp_bridge._os.environment import constructed_env
from acp_bridge._os.procgroup import Launched, RunProcesses, run_processes
from acp_bridge._os.redact import Redactor
from acp_bridge._os.roots import Roots
from acp_bridge._output_schema import SchemaRegistry, structured_output_instruction
from acp_bridge._version import __version__
from acp_bridge.config import AgentProfile
from acp_bridge.config._sandbox import IsolationMode, KeepWorktree
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import BridgeError, ConfigError, RunCancelled, RunStalled, SpawnError
from acp_bridge.events import EventSink

CLIENT_INFO = Implementation(name="acp-bridge", title="acp-bridge", version=__version__)


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
        self.isolation: IsolationMode = options.get("isolation") or profile.isolation
        self.keep_worktree: KeepWorktree = options.get("keep_worktree") or profile.keep_worktree
        # the session's kept worktree, for a follow-up that resumes
        self.reopen = Path(worktree) if worktree is not None else None
        self.task = task
        self.ctx = ctx
        self.sink = sink
        self.permission_hook = permission_hook
        self.elicitation_hook = elicitation_hook
        self.choices = SessionChoices(
            options.get("mode"),
            options.get("model"),
            dict(options.get("config_options") or {}),
            options.get("system_prompt"),
        )
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
        self.collector = TurnCollector(sink)
        self.signals = TurnSignals()
        self.result = AcpResult(
            profile=profile,
            output_schema=options.get("output_schema") or "",
            schemas=SchemaRegistry(ctx.config.config.schemas),
            collector=self.collector,
            transcript=self.transcript,
            redactor=self.redactor,
            timeout=timeout,
            tracing=self.tracing,
        )

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
        result = self.result
        diff = self.transcript.path.with_suffix(".diff") if self.transcript.path else None
        try:
            if result.output_schema:  # a broken schema file is a config error before a spawn
                result.schemas.schema(result.output_schema)
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
                result.confinement = confinement
                where = (confinement.cwd, confinement.read_roots, confinement.write_roots)
                if where != (self.cwd, self.roots.read, self.roots.write):  # a worktree, say
                    self.cwd = confinement.cwd
                    self.roots = Roots.for_session(*where)
                with run_processes() as started:
                    await self._run_agent(confinement, started)
        except BridgeError as exc:  # no sandbox here, no worktree: nothing ran
            result.error = result.error or exc
        except Exception as exc:  # a bug here must still leave what was gathered
            log.exception("internal error in acp_spawn")
            why = f"internal error: {type(exc).__name__}: {exc}"
            result.error = result.error or BridgeError(why)
        finally:
            self.transcript.close()
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
        result = self.result
        try:
            async with process, anyio.create_task_group() as services_tg:
                result.process = process
                services = result.services = ClientServices(
                    self.profile,
                    roots=self.roots,
                    cwd=self.cwd,
                    env=self.env,
                    tg=services_tg,
                    sink=self.sink,
                    signals=self.signals,
                    permission_hook=self.permission_hook,
                    elicitation_hook=self.elicitation_hook,
                    on_tool_call=self.collector.tool_call_seen,
                    launcher=confinement.launch,
                    announced=self.collector.announced,
                )
                async with JsonRpcConnection(
                    process.stdout,
                    process.stdin,
                    on_update=self.collector,
                    router=services.router(),
                    on_notification=services.notification,
                    transcript=self.transcript,
                    max_message_bytes=self.profile.max_message_bytes,
                ) as conn:
                    offer = ServicesOffer(services, services_tg, ServicesReach.of(confinement.box))
                    session = result.session = AcpSession(
                        conn,
                        profile=self.profile,
                        cwd=str(self.cwd),
                        agent_env=self.env,
                        capabilities=services.capabilities(),
                        client_info=CLIENT_INFO,
                        collector=self.collector,
                        signals=self.signals,
                        sink=self.sink,
                        tracing=self.tracing,
                        services_server=offer,
                        system_prompt=self.choices.system_prompt
                        or self.profile.session.system_prompt,
                    )
                    try:
                        await self._phases(session)
                    except BridgeError as exc:
                        result.error = exc
                    finally:
                        with anyio.CancelScope(shield=True), self.tracing.span("acp.shutdown"):
                            await self.clock.wind_down(session, process, services, started)
                            await offer.stop()
                services_tg.cancel_scope.cancel()
        except BridgeError as exc:  # spawn failures: nothing ran
            result.error = result.error or exc
        finally:
            with anyio.CancelScope(shield=True):  # no matter what: nothing outlives the run
                await started.kill_all(wait=KILL_RESERVE)

    async def _phases(self, session: AcpSession) -> None:
        timeouts, clock = self.profile.timeouts, self.clock
        with self.tracing.span("acp.initialize"):
            what = f"the agent did not answer initialize within {timeouts.startup:g}s"
            await clock.phase(
                session.conn, session.initialize, timeouts.startup, f"{what} (timeouts.startup)"
            )

        async def open_session() -> None:
            with self.tracing.span("acp.session") as span:
                await session.open(
                    self.roots.beside(self.cwd),
                    resume=self.resume,
                    fork=self.fork,
                    unstable=self.unstable,
                )
                set_attributes(
                    span,
                    **{"acp.session_id": session.session_id, "acp.method": session.session_method},
                )
                await session.configure(self.choices)

        late = f"session setup took longer than {timeouts.session:g}s (timeouts.session)"
        await clock.phase(session.conn, open_session, timeouts.session, late)
        await self._answer(session, self.task)
        if self.follow_ups is not None:
            while (follow := await self._hold(session, self.follow_ups)) is not None:
                self._begin(session, follow)
                await self._answer(session, follow.task)

    async def _answer(self, session: AcpSession, task: str) -> None:
        """One turn, then its repair turns while its answer breaks its output schema."""
        result = self.result
        prompt = task
        if result.output_schema:
            schema = result.schemas.schema(result.output_schema)
            prompt += "\n" + structured_output_instruction(result.output_schema, schema)
        await self._turn(session, prompt)
        for repairs_left in range(self.profile.repair_turns, -1, -1):
            if not result.output_schema:
                break
            self.result.collector.end_turn()  # the answer checked is the one kept
            error = (await result.check_answer(self.clock.left())).error
            if not repairs_left or not needs_repair(result):
                break
            self.sink.emit("status", phase="repairing", reason=str(error))
            await self._turn(session, repair_prompt(result.output_schema, error))

    async def _turn(self, session: AcpSession, prompt: str) -> None:
        with self.tracing.span("acp.prompt") as span:
            grace = self.profile.timeouts.cancel_grace
            outcome: TurnOutcome = await self.clock.turn(session, prompt, grace)
            set_attributes(span, **{"acp.ended": outcome.ended})
        self.result.outcome = outcome
        error = turn_error(outcome, self.clock.timeout)
        if isinstance(error, RunCancelled) and self.clock.stalled:
            stall = self.clock.stall
            error = RunStalled(f"the agent showed no progress for {stall:g}s (timeouts.stall)")
        if error is not None:
            raise error
        assert outcome.response is not None
        outcome.response.unwrap()  # an error reply or a dead agent ends the run here
        if outcome.result is None and outcome.parse_error is not None:
            raise outcome.parse_error
        if self.result.output_schema or self.follow_ups is not None:
            # The answer is taken now (checked, or handed over with the agent held), not
            # after the wind-down has read everything: read what follows the reply first.
            await self.clock.drain(session)

    async def _hold(self, session: AcpSession, follow_ups: FollowUps) -> FollowUp | None:
        """The turn ended and the session is sound: hand its envelope over and keep the
        agent until the hook answers (by the end of the idle time), watching it meanwhile."""
        envelope = self.turn.label(self.result.envelope(), self.ctx.depth)
        held = Held(anyio.current_time() + self.profile.timeouts.idle)
        conn = session.conn
        conn.set_deadline(held.until + END_GRACE)  # our replies to what the agent asks meanwhile
        self.transcript.note(f"turn {self.turn.task_id} ended; the agent is held")

        async def watch() -> None:
            await conn.wait_closed()
            held.gone.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            follow = await follow_ups(envelope, held)
            tg.cancel_scope.cancel()
        # The hold may outlast the turn's deadline: what comes next (the wind-down, or a
        # turn that cannot begin) is bounded from now, as at the end of any turn.
        self.clock.deadline = max(self.clock.deadline, anyio.current_time())
        return follow

    def _begin(self, session: AcpSession, follow: FollowUp) -> None:
        """The next turn is a run of its own: its id in events, its deadline from now, its
        cancel, its own records for its envelope."""
        self.turn = Turn(follow.task_id)
        self.sink.retarget(follow.task_id, self.turn.started)
        self.result.next_turn(follow.output_schema or "")
        timeout = self.result.timeout = resolve_timeout(follow.timeout, self.profile.timeouts.run)
        clock = self.clock
        self.clock = RunClock(
            anyio.current_time() + timeout,
            timeout,
            follow.cancel,
            clock.abort,
            shutdown_grace=clock.shutdown_grace,
            transcript=clock.transcript,
            stall=clock.stall,
        )
        self.transcript.note(f"follow-up turn {follow.task_id}")
        # The session goes on in the same agent process: no start-up, no session setup.
        self.sink.emit("status", phase="session", session_id=session.session_id, method="held")
