"""One ACP session over a connection: handshake, auth, session setup, prompt turns, cancel
(DESIGN §4).

:class:`TurnCollector` reads the ``session/update`` stream (the hot path: plain dict access,
no models for message chunks). Message chunks are grouped by ``messageId``; an agent that
sends none gets a new message after every tool call. The answer of a turn is its **last**
agent message: narration before tool calls is not the answer. A message's chunks are joined
into blocks as they come (:class:`_Message`), so its memory grows with its text, not with
the number of chunks: an object per token-sized chunk cost ~60 bytes each (25 MB for
400 000 chunks).

Tolerance: updates may arrive before the ``session/new`` reply and after the prompt reply
(the collector keeps listening until the agent has exited); a permission request may arrive
before its ``tool_call``; unknown update kinds are counted and kept in the transcript.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import anyio
from pydantic import BaseModel, ValidationError

from acp_bridge._acp.connection import JsonRpcConnection, PendingRequest, Response
from acp_bridge._acp.schema import (
    AUTH_REQUIRED,
    PROTOCOL_VERSION,
    AuthenticateParams,
    AuthMethod,
    ClientCapabilities,
    ConfigOption,
    Implementation,
    InitializeParams,
    InitializeResult,
    McpServerHttp,
    McpServerStdio,
    NameValue,
    NewSessionParams,
    NewSessionResult,
    PlanUpdate,
    PromptParams,
    PromptResult,
    SessionIdParams,
    SetConfigOptionParams,
    SetConfigOptionResult,
    SetModeParams,
    TextBlock,
    ToolCallUpdate,
    UsageUpdate,
)
from acp_bridge.config import AgentProfile
from acp_bridge.envelope import ToolCallRecord
from acp_bridge.errors import (
    AgentRequestError,
    AuthRequiredError,
    ProtocolError,
    RunCancelled,
    RunTimeout,
)
from acp_bridge.events import EventSink

ModelT = TypeVar("ModelT", bound=BaseModel)


def parse_reply(model: type[ModelT], data: Any, method: str) -> ModelT:
    """An agent's reply as ``model``; a malformed one is the agent's protocol error."""
    try:
        return model.model_validate(data if data is not None else {})
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "result"
        raise ProtocolError(f"malformed reply to {method}: {where}: {first['msg']}") from exc


_USAGE_KEYS = {
    "inputTokens": "input_tokens",
    "outputTokens": "output_tokens",
    "totalTokens": "total_tokens",
    "thoughtTokens": "thought_tokens",
    "cachedReadTokens": "cached_read_tokens",
    "cachedWriteTokens": "cached_write_tokens",
}


@dataclass
class _ToolCall:
    record: ToolCallRecord

    def apply(self, update: ToolCallUpdate) -> None:
        record = self.record
        if update.title:
            record.title = update.title
        if update.kind:
            record.kind = update.kind
        if update.status:
            record.status = update.status
        if update.locations:
            record.locations = [str(loc.get("path", "")) for loc in update.locations]


_CHUNKS_PER_BLOCK = 1024


class _Message:
    """One agent message's text: recent chunks, and older ones joined into blocks.

    Joining every 1024 chunks keeps the total work linear (each chunk is copied once into
    its block, once into the answer) and the memory at the text plus ~0.1 %."""

    __slots__ = ("blocks", "parts")

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.parts: list[str] = []

    def compact(self) -> None:
        self.blocks.append("".join(self.parts))
        self.parts.clear()

    def text(self) -> str:
        return "".join([*self.blocks, *self.parts])


class TurnCollector:
    """Everything the ``session/update`` stream tells us, gathered for the envelope."""

    def __init__(self, sink: EventSink) -> None:
        self._sink = sink
        self._wants_message = sink.wants("message")
        self._in_turn = False
        self._messages: list[_Message] = []
        self._by_id: dict[str, _Message] = {}
        self._current: _Message | None = None
        self.tool_calls: dict[str, _ToolCall] = {}
        self.plan: list[dict[str, Any]] = []
        self.usage: dict[str, Any] = {}
        self.kinds: Counter[str] = Counter()
        self.unknown_kinds: Counter[str] = Counter()
        self.malformed = 0
        self.mode_id: str | None = None
        self._handlers = {
            "tool_call": self._tool_call,
            "tool_call_update": self._tool_call,
            "plan": self._plan,
            "usage_update": self._usage_update,
            "agent_thought_chunk": self._thought,
            "current_mode_update": self._mode,
        }

    # --- the stream (called by the connection for every session/update) -----------------

    def __call__(self, params: dict[str, Any]) -> None:
        update = params.get("update")
        if not isinstance(update, dict):
            self.malformed += 1
            return
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            if self._in_turn:
                self._chunk(update)
            return
        self.kinds[str(kind)] += 1
        handler = self._handlers.get(kind)  # type: ignore[arg-type]
        if handler is not None:
            try:
                handler(update)
            except (ValueError, TypeError):  # a malformed rare update must not end the run
                self.malformed += 1
        elif kind not in _KNOWN_IGNORED:
            self.unknown_kinds[str(kind)] += 1

    def _chunk(self, update: dict[str, Any]) -> None:
        content = update.get("content")
        if not isinstance(content, dict) or content.get("type") != "text":
            return
        text = content.get("text")
        if not isinstance(text, str) or not text:
            return
        message_id = update.get("messageId")
        if message_id is None:
            message = self._current
            if message is None:
                message = self._current = _Message()
                self._messages.append(message)
        else:
            message = self._by_id.get(message_id)
            if message is None:
                message = self._by_id[message_id] = _Message()
                self._messages.append(message)
            self._current = message
        parts = message.parts  # inlined append: this runs for every chunk
        parts.append(text)
        if len(parts) >= _CHUNKS_PER_BLOCK:
            message.compact()
        if self._wants_message:
            self._sink.emit("message", text=text)

    def _tool_call(self, update: dict[str, Any]) -> None:
        parsed = ToolCallUpdate.model_validate(update)
        if update.get("sessionUpdate") == "tool_call":
            self._current = None  # an agent without message ids: a tool call ends a message
        known = self.tool_calls.get(parsed.tool_call_id)
        before = known.record.status if known else None
        if known is None:
            known = self.tool_calls[parsed.tool_call_id] = _ToolCall(
                ToolCallRecord(tool_call_id=parsed.tool_call_id, status="pending")
            )
            known.apply(parsed)
            self._sink.emit(
                "tool_call",
                tool_call_id=parsed.tool_call_id,
                title=known.record.title,
                tool_kind=known.record.kind,
            )
            return
        known.apply(parsed)
        if known.record.status != before:
            self._sink.emit(
                "tool_update",
                tool_call_id=parsed.tool_call_id,
                title=known.record.title,
                tool_kind=known.record.kind,
                status=known.record.status,
            )

    def _plan(self, update: dict[str, Any]) -> None:
        plan = PlanUpdate.model_validate(update)
        self.plan = [entry.model_dump() for entry in plan.entries]
        self._sink.emit("plan", entries=self.plan)

    def _usage_update(self, update: dict[str, Any]) -> None:
        usage = UsageUpdate.model_validate(update)
        if usage.used is not None:
            self.usage["context_used"] = usage.used
        if usage.size is not None:
            self.usage["context_size"] = usage.size
        if usage.cost is not None:
            self.usage["cost"] = usage.cost
        self._sink.emit("usage", **self.usage)

    def _thought(self, update: dict[str, Any]) -> None:
        content = update.get("content")
        if isinstance(content, dict) and isinstance(content.get("text"), str):
            self._sink.emit("thought", text=content["text"])

    def _mode(self, update: dict[str, Any]) -> None:
        self.mode_id = str(update.get("currentModeId"))

    # --- what the turn produced ---------------------------------------------------------

    def begin_turn(self) -> None:
        """Start collecting a new turn's answer (a repair turn forgets the previous one)."""
        self._in_turn = True
        self._messages = []
        self._by_id = {}
        self._current = None

    def tool_call_seen(self, tool: ToolCallUpdate) -> None:
        """A permission request named this tool call (maybe before its ``tool_call``)."""
        if tool.tool_call_id not in self.tool_calls:
            call = _ToolCall(ToolCallRecord(tool_call_id=tool.tool_call_id, status="pending"))
            call.apply(tool)
            self.tool_calls[tool.tool_call_id] = call

    def answer(self) -> str:
        """The last non-blank agent message of the turn."""
        for message in reversed(self._messages):
            text = message.text()
            if text and not text.isspace():  # not strip(): no copy of a long answer
                return text
        return ""

    def add_prompt_usage(self, usage: Mapping[str, Any] | None) -> None:
        for wire, name in _USAGE_KEYS.items():
            if usage and isinstance(usage.get(wire), int | float):
                self.usage[name] = usage[wire]

    def tool_call_records(self) -> list[ToolCallRecord]:
        return [call.record for call in self.tool_calls.values()]


