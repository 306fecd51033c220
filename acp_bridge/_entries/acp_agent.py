"""The ``acp_spawn`` entry path: hand a task to an external ACP agent, get an envelope back.

Data flows one way: profile → constructed environment → :class:`AgentProcess` →
:class:`JsonRpcConnection` → :class:`AcpSession` → :class:`SubtaskResult` (acp_result.py).
Each phase has its own deadline (startup: spawn to ``initialize`` reply; session: auth and
setup; run: the prompt turn) and, when the host uses OpenTelemetry, its own span
(``acp.initialize``, ``acp.session``, ``acp.prompt``, ``acp.shutdown``). Whatever happens,
the run ends in the same shutdown sequence and one envelope.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import anyio

from acp_bridge._acp.agent_process import AgentProcess
from acp_bridge._acp.connection import JsonRpcConnection
from acp_bridge._acp.schema import Implementation
from acp_bridge._acp.services.client import ClientServices
from acp_bridge._acp.services.elicitation import ElicitationHook
from acp_bridge._acp.services.permissions import PermissionHook
from acp_bridge._acp.session import AcpSession
from acp_bridge._acp.session_options import OptionValue, SessionChoices
from acp_bridge._acp.tracing import Tracing, set_attributes
from acp_bridge._acp.transcript import Transcript, default_transcript_dir, prune
from acp_bridge._acp.turn import TurnOutcome, TurnSignals, turn_error
from acp_bridge._acp.updates import TurnCollector
from acp_bridge._entries.acp_result import AcpResult, needs_repair, repair_prompt
from acp_bridge._entries.confinement import Confinement, confined
from acp_bridge._entries.runner import RunContext, resolve_timeout, run_enveloped
from acp_bridge._entries.sync import synchronous
from acp_bridge._os.environment import constructed_env
from acp_bridge._os.procgroup import Launched
from acp_bridge._os.redact import Redactor
from acp_bridge._os.roots import Roots
from acp_bridge._output import SchemaRegistry, structured_output_instruction
from acp_bridge._version import __version__
from acp_bridge.config import AgentProfile, LoadedConfig
from acp_bridge.config._sandbox import IsolationMode
from acp_bridge.envelope import Meta, SubtaskResult
from acp_bridge.errors import BridgeError, ConfigError, RunTimeout, SpawnError
from acp_bridge.events import EventHandler, EventSink

CLIENT_INFO = Implementation(name="acp-bridge", title="acp-bridge", version=__version__)


async def acp_spawn(
    agent: str,
    task: str,
    *,
    cwd: str | Path | None = None,
    output_schema: str | None = None,
    observe_profile: str | None = None,
    timeout: float | None = None,
    on_event: EventHandler | None = None,
    config: LoadedConfig | None = None,
    cancel: anyio.Event | None = None,
    permission_hook: PermissionHook | None = None,
    elicitation_hook: ElicitationHook | None = None,
    mode: str | None = None,
    model: str | None = None,
    config_options: Mapping[str, OptionValue] | None = None,
    resume: str | None = None,
    fork: bool = False,
    unstable: bool = False,
    isolation: IsolationMode | None = None,
    task_id: str | None = None,
) -> SubtaskResult:
    """Run ``task`` on the ACP agent of profile ``agent``; always returns an envelope.

    ``cwd`` is the session's working directory (default: the profile's, else the current
    directory). ``timeout`` overrides the profile's run timeout. Setting ``cancel`` ends the
    run gracefully with ``error_code: cancelled``; ``permission_hook`` answers ``ask`` rules;
    ``elicitation_hook`` answers the agent's questions to the user (without it they are
    refused).

    ``mode``, ``model`` and ``config_options`` (id → value; booleans for boolean options)
    override the profile's ``session:`` settings for this run; a value the agent does not
    offer fails the run (``config_error``) with what it offers. ``resume`` continues that
    earlier session of the agent (``session/resume``, else ``session/load``; an agent with
    neither fails the run); ``fork=True`` continues it in a copy (``session/fork``, unstable
    in ACP: needs ``unstable=True`` or the profile's ``unstable: true``).
    ``isolation="worktree"`` (default: the profile's) runs it in its own git worktree.
    The agent runs in the profile's OS sandbox (``sandbox:``; ``auto`` by default).
    ``task_id`` names the run (default: a fresh ``sub_…`` id).
    """

    async def body(ctx: RunContext) -> SubtaskResult:
        profile = ctx.config.profiles.get(agent).profile
        if fork and resume is None:
            raise ConfigError("fork needs resume: the session to fork")
        run = AcpRun(
            ctx,
            profile,
            task,
            cwd=cwd,
            output_schema=output_schema,
            timeout=resolve_timeout(timeout, profile.timeouts.run),
            sink=EventSink(on_event, observe_profile, task_id=ctx.task_id, started=ctx.started),
            cancel=cancel,
            permission_hook=permission_hook,
            elicitation_hook=elicitation_hook,
            choices=SessionChoices(mode, model, dict(config_options or {})),
            resume=resume,
            fork=fork,
            unstable=unstable or profile.unstable,
            isolation=isolation or profile.isolation,
        )
        return await run.execute()

    return await run_enveloped(
        "acp_spawn", body, config=config, meta=Meta(agent=agent), task_id=task_id, task=task,
        cwd=cwd,
    )  # fmt: skip


acp_spawn_sync = synchronous(acp_spawn)


class AcpRun:
    """One ``acp_spawn`` run, from spawn to envelope."""

    def __init__(
        self,
        ctx: RunContext,
        profile: AgentProfile,
        task: str,
        *,
        cwd: str | Path | None,
        output_schema: str | None,
        timeout: float,
        sink: EventSink,
        cancel: anyio.Event | None,
        permission_hook: PermissionHook | None,
        elicitation_hook: ElicitationHook | None = None,
        choices: SessionChoices | None = None,
        resume: str | None = None,
        fork: bool = False,
        unstable: bool = False,
        isolation: IsolationMode = "none",
    ) -> None:
        self.profile = profile
        self.isolation: IsolationMode = isolation
        self.task = task
        self.ctx = ctx
        self.sink = sink
        self.cancel = cancel
        self.permission_hook = permission_hook
        self.elicitation_hook = elicitation_hook
        self.choices = choices or SessionChoices()
        self.resume = resume
        self.fork = fork
        self.unstable = unstable
        self.tracing = Tracing.from_host()
        self.timeout = timeout
        self.cwd = session_cwd(cwd, profile)
        self.roots = Roots.for_session(self.cwd, profile.read_roots, profile.write_roots)
        self.sandbox = profile.sandbox.over(ctx.config.config.sandbox)
        self.env = constructed_env(
            depth=ctx.depth,
            max_depth=ctx.max_depth,
            extra=profile.env,
            passthrough=profile.env_passthrough,
        )
        passed = [self.env[name] for name in profile.env_passthrough if name in self.env]
        self.redactor = Redactor([*profile.secret_values(), *passed])
        self.transcript = _open_transcript(ctx.config, ctx.task_id, self.redactor)
        self.collector = TurnCollector(sink)
        self.signals = TurnSignals()
        self.result = AcpResult(
            profile=profile,
            output_schema=output_schema or "",
            schemas=SchemaRegistry(ctx.config.config.schemas),
            collector=self.collector,
            transcript=self.transcript,
            redactor=self.redactor,
            timeout=timeout,
            tracing=self.tracing,
        )

    async def execute(self) -> SubtaskResult:
        with self.tracing.span(
            "acp_bridge.acp_spawn",
            **{"acp.agent": self.profile.name, "acp.task_id": self.ctx.task_id},
        ) as span:
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
        result = self.result
        diff = self.transcript.path.with_suffix(".diff") if self.transcript.path else None
        try:
            async with confined(
                self.sandbox,
                task_id=self.ctx.task_id,
                cwd=self.cwd,
                read_roots=self.roots.read,
                write_roots=self.roots.write,
                isolation=self.isolation,
                keep_worktree=self.profile.keep_worktree,
                diff=diff,
                shutdown_grace=self.profile.timeouts.shutdown_grace,
            ) as confinement:
                result.confinement = confinement
                self.cwd = confinement.cwd
                self.roots = Roots.for_session(
                    confinement.cwd, confinement.read_roots, confinement.write_roots
                )
                await self._run_agent(confinement)
        except BridgeError as exc:  # no sandbox here, no worktree: nothing ran
            result.error = result.error or exc
        finally:
            self.transcript.close()
        return result.envelope()

    def _launch(self, confinement: Confinement) -> Launched:
        argv = [self.profile.command, *self.profile.args]
        self.sink.emit(
            "status",
            phase="starting",
            agent=self.profile.name,
            command=argv,
            sandbox=confinement.mode,
        )
        try:
            return confinement.launch(argv, self.env, self.cwd)
        except SpawnError as exc:
            hint = f"; install it with: {self.profile.install}" if self.profile.install else ""
            raise SpawnError(f"{exc}{hint}") from exc

    async def _run_agent(self, confinement: Confinement) -> None:
        launch = self._launch(confinement)
        process = AgentProcess(
            launch.argv,
            env=launch.env,
            cwd=launch.cwd,
            grace=self.profile.timeouts.shutdown_grace,
            sink=self.sink,
            install_hint=self.profile.install,
            graceful=launch.graceful,
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
                    )
                    try:
                        await self._phases(session)
                    except BridgeError as exc:
                        result.error = exc
                    finally:
                        with anyio.CancelScope(shield=True):
                            await self._wind_down(session, process, conn, services)
                services_tg.cancel_scope.cancel()
        except BridgeError as exc:  # spawn failures: nothing ran
            result.error = result.error or exc

    async def _phases(self, session: AcpSession) -> None:
        timeouts = self.profile.timeouts
        try:
            with self.tracing.span("acp.initialize"), anyio.fail_after(timeouts.startup):
                await session.initialize()
        except TimeoutError as exc:
            raise RunTimeout(
                f"the agent did not answer initialize within {timeouts.startup:g}s "
                "(timeouts.startup)"
            ) from exc
        try:
            with self.tracing.span("acp.session") as span, anyio.fail_after(timeouts.session):
                await session.open(
                    self._additional_directories(),
                    resume=self.resume,
                    fork=self.fork,
                    unstable=self.unstable,
                )
                set_attributes(
                    span,
                    **{"acp.session_id": session.session_id, "acp.method": session.session_method},
                )
                await session.configure(self.choices)
        except TimeoutError as exc:
            raise RunTimeout(
                f"session setup took longer than {timeouts.session:g}s (timeouts.session)"
            ) from exc
        result = self.result
        prompt = self.task
        if result.output_schema:
            schema = result.schemas.schema(result.output_schema)
            prompt += "\n" + structured_output_instruction(result.output_schema, schema)
        await self._turn(session, prompt)
        for _ in range(self.profile.repair_turns):
            if not needs_repair(result):
                break
            error = result.answer().error
            self.sink.emit("status", phase="repairing", reason=str(error))
            await self._turn(session, repair_prompt(result.output_schema, error))

    async def _turn(self, session: AcpSession, prompt: str) -> None:
        with self.tracing.span("acp.prompt") as span:
            outcome: TurnOutcome = await session.prompt(
                prompt,
                timeout=self.timeout,
                cancel=self.cancel,
                grace=self.profile.timeouts.cancel_grace,
            )
            set_attributes(span, **{"acp.ended": outcome.ended})
        self.result.outcome = outcome
        error = turn_error(outcome, self.timeout)
        if error is not None:
            raise error
        assert outcome.response is not None
        outcome.response.unwrap()  # an error reply or a dead agent ends the run here

    async def _wind_down(
        self,
        session: AcpSession,
        process: AgentProcess,
        conn: JsonRpcConnection,
        services: ClientServices,
    ) -> None:
        """Cancel an unfinished turn, close the session, release terminals, end the agent —
        while still reading, so updates sent after the prompt reply are not lost."""
        grace = self.profile.timeouts.shutdown_grace
        with self.tracing.span("acp.shutdown"):
            if session.turn_in_progress and not conn.closed:
                await session.cancel_turn("the caller went away")
            await session.close(grace)
            await services.aclose()
            await process.shutdown()
            with anyio.move_on_after(grace):
                await conn.wait_closed()
        for note in process.notes:
            self.transcript.note(note)

    def _additional_directories(self) -> list[str]:
        roots = dict.fromkeys(str(r) for r in (*self.roots.read, *self.roots.write))
        roots.pop(str(self.cwd.resolve()), None)
        return list(roots)


def session_cwd(cwd: str | Path | None, profile: AgentProfile) -> Path:
    chosen = Path(cwd) if cwd is not None else (profile.cwd or Path.cwd())
    resolved = chosen.expanduser().resolve()
    if not resolved.is_dir():
        raise ConfigError(f"cwd {chosen} is not an existing directory")
    return resolved


def _open_transcript(loaded: LoadedConfig, task_id: str, redactor: Redactor) -> Transcript:
    settings = loaded.config.transcripts
    directory = settings.dir or default_transcript_dir(dict(os.environ))
    if not settings.enabled:
        return Transcript(None)
    prune(directory, settings.keep - 1)
    return Transcript(directory / f"{task_id}.jsonl", redactor)
