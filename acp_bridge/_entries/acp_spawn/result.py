"""The envelope of an ``acp_spawn`` run: its answer, how it ended, and what ``meta`` says.

Whatever stage a run reached (nothing started, the agent died in ``initialize``, the turn
timed out, the answer broke its output schema) the same :class:`AcpResult` builds the
envelope from what was gathered: partial output, session id, stop reason, usage, the
permission ledger, tool calls, terminals, files, refusals, the stderr tail (redacted) and the
transcript's path.
"""

from __future__ import annotations

from typing import Any

from acp_bridge._acp.agent_process import AgentProcess
from acp_bridge._acp.services.client import ClientServices
from acp_bridge._acp.session.acp_session import AcpSession
from acp_bridge._acp.session.tracing import NO_TRACING, Tracing
from acp_bridge._acp.turn.file_changes import disagreements
from acp_bridge._acp.turn.prompt_turn import TurnOutcome
from acp_bridge._acp.turn.turn_collector import TurnCollector
from acp_bridge._acp.wire.schema import KNOWN_STOP_REASONS
from acp_bridge._acp.wire.transcript import Transcript
from acp_bridge._entries.confinement import Confinement
from acp_bridge._os.redact import Redactor
from acp_bridge._os.sandbox.denials import Given, explain_denials
from acp_bridge._output_schema.schema_check import check_structured_output
from acp_bridge._output_schema.structured_output import SchemaRegistry, parse_structured_output
from acp_bridge.config import AgentProfile
from acp_bridge.envelope import Meta, OutputKind, SubtaskResult, done, failed
from acp_bridge.errors import (
    AgentExitedError,
    AgentRequestError,
    BridgeError,
    ErrorCode,
    OutputSchemaError,
    ProtocolError,
)

SETTING_UP = frozenset({"initialize", "authenticate", "session/new", "session/load",
                        "session/resume", "session/fork", "configure"})  # fmt: skip
"""The phases in which an agent's error may be its sandbox's doing (it keeps state there)."""

_STOP_REASON_ERRORS: dict[str, tuple[ErrorCode, str]] = {
    "cancelled": (ErrorCode.CANCELLED, "the agent cancelled the turn"),
    "refusal": (ErrorCode.REFUSAL, "the agent refused to continue (stop reason: refusal)"),
    "max_tokens": (ErrorCode.MAX_TOKENS, "the agent ran out of tokens (stop reason: max_tokens)"),
    "max_turn_requests": (
        ErrorCode.MAX_TURN_REQUESTS,
        "the agent hit its limit of model requests for one turn (stop reason: max_turn_requests)",
    ),
}


class Answer:
    """An answer as the envelope gives it: its output, of which kind, and why not as asked."""

    # Plain classes, not dataclasses: a dataclass compiles each generated method from
    # source when its module loads, on every start-up's path (~2 M instructions a class).
    __slots__ = ("error", "kind", "output")

    def __init__(self, output: Any, kind: OutputKind, error: BridgeError | None = None) -> None:
        self.output = output
        self.kind = kind
        self.error = error


