"""``elicitation/create``: the agent asks the user for structured information (ACP v1,
stable since schema 1.21), answered by a host hook, or refused.

Advertised (``clientCapabilities.elicitation``, form and url modes) only when there is a
host hook to ask: the library's ``elicitation_hook=``, or the CLI's prompt on a terminal.
Headless there is nobody to ask, so nothing is advertised and a request that comes anyway
is answered -32602, the spec's error for a mode the client did not advertise, with a message
that says why; it is recorded in ``meta.elicitations`` either way.

The hook sees an :class:`ElicitationQuestion` and returns an :class:`ElicitationAnswer`:
``accept`` (with ``content`` for a form), ``decline`` or ``cancel``. An accepted form is
checked against the requested schema before it is sent (the spec: clients SHOULD validate);
content that does not fit, or a hook that fails, becomes ``cancel``. A turn cancelled while
the host is deciding answers ``cancel`` too. For ``url`` mode, ``accept`` means the user
agreed to open the URL themselves; the bridge never opens or fetches it.

Every request is recorded, however it ends: refused (not advertised, or malformed), answered,
or cancelled because the hook or the form's check failed. Bounded: :data:`MAX_RECORDS`
records (their messages cut to :data:`TEXT_CHARS`) and the ids ``elicitation/complete`` may
name; the rest dropped and counted (``_records/bounded.py``): a completion whose id was not
kept completes nothing.
"""

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal
from urllib.parse import urlsplit

from acp_bridge._acp.rpc.router import Reply, RequestError
from acp_bridge._acp.turn.prompt_turn import TurnSignals
from acp_bridge._acp.wire.initialize_schema import ElicitationCapabilities, Empty
from acp_bridge._acp.wire.schema import INVALID_PARAMS, Wire
from acp_bridge._os.race import race
from acp_bridge._output_schema.schema_check import first_schema_error
from acp_bridge._records.bounded import BoundedList, BoundedTable
from acp_bridge._records.frozen import FrozenRecord
from acp_bridge.envelope import ElicitationRecord
from acp_bridge.events import EventSink

log = logging.getLogger("acp_bridge.elicitation")
MODES = ("form", "url")
MAX_RECORDS = 10_000
MAX_ID_CHARS = 256
TEXT_CHARS = 1000


class ElicitationQuestion(FrozenRecord):
    """What a host hook is asked: one elicitation from the agent."""

    mode: str
    """``form`` (fill in ``requested_schema``) or ``url`` (consent to open ``url``)."""
    message: str
    requested_schema: dict[str, Any] | None
    url: str | None
    elicitation_id: str | None
    session_id: str | None
    tool_call_id: str | None
    _compared = __slots__ = (
        "mode", "message", "requested_schema", "url", "elicitation_id", "session_id",
        "tool_call_id",
    )  # fmt: skip

    def __init__(
        self,
        mode: str,
        message: str,
        requested_schema: dict[str, Any] | None = None,
        url: str | None = None,
        elicitation_id: str | None = None,
        session_id: str | None = None,
        tool_call_id: str | None = None,
    ) -> None:
        put = object.__setattr__  # frozen: set once, here
        put(self, "mode", mode)
        put(self, "message", message)
        put(self, "requested_schema", requested_schema)
        put(self, "url", url)
        put(self, "elicitation_id", elicitation_id)
        put(self, "session_id", session_id)
        put(self, "tool_call_id", tool_call_id)


class ElicitationAnswer(FrozenRecord):
    """What a host hook answers: ``accept`` (with ``content`` for a form), ``decline`` or
    ``cancel``."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None
    _compared = __slots__ = ("action", "content")

    def __init__(
        self, action: Literal["accept", "decline", "cancel"], content: dict[str, Any] | None = None
    ) -> None:
        object.__setattr__(self, "action", action)  # frozen: set once, here
        object.__setattr__(self, "content", content)


ElicitationHook = Callable[[ElicitationQuestion], Awaitable[ElicitationAnswer]]
"""Host callback for the agent's questions to the user."""


class CreateElicitationParams(Wire):
    mode: str
    message: str = ""
    requested_schema: dict[str, Any] | None = None
    url: str | None = None
    elicitation_id: str | None = None
    session_id: str | None = None
    tool_call_id: str | None = None


class CompleteElicitationParams(Wire):
    elicitation_id: str


async def schema_problem(schema: dict[str, Any], content: dict[str, Any]) -> str | None:
    """Why ``content`` does not fit the requested form ``schema`` (None: it fits). The schema
    is the agent's: checked in a child process bounded in time (_output_schema/schema_check.py),
    like an output_schema, so a hostile pattern or ``$ref`` cannot hold the run."""
    return await first_schema_error(
        FORM_URI, {FORM_URI: schema}, json.dumps(content), timeout=FORM_CHECK_SECONDS
    )


