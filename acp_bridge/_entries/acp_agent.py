"""The ``acp_spawn`` entry path: hand a task to an external ACP agent, get an envelope back.

Data flows one way: profile → constructed environment → :class:`AgentProcess` →
:class:`JsonRpcConnection` → :class:`AcpSession` → :class:`SubtaskResult` (acp_result.py).
The run's timeout bounds the whole run; start-up and session setup have their own limits
inside it, and every wait on the agent runs under the current one (acp_clock.py). When the
host uses OpenTelemetry each phase has its span (``acp.initialize``, ``acp.session``,
``acp.prompt``, ``acp.shutdown``). Whatever happens, the run ends in the same bounded
wind-down (SIGKILL to all it started at the end) and one envelope with what was gathered.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import anyio

from acp_bridge._acp.agent_process import KILL_RESERVE, AgentProcess
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
from acp_bridge._entries.acp_clock import RunClock
from acp_bridge._entries.acp_result import AcpResult, needs_repair, repair_prompt
from acp_bridge._entries.confinement import Confinement, confined
from acp_bridge._entries.runner import RunContext, log, resolve_timeout, run_enveloped
from acp_bridge._entries.sync import synchronous
from acp_bridge._os.environment import constructed_env
from acp_bridge._os.procgroup import Launched, RunProcesses, run_processes
from acp_bridge._os.redact import Redactor
from acp_bridge._os.roots import Roots
from acp_bridge._output import SchemaRegistry, structured_output_instruction
from acp_bridge._version import __version__
from acp_bridge.config import AgentProfile, LoadedConfig
from acp_bridge.config._sandbox import IsolationMode
from acp_bridge.envelope import Meta, SubtaskResult
from acp_bridge.errors import BridgeError, ConfigError, SpawnError
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
    abort: anyio.Event | None = None,
    task_id: str | None = None,
) -> SubtaskResult:
    """Run ``task`` on the ACP agent of profile ``agent``; always returns an envelope.

    ``cwd`` is the session's working directory (default: the profile's, else the current
    directory). ``timeout`` overrides the profile's run timeout (the whole run: it ends by
    ``timeout`` + END_GRACE). ``cancel`` ends the run gracefully (``error_code: cancelled``);
    ``abort`` skips the graces (SIGKILL at once); ``permission_hook`` answers ``ask`` rules;
    ``elicitation_hook`` the agent's questions to the user (without it they are refused).

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
        resolved = ctx.config.profiles.get(agent)
        profile = resolved.runnable()
        origin = resolved.set_at(("command",))
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
            abort=abort,
            origin=f"set at {origin}" if origin else "",
        )
        return await run.execute()

    return await run_enveloped(
        "acp_spawn", body, config=config, meta=Meta(agent=agent), task_id=task_id, task=task,
        cwd=cwd, cancel=cancel,
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
        abort: anyio.Event | None = None,
        origin: str = "",
    ) -> None:
        self.profile = profile
        self.isolation: IsolationMode = isolation
        self.task = task
        self.ctx = ctx
        self.sink = sink
        self.permission_hook = permission_hook
        self.elicitation_hook = elicitation_hook
        self.choices = choices or SessionChoices()
        self.resume = resume
        self.fork = fork
        self.unstable = unstable
        self.tracing = Tracing.from_host()
        self.origin = origin
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
        grace = profile.timeouts.shutdown_grace
        self.clock = RunClock(
            ctx.deadline(timeout),
            timeout,
            cancel,
            abort,
            shutdown_grace=grace,
            transcript=self.transcript,
        )
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
                deadline=self.clock.deadline,
            ) as confinement:
                result.confinement = confinement
                self.cwd = confinement.cwd
                self.roots = Roots.for_session(
                    confinement.cwd, confinement.read_roots, confinement.write_roots
                )
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
        argv = [self.profile.command, *self.profile.args]
        status = {"agent": self.profile.name, "command": argv, "sandbox": confinement.mode}
        self.sink.emit("status", phase="starting", **status)
        try:
            return confinement.launch(argv, self.env, self.cwd)
        except SpawnError as exc:
            where = f" ({self.origin})" if self.origin else ""
            hint = f"; install it with: {self.profile.install}" if self.profile.install else ""
            raise SpawnError(f"{exc}{where}{hint}") from exc

    async def _run_agent(self, confinement: Confinement, started: RunProcesses) -> None:
        launch = self._launch(confinement)
        process = AgentProcess(
            launch.argv,
            env=launch.env,
            cwd=launch.cwd,
            grace=self.profile.timeouts.shutdown_grace,
            sink=self.sink,
            install_hint=self.profile.install,
            origin=self.origin,
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
                        with anyio.CancelScope(shield=True), self.tracing.span("acp.shutdown"):
                            await self.clock.wind_down(session, process, services, started)
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

        late = f"session setup took longer than {timeouts.session:g}s (timeouts.session)"
        await clock.phase(session.conn, open_session, timeouts.session, late)
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
            grace = self.profile.timeouts.cancel_grace
            outcome: TurnOutcome = await self.clock.turn(session, prompt, grace)
            set_attributes(span, **{"acp.ended": outcome.ended})
        self.result.outcome = outcome
        error = turn_error(outcome, self.clock.timeout)
        if error is not None:
            raise error
        assert outcome.response is not None
        outcome.response.unwrap()  # an error reply or a dead agent ends the run here
        if outcome.result is None and outcome.parse_error is not None:
            raise outcome.parse_error

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
    if not settings.enabled:
        return Transcript(None)
    directory = settings.dir or default_transcript_dir(dict(os.environ))
    prune(directory, settings.keep - 1)
    return Transcript(directory / f"{task_id}.jsonl", redactor, max_bytes=settings.max_bytes)
