"""An ``acp_spawn`` run once its agent has started: the client's services, the connection,
the session and its phases (initialize, session setup, the turn and its repair turns, the
follow-up turns of a held session), then the wind-down.

:class:`~acp_bridge._entries.acp_spawn.run.AcpRun` imports this module only when it has
started the agent's process (issue 24): the session machinery it brings (the wire schema's
models, the connection, the session, the services: ~20 ms of a cold run's imports) loads
while the agent starts up, not before.
"""

from __future__ import annotations

import os
from typing import Any

import anyio

from acp_bridge._acp.agent_process import AgentProcess
from acp_bridge._acp.rpc.connection import JsonRpcConnection
from acp_bridge._acp.services.client import ClientServices
from acp_bridge._acp.services.mcp_transport import ServicesOffer, ServicesReach
from acp_bridge._acp.session.acp_session import AcpSession
from acp_bridge._acp.session.auth import auth_fix, auth_refused_prompt
from acp_bridge._acp.session.session_options import SessionChoices
from acp_bridge._acp.session.tracing import set_attributes
from acp_bridge._acp.turn.prompt_turn import TurnOutcome, TurnSignals, turn_error
from acp_bridge._acp.wire.initialize_schema import Implementation
from acp_bridge._acp.wire.schema import AUTH_REQUIRED
from acp_bridge._entries.acp_spawn.clock import RunClock
from acp_bridge._entries.acp_spawn.live_turns import FollowUp, FollowUps, Held, Turn
from acp_bridge._entries.acp_spawn.result import needs_repair, repair_prompt
from acp_bridge._entries.acp_spawn.run_state import RunState
from acp_bridge._entries.confinement import Confinement
from acp_bridge._entries.entry_table import ENTRY_TABLE
from acp_bridge._entries.enveloped import END_GRACE, resolve_timeout
from acp_bridge._os.process.procgroup import RunProcesses
from acp_bridge._output_schema.structured_output import structured_output_instruction
from acp_bridge._version import __version__
from acp_bridge.errors import (
    AgentRequestError,
    BridgeError,
    MalformedReply,
    RunCancelled,
    RunStalled,
)

CLIENT_INFO = Implementation(name="acp-bridge", title="acp-bridge", version=__version__)