_KNOWN_IGNORED = frozenset(
    {
        "user_message_chunk",
        "available_commands_update",
        "config_option_update",
        "session_info_update",
        "plan_update",
        "plan_removed",
    }
)


@dataclass
class TurnSignals:
    """Shared with the permission service: set when the current turn is being cancelled."""

    cancelled: anyio.Event = field(default_factory=anyio.Event)


TurnEnd = Literal["response", "timeout", "cancelled"]


@dataclass
class TurnOutcome:
    ended: TurnEnd
    response: Response | None

    @property
    def result(self) -> PromptResult | None:
        if self.response is None or self.response.failure or self.response.error:
            return None
        return parse_reply(PromptResult, self.response.result, "session/prompt")


class AcpSession:
    """The client side of one ACP session with one agent process."""

    def __init__(
        self,
        conn: JsonRpcConnection,
        *,
        profile: AgentProfile,
        cwd: str,
        agent_env: Mapping[str, str],
        capabilities: ClientCapabilities,
        client_info: Implementation,
        collector: TurnCollector,
        signals: TurnSignals,
        sink: EventSink,
    ) -> None:
        self.conn = conn
        self.profile = profile
        self.cwd = cwd
        self.agent_env = agent_env
        self.capabilities = capabilities
        self.client_info = client_info
        self.collector = collector
        self.signals = signals
        self.sink = sink
        self.init: InitializeResult | None = None
        self.session_id: str | None = None
        self.phase = "starting"
        self.warnings: list[str] = []
        self.turn_in_progress = False

    # --- handshake ------------------------------------------------------------------------

    async def initialize(self) -> InitializeResult:
        self.phase = "initialize"
        params = InitializeParams(
            client_capabilities=self.capabilities, client_info=self.client_info
        )
        result = parse_reply(
            InitializeResult, await self.conn.request("initialize", params.wire()), "initialize"
        )
        if result.protocol_version != PROTOCOL_VERSION:
            raise ProtocolError(
                f"the agent speaks ACP protocol version {result.protocol_version}; "
                f"acp-bridge speaks version {PROTOCOL_VERSION}"
            )
        self.init = result
        info = result.agent_info
        self.sink.emit(
            "status",
            phase="initialized",
            agent=info.name if info else None,
            version=info.version if info else None,
        )
        return result

    def _advertised(self, method_id: str) -> AuthMethod | None:
        assert self.init is not None
        return next((m for m in self.init.auth_methods if m.id == method_id), None)

    def _usable_headless(self, method: AuthMethod) -> str | None:
        """Why ``method`` cannot be used without a person (None: it can)."""
        if method.type == "terminal":
            command = " ".join([self.profile.command, *method.args])
            return f"{method.id} needs an interactive login: run `{command}` in a terminal"
        missing = [v.name for v in method.vars if not v.optional and v.name not in self.agent_env]
        if missing:
            link = f" ({method.link})" if method.link else ""
            names = ", ".join(missing)
            return f"{method.id} needs {names} in the agent's environment{link}"
        return None

    async def authenticate(self, method: AuthMethod) -> None:
        self.phase = "authenticate"
        why_not = self._usable_headless(method)
        if why_not:
            raise AuthRequiredError(why_not)
        try:
            await self.conn.request("authenticate", AuthenticateParams(method_id=method.id).wire())
        except AgentRequestError as exc:
            raise AuthRequiredError(f"authentication with {method.id} failed: {exc}") from exc
        self.sink.emit("status", phase="authenticated", method=method.id)

    async def _configured_auth(self) -> None:
        method_id = self.profile.auth.method
        if method_id is None:
            return
        method = self._advertised(method_id)
        if method is None:
            assert self.init is not None
            offered = ", ".join(m.id for m in self.init.auth_methods) or "none"
            raise AuthRequiredError(
                f"profile auth.method {method_id!r} is not offered by the agent (offered: "
                f"{offered})"
            )
        await self.authenticate(method)

    def _headless_auth_choice(self) -> AuthMethod:
        """After -32000: an advertised method whose variables are present, or a clear error."""
        assert self.init is not None
        reasons = []
        for method in self.init.auth_methods:
            if method.type != "env_var":
                reasons.append(
                    self._usable_headless(method)
                    or f"{method.id} ({method.name or 'agent-driven login'}) cannot be "
                    "completed headless"
                )
                continue
            why_not = self._usable_headless(method)
            if why_not is None:
                return method
            reasons.append(why_not)
        detail = "; ".join(reasons) or "the agent offers no auth methods"
        raise AuthRequiredError(f"the agent requires authentication: {detail}")

    # --- session ----------------------------------------------------------------------------

    def _mcp_servers(self) -> list[McpServerStdio | McpServerHttp]:
        servers: list[McpServerStdio | McpServerHttp] = []
        for server in self.profile.mcp_servers:
            if server.type == "stdio":
                assert server.command is not None
                servers.append(
                    McpServerStdio(
                        name=server.name,
                        command=server.command,
                        args=server.args,
                        env=[NameValue(name=k, value=v) for k, v in server.env.items()],
                    )
                )
            else:
                assert server.url is not None
                servers.append(
                    McpServerHttp(
                        type=server.type,
                        name=server.name,
                        url=server.url,
                        headers=[NameValue(name=k, value=v) for k, v in server.headers.items()],
                    )
                )
        return servers

    async def open(self, additional_directories: list[str]) -> NewSessionResult:
        """Auth (if configured), ``session/new`` (auth + one retry on -32000), options."""
        assert self.init is not None
        await self._configured_auth()
        self.phase = "session/new"
        supports_dirs = self.init.agent_capabilities.session_supports("additionalDirectories")
        params = NewSessionParams(
            cwd=self.cwd,
            mcp_servers=self._mcp_servers(),
            additional_directories=additional_directories
            if supports_dirs and additional_directories
            else None,
        ).wire()
        try:
            raw = await self.conn.request("session/new", params)
        except AgentRequestError as exc:
            if exc.rpc_code != AUTH_REQUIRED:
                raise
            await self.authenticate(self._headless_auth_choice())
            self.phase = "session/new"
            raw = await self.conn.request("session/new", params)
        result = parse_reply(NewSessionResult, raw, "session/new")
        self.session_id = result.session_id
        self.sink.emit("status", phase="session", session_id=result.session_id)
        await self._configure(result)
        return result

    async def _configure(self, created: NewSessionResult) -> None:
        """Mode, model and config options from the profile, each only if advertised."""
        self.phase = "configure"
        wanted = self.profile.session
        options = {o.id: o for o in created.config_options or []}
        if wanted.mode is not None:
            await self._set_mode(wanted.mode, created, options)
        if wanted.model is not None:
            model_option = next(
                (o for o in options.values() if o.category == "model"), options.get("model")
            )
            if model_option is None:
                self.warnings.append(
                    f"session.model {wanted.model!r}: the agent offers no "
                    "model option; left as it is"
                )
            else:
                options = await self._set_option(model_option, wanted.model, options)
        for option_id, value in wanted.config_options.items():
            option = options.get(option_id)
            if option is None:
                offered = ", ".join(options) or "none"
                self.warnings.append(
                    f"session.config_options.{option_id}: not offered by the "
                    f"agent (offered: {offered}); skipped"
                )
                continue
            options = await self._set_option(option, value, options)

    async def _set_mode(
        self, mode: str, created: NewSessionResult, options: dict[str, ConfigOption]
    ) -> None:
        assert self.session_id is not None
        modes = created.modes
        if modes is not None and any(m.id == mode for m in modes.available_modes):
            await self.conn.request(
                "session/set_mode", SetModeParams(session_id=self.session_id, mode_id=mode).wire()
            )
            return
        mode_option = next((o for o in options.values() if o.category == "mode"), None)
        if mode_option is not None and mode in mode_option.allowed_values():
            await self._set_option(mode_option, mode, options)
            return
        offered = [m.id for m in modes.available_modes] if modes else []
        self.warnings.append(
            f"session.mode {mode!r}: not offered by the agent (offered: "
            f"{', '.join(offered) or 'none'}); left as it is"
        )

    async def _set_option(
        self, option: ConfigOption, value: object, options: dict[str, ConfigOption]
    ) -> dict[str, ConfigOption]:
        assert self.session_id is not None
        if option.type == "boolean":
            if not isinstance(value, bool):
                self.warnings.append(
                    f"config option {option.id}: wants true/false, got {value!r}; skipped"
                )
                return options
            params = SetConfigOptionParams(
                session_id=self.session_id, config_id=option.id, value=value, type="boolean"
            )
        else:
            allowed = option.allowed_values()
            if allowed and str(value) not in allowed:
                self.warnings.append(
                    f"config option {option.id}: {value!r} is not one of "
                    f"{', '.join(allowed)}; skipped"
                )
                return options
            params = SetConfigOptionParams(
                session_id=self.session_id, config_id=option.id, value=str(value)
            )
        reply = parse_reply(
            SetConfigOptionResult,
            await self.conn.request("session/set_config_option", params.wire()),
            "session/set_config_option",
        )
        return {o.id: o for o in reply.config_options} or options

    # --- the turn ---------------------------------------------------------------------------

    async def prompt(
        self, text: str, *, timeout: float, cancel: anyio.Event | None, grace: float
    ) -> TurnOutcome:
        """One prompt turn. A timeout or cancel sends ``session/cancel`` and waits ``grace``
        for the agent's ``stopReason: cancelled`` (DESIGN §4)."""
        assert self.session_id is not None
        self.phase = "prompt"
        self.signals.cancelled = anyio.Event()  # the services hold self.signals; new per turn
        self.collector.begin_turn()
        self.turn_in_progress = True
        self.sink.emit("status", phase="prompting")
        params = PromptParams(session_id=self.session_id, prompt=[TextBlock(text=text)])
        pending = await self.conn.start_request("session/prompt", params.wire())
        ended = await _first_of(pending, cancel, timeout)
        if ended != "response":
            await self.cancel_turn(ended)
            with anyio.move_on_after(grace):
                await pending.wait()
        self.turn_in_progress = False
        outcome = TurnOutcome(ended, pending.response)
        result = outcome.result
        if result is not None:
            self.collector.add_prompt_usage(result.usage)
        return outcome

    async def cancel_turn(self, why: str) -> None:
        """``session/cancel``; pending permission requests are answered ``cancelled``."""
        if self.signals.cancelled.is_set() or self.session_id is None:
            return
        self.phase = "cancel"
        self.signals.cancelled.set()
        self.sink.emit("status", phase="cancelling", reason=why)
        try:
            await self.conn.notify(
                "session/cancel", SessionIdParams(session_id=self.session_id).wire()
            )
        except Exception:  # the agent may already be gone; cancel is best effort
            return

    async def close(self, grace: float) -> None:
        """``session/close`` when the agent advertises it (best effort, bounded)."""
        if self.init is None or self.session_id is None or self.conn.failure is not None:
            return
        if not self.init.agent_capabilities.session_supports("close"):
            return
        self.phase = "close"
        with anyio.move_on_after(grace):
            pending = await self.conn.start_request(
                "session/close", SessionIdParams(session_id=self.session_id).wire()
            )
            await pending.wait()


async def _first_of(pending: PendingRequest, cancel: anyio.Event | None, timeout: float) -> TurnEnd:
    """Wait for the reply, the caller's cancel, or the deadline, whichever comes first."""
    ended: TurnEnd = "timeout"
    with anyio.move_on_after(timeout):
        async with anyio.create_task_group() as tg:

            async def on_cancel(event: anyio.Event) -> None:
                nonlocal ended
                await event.wait()
                ended = "cancelled"
                tg.cancel_scope.cancel()

            if cancel is not None:
                tg.start_soon(on_cancel, cancel)
            await pending.wait()
            if ended == "timeout":
                ended = "response"
            tg.cancel_scope.cancel()
    return ended


def turn_error(outcome: TurnOutcome, timeout: float) -> Exception | None:
    """The error a turn ended with, if it ended other than with a reply."""
    if outcome.ended == "timeout":
        return RunTimeout(f"the agent did not finish within {timeout:g}s")
    if outcome.ended == "cancelled":
        return RunCancelled("the run was cancelled")
    return None