class AcpResult:
    """What one run gathered; the parts that were never reached stay None."""

    def __init__(
        self,
        *,
        profile: AgentProfile,
        output_schema: str,
        schemas: SchemaRegistry,
        collector: TurnCollector,
        transcript: Transcript,
        redactor: Redactor,
        timeout: float,
        tracing: Tracing = NO_TRACING,
    ) -> None:
        self.profile = profile
        self.output_schema = output_schema
        self.schemas = schemas
        self.collector = collector
        self.transcript = transcript
        self.redactor = redactor
        self.timeout = timeout
        self.tracing = tracing
        self.process: AgentProcess | None = None
        self.session: AcpSession | None = None
        self.services: ClientServices | None = None
        self.outcome: TurnOutcome | None = None
        self.error: BridgeError | None = None
        self.confinement: Confinement | None = None
        self.warnings: list[str] = []
        self.given: list[Given] = []
        """The paths the agent was given (arguments, its variables): named when it fails
        on one the sandbox refuses (``_os/sandbox/denials.py``)."""
        self._checked: tuple[str, Answer] | None = None
        """The answer text last checked, and its verdict."""

    def next_turn(self, output_schema: str) -> None:
        """A follow-up turn in the same session begins: it gathers its own answer, tool
        calls, plan, usage and records (see live_turns.py); the session's state stays."""
        self.output_schema = output_schema
        self.outcome, self.error = None, None
        collector = self.collector
        collector.plan, collector.usage = [], {}
        collector.tools.clear()
        collector.plans.clear()
        if self.services is not None:
            self.services.next_turn()

    async def check_answer(self, timeout: float) -> Answer:
        """Parse the turn's answer and, when its label has a schema file, validate it — in a
        child process bounded by ``timeout`` and the caller's cancel
        (_output_schema/schema_check.py). The verdict is kept for :meth:`answer` while the answer
        stays the same."""
        text = self.collector.answer()
        if not self.output_schema:
            return Answer(text, "text")
        try:
            value = await check_structured_output(
                text, self.output_schema, self.schemas, timeout=timeout
            )
            checked = Answer(value, "json")
        except OutputSchemaError as exc:
            checked = Answer(text, "text", exc)
        self._checked = (text, checked)
        return checked

    def answer(self) -> Answer:
        text = self.collector.answer()
        if not self.output_schema:
            return Answer(text, "text")
        if self._checked is not None and self._checked[0] is text:
            return self._checked[1]
        # Not checked (the answer changed after its check): parsed, but not validated here,
        # where nothing could stop the validation; the run says so.
        try:
            value = parse_structured_output(text, self.output_schema)
        except OutputSchemaError as exc:
            return Answer(text, "text", exc)
        if self.schemas.resources(self.output_schema) is None:
            return Answer(value, "json")
        error = OutputSchemaError(
            f"output for {self.output_schema} changed after it was checked; not validated"
        )
        return Answer(text, "text", error)

    def envelope(self) -> SubtaskResult:
        """The envelope, with the profile's secrets hidden in what the bridge wrote about the
        run (``meta``; the error of a failed one), as in the transcript and the stderr tail:
        an agent's stray value (an unknown stop reason, a path it was refused) names them.
        The agent's answer itself (``output``) is left as it gave it."""
        envelope = self._envelope()
        if not self.redactor:
            return envelope
        meta = envelope.meta.model_dump(mode="json", exclude_none=True)
        hidden = self.redactor.data(meta)
        update: dict[str, Any] = {}
        if hidden != meta:
            update["meta"] = Meta.model_validate(hidden)
        if envelope.status == "failed":
            update["error"] = self.redactor.text(envelope.error)
            update["summary"] = self.redactor.text(envelope.summary)
        return envelope.model_copy(update=update) if update else envelope

    def _envelope(self) -> SubtaskResult:
        result = self.outcome.result if self.outcome else None
        meta = self.meta(result.stop_reason if result else None)
        notes = self.services.summary_notes() if self.services else []
        error = self.error
        if isinstance(error, AgentExitedError) and self.session and self.process:
            # Say what happened first, then how the process ended (maybe by our shutdown).
            how, when = self.process.exit_description(), self.session.phase
            reason = str(error)
            error = AgentExitedError(
                (
                    f"the agent {how} during {when}"
                    if reason in ("the agent closed its stdout", "connection closed")
                    else f"{reason} during {when} (then the agent {how})"
                )
                + self._sandbox_note()
            )
        elif isinstance(error, AgentRequestError) and self.session and self.process:
            # kimi: "storage write failed" in session/new, where its state folder is read-only
            note = self._sandbox_note(str(error)) if self.session.phase in SETTING_UP else ""
            if note:
                error = AgentRequestError(
                    error.method, error.rpc_code, error.rpc_message, error.data, note
                )
        common: dict[str, Any] = {"meta": meta, "notes": notes, "output_schema": self.output_schema}
        partial = self.collector.answer()
        if error is None and result is None:  # cannot happen; if it does, say what we know
            error = ProtocolError("the turn ended without a prompt result")
        if error is not None:
            return failed(str(error), error.code, output=partial, **common)
        assert result is not None
        stop = result.stop_reason
        if stop in _STOP_REASON_ERRORS:
            code, message = _STOP_REASON_ERRORS[stop]
            return failed(message, code, output=partial, **common)
        if stop not in KNOWN_STOP_REASONS:
            meta.warnings = [
                *(meta.warnings or []),
                f"unknown stop reason {stop!r}; treated as the end of the turn",
            ]
        answer = self.answer()
        if answer.error is not None:
            return failed(str(answer.error), answer.error.code, output=answer.output, **common)
        return done(answer.output, output_kind=answer.kind, **common)

    def _sandbox_note(self, said: str = "") -> str:
        """Whether the agent's own words (its stderr, the error it ``said``) or the paths it
        was given point at the sandbox, and the fix."""
        plan = self.confinement.box.first_plan if self.confinement is not None else None
        if plan is None or self.process is None or not self.process.started:
            return ""
        note = explain_denials(self.process.stderr_tail(), plan, self.given, said)
        return f"; {note}" if note else ""

    def _warnings(self) -> list[str]:
        warnings = [*self.warnings, *(self.session.warnings if self.session else [])]
        if self.session is not None:
            warnings += self.session.conn.stats.warnings(self.redactor.text)
        warnings += self.collector.warnings()
        if self.services is not None:
            warnings += self.services.warnings()
        if self.transcript.error:
            warnings.append(self.transcript.error)
        if self.transcript.cut:
            warnings.append(self.transcript.cut)
        if self.confinement is not None:
            warnings += self.confinement.notes
            measured = self.confinement.files  # None: nothing was measured
            reported = self.collector.tools.reported_changes()
            if measured is not None:
                warnings += disagreements(reported, measured.paths, str(self.confinement.cwd))
        return warnings

    def meta(self, stop_reason: str | None) -> Meta:
        process, services, collector = self.process, self.services, self.collector
        tail = process.stderr_tail() if process is not None and process.started else ""
        transcript = self.transcript
        served = (services.files.files_changed or None) if services else None
        confined = self.confinement.meta() if self.confinement is not None else {}
        state = collector.state
        notices, compactions = collector.notices.records()
        return Meta(
            agent=self.profile.name,
            session_id=self.session.session_id if self.session else None,
            session_method=self.session.session_method if self.session else None,
            session_title=state.title,
            mode=state.current_mode(),
            model=state.current_model(),
            config_options=state.config_values() or None,
            available_commands=state.commands or None,
            plan=collector.plan or None,
            message_id=collector.answer_message_id(),
            replayed_updates=collector.replayed or None,
            unknown_updates=dict(collector.unknown_kinds) or None,
            trace_id=self.tracing.trace_id,
            protocol_version=self.session.protocol_version if self.session else None,
            notices=notices,
            compactions=compactions,
            subagents=collector.subagents.records(),
            reported_changes=collector.tools.reported_changes() or None,
            reported_patch=collector.tools.reported_patch() or None,
            elicitations=(list(services.elicitation.records) or None) if services else None,
            stop_reason=stop_reason,
            usage=dict(self.collector.usage) or None,
            permissions=(list(services.ledger.records) or None) if services else None,
            tool_calls=self.collector.tool_call_records() or None,
            terminals=(list(services.terminals.records) or None) if services else None,
            # Measured (by any means, in-process included) when it could be; else what the
            # bridge itself wrote for the agent.
            files_changed=confined.pop("files_changed", served),
            files_read=(services.files.files_read or None) if services else None,
            refusals=(list(services.refusals) or None) if services else None,
            stderr_tail=self.redactor.text(tail) or None,
            transcript=str(transcript.path) if transcript.path and not transcript.error else None,
            warnings=self._warnings() or None,
            **confined,
        )


def needs_repair(result: AcpResult) -> bool:
    """Whether the turn ended normally with an answer that breaks its output schema."""
    outcome = result.outcome.result if result.outcome else None
    if not result.output_schema or outcome is None or outcome.stop_reason != "end_turn":
        return False
    return result.answer().error is not None


def repair_prompt(label: str, error: BridgeError | None) -> str:
    return (
        f"Your previous answer does not satisfy the output contract {label}: {error}. "
        "Answer again with a single JSON value only: no prose, no explanation, "
        "no Markdown code fence."
    )