FORM_URI = "urn:acp-bridge:elicitation-form"
FORM_CHECK_SECONDS = 10.0


class ElicitationService:
    """Answers one session's ``elicitation/create`` requests and records them."""

    def __init__(
        self, hook: ElicitationHook | None, *, signals: TurnSignals, sink: EventSink
    ) -> None:
        self.hook = hook
        self.signals = signals
        self.sink = sink
        self.records: BoundedList[ElicitationRecord] = BoundedList("elicitations", MAX_RECORDS)
        self._by_id: BoundedTable[str, ElicitationRecord] = BoundedTable(
            "elicitation ids", MAX_RECORDS, MAX_ID_CHARS
        )

    def capabilities(self) -> ElicitationCapabilities | None:
        if self.hook is None:
            return None
        return ElicitationCapabilities(form=Empty(), url=Empty())

    def _record(self, request: CreateElicitationParams, action: str, reason: str) -> None:
        schema = request.requested_schema or {}
        properties = schema.get("properties") if isinstance(schema, dict) else None
        record = ElicitationRecord(
            mode=request.mode[:64],
            message=request.message[:TEXT_CHARS],
            action=action,
            fields=[f[:TEXT_CHARS] for f in properties][:64]
            if isinstance(properties, dict)
            else [],
            url_host=_host(request.url),
            reason=reason[:TEXT_CHARS],
        )
        if self.records.add(record) and request.elicitation_id:
            self._by_id.put(request.elicitation_id, record)
        self.sink.emit("status", phase="elicitation", action=action, reason=reason[:TEXT_CHARS])

    def warnings(self) -> list[str]:
        return [w for w in (self.records.warning(), self._by_id.warning()) if w]

    async def create(self, request: CreateElicitationParams) -> Reply:
        if self.hook is None or request.mode not in MODES:
            why = (
                "acp-bridge runs headless: no host to ask (no elicitation hook), so "
                "elicitation was not advertised"
                if self.hook is None
                else f"elicitation mode {request.mode[:64]!r} was not advertised (form, url)"
            )
            self._record(request, "refused", why)
            raise RequestError(INVALID_PARAMS, why, {"reason": "elicitation_not_supported"})
        malformed = None
        if request.mode == "form" and not isinstance(request.requested_schema, dict):
            malformed = "form elicitation needs a requestedSchema"
        if request.mode == "url" and not request.url:
            malformed = "url elicitation needs a url"
        if malformed is not None:
            self._record(request, "refused", malformed)
            raise RequestError(INVALID_PARAMS, malformed)
        answer, reason = await self._ask(request)
        self._record(request, answer.action, reason)
        reply: Reply = {"action": answer.action}
        if answer.action == "accept" and answer.content is not None:
            reply["content"] = answer.content
        return reply

    async def _ask(self, request: CreateElicitationParams) -> tuple[ElicitationAnswer, str]:
        hook = self.hook
        assert hook is not None
        question = ElicitationQuestion(
            mode=request.mode,
            message=request.message,
            requested_schema=request.requested_schema,
            url=request.url,
            elicitation_id=request.elicitation_id,
            session_id=request.session_id,
            tool_call_id=request.tool_call_id,
        )
        cancelled = self.signals.cancelled
        if cancelled.is_set():
            return ElicitationAnswer("cancel"), "turn cancelled"
        try:
            raced = await race(lambda: hook(question), cancelled.wait)
        except Exception as exc:  # the host's bug must not end the run
            log.warning("elicitation hook failed", exc_info=True)
            return ElicitationAnswer("cancel"), f"the host hook failed ({type(exc).__name__})"
        answer = raced.value
        if answer is None:
            return ElicitationAnswer("cancel"), "turn cancelled"
        if answer.action == "accept" and request.mode == "form":
            assert request.requested_schema is not None
            try:
                problem = await schema_problem(request.requested_schema, answer.content or {})
            except Exception as exc:  # the check could not run: nothing unchecked is sent
                log.warning("elicitation form check failed", exc_info=True)
                return ElicitationAnswer(
                    "cancel"
                ), f"the answer could not be checked ({type(exc).__name__})"
            if problem is not None:
                return ElicitationAnswer("cancel"), f"the host's answer does not fit: {problem}"
        return answer, f"host: {answer.action}"

    def complete(self, params: CompleteElicitationParams) -> None:
        """``elicitation/complete``: a URL interaction finished (unknown ids are ignored)."""
        record = self._by_id.get(params.elicitation_id)
        if record is not None:
            record.completed = True

    def next_turn(self) -> None:
        self.records.reset()


def _host(url: str | None) -> str:
    """The host a URL names ("" when none, or when it is not a URL)."""
    if not url:
        return ""
    try:
        return (urlsplit(url).hostname or "")[:TEXT_CHARS]
    except ValueError:  # "http://[::1" — an agent's malformed URL is no reason to fail
        return ""
