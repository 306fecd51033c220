"""One ACP session over a connection: handshake, auth, session setup (new, resume, load,
fork), options, prompt turns, cancel, close (docs/explanation/acp.md, one run).

The update stream is gathered by ``_acp/turn/turn_collector.py``, the session's state by
``_acp/turn/session_state.py``, mode, model and options are set by session_options.py, auth
choices are in auth.py, and what a turn shares with the services is in
``_acp/turn/prompt_turn.py``. Methods used outside a run (list, delete, logout) are
in session_methods.py.

Every method is called only when the agent advertises it. Continuing an earlier session
(``resume=``) prefers ``session/resume`` (no replay) over ``session/load`` (the agent replays
the conversation first, which the collector keeps out of this turn's answer); when the agent
offers neither it is an error, never a silent ``session/new``.

Deadlines: the caller gives each step its deadline (the connection's writes run under it,
see ``_acp/wire/outbox.py``). The prompt is *sent* under the run's deadline, not before it: a 2 MiB
prompt to an agent that does not read is a timeout like any other. ``session/cancel`` gets
:data:`CANCEL_WRITE` seconds to be written; when it is not out by then the agent is not
reading, so there is no point waiting for its ``stopReason: cancelled``: the turn ends at
once and the caller goes on to the kill.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from acp_bridge._acp.rpc.connection import JsonRpcConnection, PendingRequest, Response
from acp_bridge._acp.session.auth import (
    auth_fix,
    configured_method,
    headless_choice,
    why_not_headless,
)
from acp_bridge._acp.session.session_options import SessionChoices, SessionOptions
from acp_bridge._acp.session.setup_params import profile_mcp_servers, system_prompt_param
from acp_bridge._acp.session.tracing import NO_TRACING, Tracing
from acp_bridge._acp.turn.lifecycle import (
    NO_MESSAGE_ID,
    V1_TURN_END,
    acknowledged,
    ended_the_v1_way,
    no_message_id,
    turn_result,
)
from acp_bridge._acp.turn.prompt_turn import TurnEnd, TurnOutcome, TurnSignals
from acp_bridge._acp.turn.turn_collector import TurnCollector
from acp_bridge._acp.wire.initialize_schema import (
    AuthenticateParams,
    AuthMethod,
    ClientCapabilities,
    Implementation,
    InitializeResult,
)
from acp_bridge._acp.wire.schema import (
    AUTH_REQUIRED,
    McpServerHttp,
    McpServerStdio,
    NewSessionParams,
    NewSessionResult,
    PromptParams,
    SessionIdParams,
    SessionSetup,
    TextBlock,
    Wire,
)
from acp_bridge._acp.wire.session_schema import ForkSessionResult, SessionLifecycleParams
from acp_bridge._acp.wire.versions import (
    UNSUPPORTED_VERSION,
    initialize_params,
    initialize_result,
    setup_reply,
    spoken_version,
    unsupported_version,
)
from acp_bridge._os.race import on_any, race, wait_any
from acp_bridge.config import AgentProfile
from acp_bridge.errors import (
    AgentRequestError,
    AuthRequiredError,
    BridgeError,
    NotOffered,
)
from acp_bridge.events import EventSink

CANCEL_WRITE = 1.0
"""Seconds ``session/cancel`` may take to be written before the turn is given up on."""

UNSTABLE_HINT = "opt in with --unstable (API: unstable=True) or the profile's `unstable: true`"

ServicesServer = Callable[
    [InitializeResult, bool], Awaitable[tuple["McpServerStdio | McpServerHttp | None", str | None]]
]
"""Given what the agent advertised (and whether it speaks v2), the MCP server entry that
offers it the bridge's files and terminals over a transport it takes (None: none), and why
none could be offered where it should have been (a warning)."""


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
        tracing: Tracing = NO_TRACING,
        services_server: ServicesServer | None = None,
        system_prompt: str | None = None,
    ) -> None:
        self.conn = conn
        self.services_server = services_server
        """The bridge's files and terminals as an MCP server, for the agent's transports."""
        self.system_prompt = system_prompt
        self.protocol_version: int | None = None
        self.profile = profile
        self.cwd = cwd
        self.agent_env = agent_env
        self.capabilities = capabilities
        self.client_info = client_info
        self.collector = collector
        self.state = collector.state
        self.signals = signals
        self.sink = sink
        self.tracing = tracing
        self.init: InitializeResult | None = None
        self.session_id: str | None = None
        self.session_method: str | None = None
        """How the session was opened: session/new, session/resume, session/load, session/fork."""
        self.phase = "starting"
        self.warnings: list[str] = []
        self.turn_in_progress = False
        self.prompted = False
        """Whether a prompt was sent: from then on the session's work cannot be redone."""

    def warn(self, warning: str) -> None:
        """A warning for ``meta.warnings``, once however often it happens (each turn, say)."""
        if warning not in self.warnings:
            self.warnings.append(warning)

    async def call(self, method: str, params: Wire | dict[str, Any]) -> Any:
        """A request with the trace context in its ``_meta``; its result."""
        data = params.wire() if isinstance(params, Wire) else params
        return await self.conn.request(method, self.tracing.with_meta(data))

    # --- handshake ------------------------------------------------------------------------

    async def initialize(self) -> InitializeResult:
        """``initialize``, negotiating the wire version (``_acp/wire/versions.py``)."""
        self.phase = "initialize"
        setting = self.profile.protocol
        params = initialize_params(setting, self.capabilities, self.client_info)
        try:
            reply = await self.call("initialize", params)
        except AgentRequestError as exc:
            if exc.rpc_code == UNSUPPORTED_VERSION:
                raise unsupported_version(exc.data, setting) from exc
            raise
        version, note = spoken_version(setting, reply)
        if note is not None:
            self.warn(note)
        self.protocol_version = self.state.version = version
        result = initialize_result(version, reply)
        self.init = result
        info = result.agent_info
        self.sink.emit(
            "status",
            phase="initialized",
            agent=info.name if info else None,
            version=info.version if info else None,
            protocol_version=version,
        )
        return result

    @property
    def v2(self) -> bool:
        return self.protocol_version == 2

    @property
    def agent(self) -> InitializeResult:
        assert self.init is not None, "initialize first"
        return self.init

    async def authenticate(self, method: AuthMethod) -> None:
        self.phase = "authenticate"
        why_not = why_not_headless(method, self.profile.command, self.agent_env)
        if why_not:
            raise AuthRequiredError(f"{why_not}; {self.auth_fix()}")
        try:
            name = "auth/login" if self.v2 else "authenticate"  # v2 renamed it
            await self.call(name, AuthenticateParams(method_id=method.id))
        except AgentRequestError as exc:
            failed = f"authentication with {method.id} failed: {exc}"
            raise AuthRequiredError(f"{failed}; {self.auth_fix()}") from exc
        self.sink.emit("status", phase="authenticated", method=method.id)

    def auth_fix(self) -> str:
        """What authenticates this agent, for every auth error (the profile's auth.env)."""
        return auth_fix(self.profile.auth.env, self.agent_env, os.environ)

    async def configured_auth(self) -> None:
        """``authenticate`` with the profile's ``auth.method``, if it names one."""
        if self.profile.auth.method is not None:
            await self.authenticate(
                configured_method(self.agent.auth_methods, self.profile.auth.method)
            )

    async def call_authenticated(self, method: str, params: Wire) -> Any:
        """``call``; on -32000 (auth required), authenticate headless and retry once."""
        try:
            return await self.call(method, params)
        except AgentRequestError as exc:
            if exc.rpc_code != AUTH_REQUIRED:
                raise
        choice = headless_choice(
            self.agent.auth_methods, self.profile.command, self.agent_env, self.auth_fix()
        )
        await self.authenticate(choice)
        self.phase = method
        return await self.call(method, params)

    # --- session ----------------------------------------------------------------------------

    async def mcp_servers(self) -> list[McpServerStdio | McpServerHttp]:
        """The profile's MCP servers, then the bridge's own services where it offers them."""
        servers = profile_mcp_servers(self.profile, v2=self.v2)
        if self.services_server is not None:
            offered, why_not = await self.services_server(self.agent, self.v2)
            if offered is not None:
                servers.append(offered)
            if why_not is not None and why_not not in self.warnings:
                self.warnings.append(why_not)
        return servers

    def system_prompt_param(self) -> dict[str, Any] | None:
        return system_prompt_param(self.system_prompt, self.agent)

    def _continue_method(self, fork: bool, unstable: bool) -> str:
        """Which method continues an earlier session, or why none can."""
        caps = self.agent.agent_capabilities
        if fork:
            if not unstable:
                raise NotOffered(f"--fork: session/fork is an unstable ACP method; {UNSTABLE_HINT}")
            if not caps.session_supports("fork"):
                raise NotOffered("--fork: the agent does not offer session/fork")
            return "session/fork"
        if caps.session_supports("resume"):
            return "session/resume"
        if caps.load_session and not self.v2:  # v2 has no session/load
            return "session/load"
        raise NotOffered(
            "the agent offers neither session/resume nor session/load, so an earlier session "
            "cannot be continued (a new session would not know it)"
        )

    async def open(
        self,
        additional_directories: list[str],
        *,
        resume: str | None = None,
        fork: bool = False,
        unstable: bool = False,
    ) -> None:
        """Auth (if configured), then ``session/new`` — or, with ``resume``, continue that
        session (``fork``: in a copy of it) — with auth and one retry on -32000."""
        caps = self.agent.agent_capabilities
        method = "session/new" if resume is None else self._continue_method(fork, unstable)
        await self.configured_auth()
        self.phase = method
        dirs = additional_directories if caps.session_supports("additionalDirectories") else []
        common: dict[str, Any] = {
            "cwd": self.cwd,
            "mcp_servers": await self.mcp_servers(),
            "additional_directories": dirs or None,
            "system_prompt": self.system_prompt_param(),
        }
        setup: SessionSetup
        version = self.protocol_version
        if resume is None:
            new = NewSessionParams(**common)
            raw = await self.call_authenticated(method, new)
            created = setup_reply(version, NewSessionResult, raw, method)
            self.session_id, setup = created.session_id, created
        else:
            params = SessionLifecycleParams(session_id=resume, **common)
            if method != "session/fork":  # its updates name the session resumed, from the start
                self.collector.session_known(resume)
            if method == "session/load":
                self.collector.replay(True)  # the conversation so far comes first: history
            try:
                raw = await self.call_authenticated(method, params)
            finally:
                self.collector.replay(False)
            if method == "session/fork":
                forked = setup_reply(version, ForkSessionResult, raw, method)
                self.session_id, setup = forked.session_id, forked
            else:
                self.session_id, setup = resume, setup_reply(version, SessionSetup, raw, method)
        self.session_method = method
        self.collector.session_known(self.session_id)  # what came before the reply: judged now
        self.state.apply_setup(setup)
        self.sink.emit("status", phase="session", session_id=self.session_id, method=method)

    async def configure(self, call: SessionChoices) -> None:
        """The profile's mode, model and options (warnings), then ``call``'s (errors)."""
        assert self.session_id is not None
        self.phase = "configure"
        wanted = self.profile.session
        profile = SessionChoices(wanted.mode, wanted.model, wanted.config_options)
        options = SessionOptions(self.call, self.session_id, self.state, self.warnings)
        await options.apply(profile, call)

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
        agent's ``stopReason: cancelled`` (docs/explanation/acp.md, one run); ``abort`` waits for
        nothing."""
        assert self.session_id is not None
        self.phase = "prompt"
        self.signals.cancelled = anyio.Event()  # the services hold self.signals; new per turn
        self.collector.begin_turn()
        self.turn_in_progress = self.prompted = True
        self.sink.emit("status", phase="prompting")
        key = secrets.token_hex(8) if self.v2 else None  # v2: a retried prompt is safe
        params = PromptParams(
            session_id=self.session_id, prompt=[TextBlock(text=text)], idempotency_key=key
        )
        wire = self.tracing.with_meta(params.wire())
        self.conn.set_deadline(deadline)
        sent: list[PendingRequest] = []
        state = self.collector.turn_state

        async def turn_end() -> Response:
            """v1: the prompt's reply. v2: the reply acknowledges; ``idle`` ends the turn."""
            reply = await sent[0].wait()
            if not self.v2:
                return reply
            if ended_the_v1_way(reply):  # no idle will come: the turn is over
                self.warn(V1_TURN_END)
                return reply
            if not acknowledged(reply):
                return reply
            if no_message_id(reply):
                self.warn(NO_MESSAGE_ID)
            await wait_any(state.ended, self.conn.closed_event)
            if not state.ended.is_set():
                return Response(reply.method, failure=self.conn.failure)
            return turn_result(state, reply)

        async def send_and_wait() -> Response:
            sent.append(await self.conn.start_request("session/prompt", wire))
            return await turn_end()

        raced = await race(send_and_wait, on_any(cancel, abort), deadline=deadline)
        ended_at = anyio.current_time()
        ended: TurnEnd = (
            "response" if raced.finished else "timeout" if raced.timed_out else "cancelled"
        )
        response = raced.value if raced.finished else None
        hurry = abort is not None and abort.is_set()
        if ended != "response" and not hurry:
            until = ended_at + grace
            self.conn.set_deadline(until)
            if await self.cancel_turn(ended) and sent:
                done = await race(turn_end, on_any(abort), deadline=until)
                response = done.value if done.finished else None
        self.turn_in_progress = False
        if response is None and sent and not self.v2:
            response = sent[0].response
        outcome = TurnOutcome(ended, response, ended_at)
        result = outcome.result
        if result is not None:
            self.collector.add_prompt_usage(result.usage)
        return outcome

    async def cancel_turn(self, why: str) -> bool:
        """``session/cancel``; pending permission requests are answered ``cancelled``.
        Whether the notification was written (within CANCEL_WRITE seconds).

        The prompt is never cancelled with ``$/cancel_request``: ``session/cancel`` is its
        own cancel, and the agent still owes the reply (``stopReason: cancelled``)."""
        if self.signals.cancelled.is_set() or self.session_id is None:
            return False
        self.phase = "cancel"
        self.signals.cancelled.set()
        self.sink.emit("status", phase="cancelling", reason=why)
        # Children first (those that allow it): a parent told to stop may leave them running.
        for child in self.collector.subagents.cancellable():
            await self._send_cancel(child)
        return await self._send_cancel(self.session_id)

    async def _send_cancel(self, session_id: str) -> bool:
        params = self.tracing.with_meta(SessionIdParams(session_id=session_id).wire())
        with anyio.move_on_after(CANCEL_WRITE):
            try:
                return await self.conn.notify("session/cancel", params, written_within=CANCEL_WRITE)
            except BridgeError:  # the agent is gone or stopped reading: cancel is best effort
                return False
        return False

    async def close(self, grace: float) -> None:
        """``session/close`` when the agent advertises it (best effort, bounded: past
        ``grace`` we cancel the request and go on with the shutdown)."""
        conn = self.conn
        if self.init is None or self.session_id is None or conn.failure or conn.outbox.failure:
            return
        if not self.init.agent_capabilities.session_supports("close"):
            return
        self.phase = "close"
        params = self.tracing.with_meta(SessionIdParams(session_id=self.session_id).wire())
        pending = await self.conn.start_request("session/close", params)
        with anyio.move_on_after(grace):
            await pending.wait()
        await self.conn.cancel_request(pending)  # a no-op when it was answered
