"""The ``acp_spawn`` entry path: hand a task to an external ACP agent, get an envelope back.

Data flows one way: profile → constructed environment → :class:`AgentProcess` →
:class:`JsonRpcConnection` → :class:`AcpSession` → :class:`SubtaskResult` (acp_result.py).
Deadlines: the run's timeout T (``timeouts.run``, or the caller's) bounds the whole run from
its start; start-up (spawn to the ``initialize`` reply) and session setup also have their
own limits inside it. Every wait on the agent, every write to it included, runs under the
current one. Then the wind-down: cancel an unfinished turn, close the session, release the
terminals, end the agent — polite until shortly before ``END_GRACE`` seconds after the work
stopped, then SIGKILL to every process the run started, no matter what (``abort``, the
second Ctrl-C, skips straight there). Whatever happens, one envelope, with what was gathered.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from acp_bridge._acp.agent_process import KILL_RESERVE, AgentProcess
from acp_bridge._acp.connection import JsonRpcConnection
from acp_bridge._acp.schema import Implementation
from acp_bridge._acp.services.client import ClientServices
from acp_bridge._acp.services.permissions import PermissionHook
from acp_bridge._acp.session import AcpSession
from acp_bridge._acp.transcript import Transcript, default_transcript_dir, prune
from acp_bridge._acp.turn import TurnOutcome, TurnSignals, turn_error
from acp_bridge._acp.updates import TurnCollector
from acp_bridge._entries.acp_result import AcpResult, needs_repair, repair_prompt
from acp_bridge._entries.runner import END_GRACE, RunContext, resolve_timeout, run_enveloped
from acp_bridge._entries.sync import synchronous
from acp_bridge._os.environment import constructed_env
from acp_bridge._os.procgroup import RunProcesses, run_processes
from acp_bridge._os.race import race, wait_any
from acp_bridge._os.redact import Redactor
from acp_bridge._os.roots import Roots
from acp_bridge._output import SchemaRegistry, structured_output_instruction
from acp_bridge._version import __version__
from acp_bridge.config import AgentProfile, LoadedConfig
from acp_bridge.envelope import Meta, SubtaskResult
from acp_bridge.errors import BridgeError, ConfigError, RunCancelled, RunTimeout
from acp_bridge.events import EventHandler, EventSink

CLIENT_INFO = Implementation(name="acp-bridge", title="acp-bridge", version=__version__)
CANCEL_SHARE = 2.0
"""Seconds of END_GRACE kept from the wait for ``stopReason: cancelled`` (for the rest of
the wind-down): ``cancel_grace`` is cut to END_GRACE - CANCEL_SHARE."""
log = logging.getLogger("acp_bridge")


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
    abort: anyio.Event | None = None,
) -> SubtaskResult:
    """Run ``task`` on the ACP agent of profile ``agent``; always returns an envelope.

    ``cwd`` is the session's working directory (default: the profile's, else the current
    directory). ``timeout`` overrides the profile's run timeout (the whole run: it ends by
    ``timeout`` + END_GRACE). Setting ``cancel`` ends the run gracefully with
    ``error_code: cancelled``; setting ``abort`` too skips the graces (SIGKILL at once).
    ``permission_hook`` answers ``ask`` rules.
    """

    async def body(ctx: RunContext) -> SubtaskResult:
        resolved = ctx.config.profiles.get(agent)
        profile = resolved.profile
        if not profile.enable:
            where = resolved.source_of(("enable",))
            raise ConfigError(f"agent profile {agent!r} is disabled (enable: false, {where})")
        layer = resolved.owners.get(("command",))
        origin = f"{layer.location(('command',))}: {layer.field(('command',))}" if layer else ""
        run = AcpRun(
            ctx,
            profile,
            task,
            cwd=cwd,
            output_schema=output_schema,
            timeout=resolve_timeout(timeout, profile.timeouts.run),
            sink=EventSink(on_event, observe_profile, task_id=ctx.task_id, started=ctx.started),
            cancel=cancel,
            abort=abort,
            permission_hook=permission_hook,
            origin=f"set at {origin}" if origin else "",
        )
        return await run.execute()

    return await run_enveloped(
        "acp_spawn", body, config=config, meta=Meta(agent=agent), cancel=cancel
    )


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
        abort: anyio.Event | None = None,
        origin: str = "",
    ) -> None:
        self.profile = profile
        self.task = task
        self.ctx = ctx
        self.sink = sink
        self.cancel = cancel
        self.abort = abort
        self.origin = origin
        self.permission_hook = permission_hook
        self.timeout = timeout
        self.deadline = ctx.deadline(timeout)
        self.stopped_at: float | None = None
        """When the work stopped other than by finishing (a timeout, a cancel)."""
        self.cwd = _session_cwd(cwd, profile)
        self.roots = Roots.for_session(self.cwd, profile.read_roots, profile.write_roots)
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
        )

    async def execute(self) -> SubtaskResult:
        """The run, then its envelope: never raises (the caller's cancellation aside)."""
        result = self.result
        with run_processes() as started:
            try:
                await self._run(started)
            except BridgeError as exc:  # spawn failures: nothing ran
                result.error = result.error or exc
            except Exception as exc:  # a bug here must still leave what was gathered
                log.exception("internal error in acp_spawn")
                result.error = result.error or BridgeError(
                    f"internal error: {type(exc).__name__}: {exc}"
                )
            finally:
                with anyio.CancelScope(shield=True):  # no matter what: nothing outlives the run
                    await started.kill_all(wait=KILL_RESERVE)
                self.transcript.close()
        return result.envelope()

    async def _run(self, started: RunProcesses) -> None:
        argv = [self.profile.command, *self.profile.args]
        self.sink.emit("status", phase="starting", agent=self.profile.name, command=argv)
        result = self.result
        if result.output_schema:  # a broken schema file is a config error before any spawn
            result.schemas.schema(result.output_schema)
        process = AgentProcess(
            argv,
            env=self.env,
            cwd=self.cwd,
            grace=self.profile.timeouts.shutdown_grace,
            sink=self.sink,
            install_hint=self.profile.install,
            origin=self.origin,
        )
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
                on_tool_call=self.collector.tool_call_seen,
                announced=self.collector.announced,
            )
            async with JsonRpcConnection(
                process.stdout,
                process.stdin,
                on_update=self.collector,
                router=services.router(),
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
                )
                try:
                    await self._phases(session)
                except BridgeError as exc:
                    result.error = exc
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._wind_down(session, process, services, started)
            services_tg.cancel_scope.cancel()

    async def _stop(self) -> None:
        await wait_any(self.cancel, self.abort)

    async def _phase(
        self, session: AcpSession, job: Callable[[], Awaitable[object]], limit: float, what: str
    ) -> None:
        """``job`` under its own ``limit`` and the run's deadline, against cancel/abort."""
        own = anyio.current_time() + limit
        deadline = min(own, self.deadline)
        session.conn.set_deadline(deadline)
        raced = await race(job, self._stop, deadline=deadline)
        if raced.finished:
            return
        self.stopped_at = anyio.current_time()
        if not raced.timed_out:
            raise RunCancelled("the run was cancelled")
        if own <= self.deadline:
            raise RunTimeout(what)
        raise RunTimeout(f"the run did not finish within {self.timeout:g}s (timeout)")

    async def _phases(self, session: AcpSession) -> None:
        timeouts = self.profile.timeouts
        await self._phase(
            session,
            session.initialize,
            timeouts.startup,
            f"the agent did not answer initialize within {timeouts.startup:g}s (timeouts.startup)",
        )
        await self._phase(
            session,
            lambda: session.open(additional_directories=self._additional_directories()),
            timeouts.session,
            f"session setup took longer than {timeouts.session:g}s (timeouts.session)",
        )
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
        grace = min(self.profile.timeouts.cancel_grace, END_GRACE - CANCEL_SHARE)
        outcome: TurnOutcome = await session.prompt(
            prompt, deadline=self.deadline, cancel=self.cancel, abort=self.abort, grace=grace
        )
        self.result.outcome = outcome
        if outcome.ended != "response":
            self.stopped_at = outcome.ended_at
        error = turn_error(outcome, self.timeout)
        if error is not None:
            raise error
        assert outcome.response is not None
        outcome.response.unwrap()  # an error reply or a dead agent ends the run here
        if outcome.result is None and outcome.parse_error is not None:
            raise outcome.parse_error

    async def _wind_down(
        self,
        session: AcpSession,
        process: AgentProcess,
        services: ClientServices,
        started: RunProcesses,
    ) -> None:
        """Cancel an unfinished turn, close the session, release terminals, end the agent —
        while still reading, so updates sent after the prompt reply are not lost. Polite until
        KILL_RESERVE before the end of the grace (or an abort), then SIGKILL to everything."""
        end_by = min(
            (self.stopped_at or anyio.current_time()) + END_GRACE, self.deadline + END_GRACE
        )
        grace = self.profile.timeouts.shutdown_grace
        conn = session.conn
        conn.set_deadline(end_by - KILL_RESERVE)

        async def polite() -> None:
            if session.turn_in_progress and not conn.closed:
                await session.cancel_turn("the caller went away")
            await session.close(grace)
            await services.aclose()
            await process.end(end_by, hurry=self.abort)
            with anyio.move_on_after(grace):
                await conn.wait_closed()

        hurry = self.abort
        ended = await race(polite, lambda: wait_any(hurry), deadline=end_by - KILL_RESERVE)
        if not ended.finished:
            self.transcript.note("shutdown deadline reached: SIGKILL to every process of the run")
            await process.end(end_by, hurry=self.abort)  # past its polite part: the kill
            await started.kill_all(wait=max(0.1, end_by - anyio.current_time()))
            with anyio.move_on_after(max(0.1, end_by - anyio.current_time())):
                await conn.wait_closed()
        for note in process.notes:
            self.transcript.note(note)

    def _additional_directories(self) -> list[str]:
        roots = dict.fromkeys(str(r) for r in (*self.roots.read, *self.roots.write))
        roots.pop(str(self.cwd.resolve()), None)
        return list(roots)


def _session_cwd(cwd: str | Path | None, profile: AgentProfile) -> Path:
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
    return Transcript(directory / f"{task_id}.jsonl", redactor, max_bytes=settings.max_bytes)
