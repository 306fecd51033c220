"""One ACP session over a connection: handshake, auth, session setup, prompt turns, cancel
(DESIGN §4). The update stream is gathered by updates.py; what a turn shares with the
services is in turn.py.

Deadlines: the caller gives each step its deadline (the connection's writes run under it,
see outbox.py). The prompt is *sent* under the run's deadline, not before it: a 2 MiB prompt
to an agent that does not read is a timeout like any other. ``session/cancel`` gets
:data:`CANCEL_WRITE` seconds to be written; when it is not out by then the agent is not
reading, so there is no point waiting for its ``stopReason: cancelled``: the turn ends
at once and the caller goes on to the kill.
"""

from __future__ import annotations

from collections.abc import Mapping

import anyio

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
    PromptParams,
    SessionIdParams,
    SetConfigOptionParams,
    SetConfigOptionResult,
    SetModeParams,
    TextBlock,
    parse_reply,
)
from acp_bridge._acp.turn import TurnEnd, TurnOutcome, TurnSignals
from acp_bridge._acp.updates import TurnCollector
from acp_bridge._os.race import race, wait_any, wait_event
from acp_bridge.config import AgentProfile
from acp_bridge.errors import AgentRequestError, AuthRequiredError, BridgeError, ProtocolError
from acp_bridge.events import EventSink

CANCEL_WRITE = 1.0
"""Seconds ``session/cancel`` may take to be written before the turn is given up on."""


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
        self,
        text: str,
        *,
        deadline: float,
        cancel: anyio.Event | None,
        abort: anyio.Event | None,
        grace: float,
    ) -> TurnOutcome:
        """One prompt turn, sent and answered by ``deadline`` (``anyio.current_time()``). A
        timeout or ``cancel`` sends ``session/cancel`` and waits up to ``grace`` for the
        agent's ``stopReason: cancelled`` (DESIGN §4); ``abort`` waits for nothing."""
        assert self.session_id is not None
        self.phase = "prompt"
        self.signals.cancelled = anyio.Event()  # the services hold self.signals; new per turn
        self.collector.begin_turn()
        self.turn_in_progress = True
        self.sink.emit("status", phase="prompting")
        params = PromptParams(session_id=self.session_id, prompt=[TextBlock(text=text)]).wire()
        self.conn.set_deadline(deadline)
        sent: list[PendingRequest] = []

        async def send_and_wait() -> Response:
            pending = await self.conn.start_request("session/prompt", params)
            sent.append(pending)
            return await pending.wait()

        raced = await race(send_and_wait, lambda: wait_any(cancel, abort), deadline=deadline)
        ended_at = anyio.current_time()
        ended: TurnEnd = (
            "response" if raced.finished else "timeout" if raced.timed_out else "cancelled"
        )
        pending = sent[0] if sent else None
        hurry = abort is not None and abort.is_set()
        if ended != "response" and not hurry:
            until = ended_at + grace
            self.conn.set_deadline(until)
            if await self.cancel_turn(ended) and pending is not None:
                await race(pending.wait, lambda: wait_event(abort), deadline=until)
        self.turn_in_progress = False
        outcome = TurnOutcome(ended, pending.response if pending else None, ended_at)
        result = outcome.result
        if result is not None:
            self.collector.add_prompt_usage(result.usage)
        return outcome

    async def cancel_turn(self, why: str) -> bool:
        """``session/cancel``; pending permission requests are answered ``cancelled``.
        Whether the notification was written (within CANCEL_WRITE seconds)."""
        if self.signals.cancelled.is_set() or self.session_id is None:
            return False
        self.phase = "cancel"
        self.signals.cancelled.set()
        self.sink.emit("status", phase="cancelling", reason=why)
        params = SessionIdParams(session_id=self.session_id).wire()
        with anyio.move_on_after(CANCEL_WRITE):
            try:
                return await self.conn.notify("session/cancel", params, written_within=CANCEL_WRITE)
            except BridgeError:  # the agent is gone or stopped reading: cancel is best effort
                return False
        return False

    async def close(self, grace: float) -> None:
        """``session/close`` when the agent advertises it (best effort, bounded)."""
        conn = self.conn
        if self.init is None or self.session_id is None or conn.failure or conn.outbox.failure:
            return
        if not self.init.agent_capabilities.session_supports("close"):
            return
        self.phase = "close"
        with anyio.move_on_after(grace):
            pending = await self.conn.start_request(
                "session/close", SessionIdParams(session_id=self.session_id).wire()
            )
            await pending.wait()
