"""The ``acp_spawn`` entry path: hand a task to an external ACP agent, get an envelope back.

Data flows one way: profile → constructed environment → :class:`AgentProcess` →
:class:`JsonRpcConnection` → :class:`AcpSession` → :class:`SubtaskResult`. Each phase has
its own deadline (startup: spawn to ``initialize`` reply; session: auth and setup; run: the
prompt turn). Whatever happens, the run ends in the same shutdown sequence and one envelope.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from acp_bridge._acp.agent_process import AgentProcess
from acp_bridge._acp.connection import JsonRpcConnection
from acp_bridge._acp.schema import KNOWN_STOP_REASONS, Implementation
from acp_bridge._acp.services.client import ClientServices
from acp_bridge._acp.services.permissions import PermissionHook
from acp_bridge._acp.session import AcpSession, TurnCollector, TurnOutcome, TurnSignals, turn_error
from acp_bridge._acp.transcript import Transcript, default_transcript_dir, prune
from acp_bridge._entries.runner import SubtaskContext, run_configured
from acp_bridge._os.roots import Roots, constructed_env
from acp_bridge._version import __version__
from acp_bridge.config import AgentProfile, LoadedConfig
from acp_bridge.envelope import (
    Meta,
    SchemaRegistry,
    SubtaskResult,
    done,
    failed,
    parse_structured_output,
    structured_output_instruction,
)
from acp_bridge.errors import (
    AgentExitedError,
    BridgeError,
    ConfigError,
    ErrorCode,
    OutputSchemaError,
    RunTimeout,
)
from acp_bridge.events import EventHandler, EventSink

CLIENT_INFO = Implementation(name="acp-bridge", title="acp-bridge", version=__version__)

_STOP_REASON_ERRORS: dict[str, tuple[ErrorCode, str]] = {
    "cancelled": (ErrorCode.CANCELLED, "the agent cancelled the turn"),
    "refusal": (ErrorCode.REFUSAL, "the agent refused to continue (stop reason: refusal)"),
    "max_tokens": (ErrorCode.MAX_TOKENS, "the agent ran out of tokens (stop reason: max_tokens)"),
    "max_turn_requests": (
        ErrorCode.MAX_TURN_REQUESTS,
        "the agent hit its limit of model requests for one turn (stop reason: max_turn_requests)",
    ),
}


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
) -> SubtaskResult:
    """Run ``task`` on the ACP agent of profile ``agent``; always returns an envelope.

    ``cwd`` is the session's working directory (default: the profile's, else the current
    directory). ``timeout`` overrides the profile's run timeout. Setting ``cancel`` ends the
    run gracefully with ``error_code: cancelled``; ``permission_hook`` answers ``ask`` rules.
    """

    async def body(ctx: SubtaskContext, loaded: LoadedConfig) -> SubtaskResult:
        run = AcpRun(
            loaded,
            loaded.profiles.get(agent).profile,
            task,
            ctx,
            cwd=cwd,
            output_schema=output_schema,
            timeout=timeout,
            sink=EventSink(on_event, observe_profile, task_id=ctx.task_id, started=ctx.started),
            cancel=cancel,
            permission_hook=permission_hook,
        )
        return await run.execute()

    return await run_configured("acp_spawn", config, body, meta=Meta(agent=agent))


def acp_spawn_sync(agent: str, task: str, **kwargs: Any) -> SubtaskResult:
    """:func:`acp_spawn` for callers without an event loop."""

    async def run() -> SubtaskResult:
        return await acp_spawn(agent, task, **kwargs)

    return anyio.run(run)


@dataclass
class _Answer:
    output: Any
    kind: str
    error: BridgeError | None = None


class AcpRun:
    """One ``acp_spawn`` run, from spawn to envelope."""

    def __init__(
        self,
        loaded: LoadedConfig,
        profile: AgentProfile,
        task: str,
        ctx: SubtaskContext,
        *,
        cwd: str | Path | None,
        output_schema: str | None,
        timeout: float | None,
        sink: EventSink,
        cancel: anyio.Event | None,
        permission_hook: PermissionHook | None,
    ) -> None:
        self.profile = profile
        self.task = task
        self.ctx = ctx
        self.sink = sink
        self.cancel = cancel
        self.hook = permission_hook
        self.output_schema = output_schema or ""
        self.schemas = SchemaRegistry(loaded.config.schemas)
        self.run_timeout = timeout if timeout is not None else profile.timeouts.run
        if self.run_timeout <= 0:
            raise ConfigError(f"timeout must be a positive number of seconds, got {timeout}")
        self.cwd = _session_cwd(cwd, profile)
        self.roots = Roots.for_session(self.cwd, profile.read_roots, profile.write_roots)
        self.env = constructed_env(
            depth=ctx.depth, extra=profile.env, passthrough=profile.env_passthrough
        )
        self.secrets = [
            v for k, v in self.env.items() if k in profile.env or k in profile.env_passthrough
        ]
        self.transcript = _open_transcript(loaded, ctx.task_id, self.secrets)
        self.collector = TurnCollector(sink)
        self.signals = TurnSignals()
        self.error: BridgeError | None = None
        self.outcome: TurnOutcome | None = None
        self.warnings: list[str] = []

    # --- the run ----------------------------------------------------------------------------

    async def execute(self) -> SubtaskResult:
        argv = [self.profile.command, *self.profile.args]
        self.sink.emit("status", phase="starting", agent=self.profile.name, command=argv)
        process = AgentProcess(
            argv,
            env=self.env,
            cwd=self.cwd,
            grace=self.profile.timeouts.shutdown_grace,
            sink=self.sink,
            install_hint=self.profile.install,
        )
        session: AcpSession | None = None
        services: ClientServices | None = None
        try:
            async with process, anyio.create_task_group() as services_tg:
                services = ClientServices(
                    self.profile,
                    roots=self.roots,
                    cwd=self.cwd,
                    env=self.env,
                    tg=services_tg,
                    sink=self.sink,
                    signals=self.signals,
                    hook=self.hook,
                    on_tool_call=self.collector.tool_call_seen,
                )
                async with JsonRpcConnection(
                    process.stdout,
                    process.stdin,
                    on_update=self.collector,
                    methods=services.methods(),
                    transcript=self.transcript,
                    max_line_bytes=self.profile.max_message_bytes,
                ) as conn:
                    session = AcpSession(
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
                        self.error = exc
                    finally:
                        with anyio.CancelScope(shield=True):
                            await self._wind_down(session, process, conn, services)
                services_tg.cancel_scope.cancel()
        except BridgeError as exc:  # spawn failures: nothing ran
            self.error = self.error or exc
        finally:
            self.transcript.close()
        return self._envelope(session, process, services)

    async def _phases(self, session: AcpSession) -> None:
        timeouts = self.profile.timeouts
        try:
            with anyio.fail_after(timeouts.startup):
                await session.initialize()
        except TimeoutError as exc:
            raise RunTimeout(
                f"the agent did not answer initialize within {timeouts.startup:g}s "
                "(timeouts.startup)"
            ) from exc
        try:
            with anyio.fail_after(timeouts.session):
                await session.open(additional_directories=self._additional_directories())
        except TimeoutError as exc:
            raise RunTimeout(
                f"session setup took longer than {timeouts.session:g}s (timeouts.session)"
            ) from exc
        prompt = self.task
        if self.output_schema:
            prompt += "\n" + structured_output_instruction(
                self.output_schema, self.schemas.schema(self.output_schema)
            )
        await self._turn(session, prompt)
        for _ in range(self.profile.repair_turns):
            if not self._needs_repair():
                break
            answer = self._answer()
            self.sink.emit("status", phase="repairing", reason=str(answer.error))
            await self._turn(session, _repair_prompt(self.output_schema, answer.error))

    async def _turn(self, session: AcpSession, prompt: str) -> None:
        self.outcome = await session.prompt(
            prompt,
            timeout=self.run_timeout,
            cancel=self.cancel,
            grace=self.profile.timeouts.cancel_grace,
        )
        error = turn_error(self.outcome, self.run_timeout)
        if error is not None:
            raise error
        assert self.outcome.response is not None
        self.outcome.response.unwrap()  # an error reply or a dead agent ends the run here

    def _needs_repair(self) -> bool:
        result = self.outcome.result if self.outcome else None
        if not self.output_schema or result is None or result.stop_reason != "end_turn":
            return False
        return self._answer().error is not None

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

    # --- the envelope -----------------------------------------------------------------------

    def _answer(self) -> _Answer:
        text = self.collector.answer()
        if not self.output_schema:
            return _Answer(text, "text")
        try:
            return _Answer(parse_structured_output(text, self.output_schema, self.schemas), "json")
        except OutputSchemaError as exc:
            return _Answer(text, "text", exc)

    def _envelope(
        self, session: AcpSession | None, process: AgentProcess, services: ClientServices | None
    ) -> SubtaskResult:
        result = self.outcome.result if self.outcome else None
        meta = self._meta(session, process, services, result.stop_reason if result else None)
        notes = services.summary_notes() if services else []
        error = self.error
        if isinstance(error, AgentExitedError) and session is not None:
            error = AgentExitedError(
                f"the agent {process.exit_description()} during {session.phase}"
            )
        answer = self._answer()
        common: dict[str, Any] = {"meta": meta, "notes": notes, "output_schema": self.output_schema}
        if error is not None:
            return failed(str(error), error.code, output=self.collector.answer(), **common)
        assert result is not None
        stop = result.stop_reason
        if stop in _STOP_REASON_ERRORS:
            code, message = _STOP_REASON_ERRORS[stop]
            return failed(message, code, output=self.collector.answer(), **common)
        if stop not in KNOWN_STOP_REASONS:
            meta.warnings = [
                *(meta.warnings or []),
                f"unknown stop reason {stop!r}; treated as the end of the turn",
            ]
        if answer.error is not None:
            return failed(str(answer.error), answer.error.code, output=answer.output, **common)
        return done(
            answer.output, output_kind="json" if answer.kind == "json" else "text", **common
        )

    def _meta(
        self,
        session: AcpSession | None,
        process: AgentProcess,
        services: ClientServices | None,
        stop_reason: str | None,
    ) -> Meta:
        warnings = [*self.warnings, *(session.warnings if session else [])]
        if session is not None:
            stats = session.conn.stats
            if stats.non_json:
                sample = stats.non_json_samples[0] if stats.non_json_samples else ""
                warnings.append(
                    f"skipped {stats.non_json} non-JSON line(s) on the agent's "
                    f"stdout (first: {sample!r})"
                )
        if self.collector.unknown_kinds:
            kinds = ", ".join(sorted(self.collector.unknown_kinds))
            warnings.append(f"ignored unknown session/update kinds: {kinds}")
        if self.transcript.error:
            warnings.append(self.transcript.error)
        tail = process.stderr_tail() if process.started else ""
        for secret in self.secrets:
            if len(secret) >= 4:
                tail = tail.replace(secret, "[REDACTED]")
        return Meta(
            agent=self.profile.name,
            session_id=session.session_id if session else None,
            stop_reason=stop_reason,
            usage=dict(self.collector.usage) or None,
            permissions=services.ledger.records if services and services.ledger.records else None,
            tool_calls=self.collector.tool_call_records() or None,
            terminals=services.terminals.records
            if services and services.terminals.records
            else None,
            files_changed=services.files.files_changed
            if services and services.files.files_changed
            else None,
            refusals=services.refusals if services and services.refusals else None,
            stderr_tail=tail or None,
            transcript=str(self.transcript.path)
            if self.transcript.path and not self.transcript.error
            else None,
            warnings=warnings or None,
        )


def _session_cwd(cwd: str | Path | None, profile: AgentProfile) -> Path:
    chosen = Path(cwd) if cwd is not None else (profile.cwd or Path.cwd())
    resolved = chosen.expanduser().resolve()
    if not resolved.is_dir():
        raise ConfigError(f"cwd {chosen} is not an existing directory")
    return resolved


def _open_transcript(loaded: LoadedConfig, task_id: str, secrets: list[str]) -> Transcript:
    settings = loaded.config.transcripts
    directory = settings.dir or default_transcript_dir(dict(os.environ))
    if not settings.enabled:
        return Transcript(None)
    prune(directory, settings.keep - 1)
    return Transcript(directory / f"{task_id}.jsonl", secrets)


def _repair_prompt(label: str, error: BridgeError | None) -> str:
    return (
        f"Your previous answer does not satisfy the output contract {label}: {error}. "
        "Answer again with a single JSON value only: no prose, no explanation, "
        "no Markdown code fence."
    )