class SessionPhases:
    """A run's started agent, from its process to the end of the wind-down. What it
    gathers goes to the run's records (:meth:`~.run_state.RunState.records`); the run's clock and
    turn are the run's, replaced when a follow-up turn begins."""

    def __init__(
        self,
        run: RunState,
        process: AgentProcess,
        confinement: Confinement,
        started: RunProcesses,
    ) -> None:
        self.run = run
        self.profile = run.profile
        self.sink = run.sink
        self.tracing = run.tracing
        self.transcript = run.transcript
        self.process = process
        self.confinement = confinement
        self.started = started
        self.result = run.records()
        self.collector = self.result.collector
        self.signals = TurnSignals()
        options = run.options
        self.choices = SessionChoices(
            options.get("mode"),
            options.get("model"),
            dict(options.get("config_options") or {}),
            options.get("system_prompt"),
        )

    async def run_session(self) -> str | None:
        """Serve the agent, take the session through its phases, wind down; a phase's
        error goes to the records. Called inside the process's ``async with``. Returns why
        the agent must be started again on v1 (:meth:`v1_instead`), else None."""
        run, result, process = self.run, self.result, self.process
        v1_instead: str | None = None
        async with anyio.create_task_group() as services_tg:
            result.process = process
            services = result.services = ClientServices(
                self.profile,
                roots=run.roots,
                cwd=run.cwd,
                env=run.env,
                tg=services_tg,
                sink=self.sink,
                signals=self.signals,
                permission_hook=run.permission_hook,
                elicitation_hook=run.elicitation_hook,
                on_tool_call=self.collector.tool_call_seen,
                launcher=self.confinement.launch,
                announced=self.collector.announced,
                sandbox=self.confinement.mode,
            )
            async with JsonRpcConnection(
                process.stdout,
                process.stdin,
                on_update=self.collector,
                router=services.router(),
                on_notification=self.notification,
                transcript=self.transcript,
                max_message_bytes=self.profile.max_message_bytes,
            ) as conn:
                reach = ServicesReach.of(self.confinement.box)
                offer = ServicesOffer(services, services_tg, reach)
                session = result.session = AcpSession(
                    conn,
                    profile=self.profile,
                    cwd=str(run.cwd),
                    agent_env=run.env,
                    capabilities=services.capabilities(),
                    client_info=CLIENT_INFO,
                    collector=self.collector,
                    signals=self.signals,
                    sink=self.sink,
                    tracing=self.tracing,
                    services_server=offer,
                    system_prompt=self.choices.system_prompt or self.profile.session.system_prompt,
                )
                try:
                    await self._phases(session)
                except BridgeError as exc:
                    v1_instead = self.v1_instead(session, exc)
                    if v1_instead is None:
                        result.error = exc
                finally:
                    with anyio.CancelScope(shield=True), self.tracing.span("acp.shutdown"):
                        await run.clock.wind_down(session, process, services, self.started)
                        await offer.stop()
            services_tg.cancel_scope.cancel()
        return v1_instead

    def v1_instead(self, session: AcpSession, error: BridgeError) -> str | None:
        """Why this agent is to be started again on v1, if it is: under ``protocol: auto``
        a v2 reply that does not validate, before any prompt was sent (so nothing the agent
        did is done twice). Its session is wound down as any other; the run starts the agent
        again (``run.py``), once: a v1 run never comes here."""
        if (
            isinstance(error, MalformedReply)
            and session.v2
            and self.profile.protocol == "auto"
            and not session.prompted
        ):
            return f"its v2 reply did not validate ({error})"
        return None

    def notification(self, method: str, params: Any) -> None:
        """The agent's notifications other than ``session/update``: the services' (a
        probe's phases also read what the agent reports about itself)."""
        if self.result.services is not None:
            self.result.services.notification(method, params)

    async def _phases(self, session: AcpSession) -> None:
        run, timeouts, clock = self.run, self.profile.timeouts, self.run.clock
        with self.tracing.span("acp.initialize"):
            what = f"the agent did not answer initialize within {timeouts.startup:g}s"
            await clock.phase(
                session.conn, session.initialize, timeouts.startup, f"{what} (timeouts.startup)"
            )

        async def open_session() -> None:
            with self.tracing.span("acp.session") as span:
                await session.open(
                    run.roots.beside(run.cwd),
                    resume=run.resume,
                    fork=run.fork,
                    unstable=run.unstable,
                )
                set_attributes(
                    span,
                    **{"acp.session_id": session.session_id, "acp.method": session.session_method},
                )
                await session.configure(self.choices)

        late = f"session setup took longer than {timeouts.session:g}s (timeouts.session)"
        await clock.phase(session.conn, open_session, timeouts.session, late)
        await self._answer(session, run.task)
        if run.follow_ups is not None:
            while (follow := await self._hold(session, run.follow_ups)) is not None:
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
            self.collector.end_turn()  # the answer checked is the one kept
            error = (await result.check_answer(self.run.clock.left())).error
            if not repairs_left or not needs_repair(result):
                break
            self.sink.emit("status", phase="repairing", reason=str(error))
            await self._turn(session, repair_prompt(result.output_schema, error))

    async def _turn(self, session: AcpSession, prompt: str) -> None:
        clock = self.run.clock
        with self.tracing.span("acp.prompt") as span:
            grace = self.profile.timeouts.cancel_grace
            outcome: TurnOutcome = await clock.turn(session, prompt, grace)
            set_attributes(span, **{"acp.ended": outcome.ended})
        self.result.outcome = outcome
        error = turn_error(outcome, clock.timeout)
        if isinstance(error, RunCancelled) and clock.stalled:
            stall = clock.stall
            error = RunStalled(f"the agent showed no progress for {stall:g}s (timeouts.stall)")
        if error is not None:
            raise error
        assert outcome.response is not None
        try:
            outcome.response.unwrap()  # an error reply or a dead agent ends the run here
        except AgentRequestError as exc:
            if exc.rpc_code != AUTH_REQUIRED:
                raise
            fix = auth_fix(self.profile.auth.env, self.run.env, os.environ)
            raise auth_refused_prompt(exc, fix) from exc
        if outcome.result is None and outcome.parse_error is not None:
            raise outcome.parse_error
        if self.result.output_schema or self.run.follow_ups is not None:
            # The answer is taken now (checked, or handed over with the agent held), not
            # after the wind-down has read everything: read what follows the reply first.
            await clock.drain(session)

    async def _hold(self, session: AcpSession, follow_ups: FollowUps) -> FollowUp | None:
        """The turn ended and the session is sound: hand its envelope over and keep the
        agent until the hook answers (by the end of the idle time), watching it meanwhile."""
        run = self.run
        envelope = run.turn.label(self.result.envelope(), run.ctx.depth)
        held = Held(anyio.current_time() + self.profile.timeouts.idle)
        conn = session.conn
        conn.set_deadline(held.until + END_GRACE)  # our replies to what the agent asks meanwhile
        self.transcript.note(f"turn {run.turn.task_id} ended; the agent is held")

        async def watch() -> None:
            await conn.wait_closed()
            held.gone.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            follow = await follow_ups(envelope, held)
            tg.cancel_scope.cancel()
        # The hold may outlast the turn's deadline: what comes next (the wind-down, or a
        # turn that cannot begin) is bounded from now, as at the end of any turn.
        run.clock.deadline = max(run.clock.deadline, anyio.current_time())
        return follow

    def _begin(self, session: AcpSession, follow: FollowUp) -> None:
        """The next turn is a run of its own: its id in events, its deadline from now, its
        cancel, its own records for its envelope."""
        run = self.run
        run.turn = Turn(follow.task_id)
        self.sink.retarget(follow.task_id, run.turn.started)
        self.result.next_turn(follow.output_schema or "")
        # A follow-up turn without a timeout of its own gets the entry's default.
        default = ENTRY_TABLE["acp_spawn"].default_timeout(self.run.ctx.config, self.profile.name)
        timeout = self.result.timeout = resolve_timeout(follow.timeout, default)
        clock = run.clock
        run.clock = RunClock(
            anyio.current_time() + timeout,
            timeout,
            follow.cancel,
            follow.abort if follow.abort is not None else clock.abort,
            shutdown_grace=clock.shutdown_grace,
            transcript=clock.transcript,
            stall=clock.stall,
        )
        self.transcript.note(f"follow-up turn {follow.task_id}")
        # The session goes on in the same agent process: no start-up, no session setup.
        self.sink.emit("status", phase="session", session_id=session.session_id, method="held")
