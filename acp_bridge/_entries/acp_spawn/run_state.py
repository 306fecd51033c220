"""What one ``acp_spawn`` run holds: its profile and options, where it runs (cwd, roots,
sandbox), the agent's command and environment, its transcript, clock and turn, and the
records of what it gathers (:meth:`RunState.records`).

Apart from the run's mechanics (:mod:`.run`) because the session's phases
(:mod:`.session_phases`) read and move these too (a follow-up turn takes a new clock and
turn), while the run imports the phases only once its agent starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from acp_bridge._acp.agent_executable import agent_command, session_cwd
from acp_bridge._acp.session.tracing import Tracing
from acp_bridge._acp.wire.transcript import run_transcript
from acp_bridge._entries.acp_spawn.clock import RunClock
from acp_bridge._entries.acp_spawn.live_turns import FollowUps, Turn
from acp_bridge._entries.confinement import Confinement
from acp_bridge._entries.enveloped import RunContext
from acp_bridge._entries.options import AcpSpawnOptions
from acp_bridge._os.fs.roots import Roots
from acp_bridge._os.process.environment import constructed_env, host_environ
from acp_bridge._os.redact import Redactor, looks_secret
from acp_bridge._os.sandbox.denials import given_paths
from acp_bridge._output_schema.structured_output import SchemaRegistry
from acp_bridge.config import AgentProfile
from acp_bridge.config._sandbox_section import IsolationMode, KeepWorktree
from acp_bridge.events import EventSink

if TYPE_CHECKING:
    # Imported when the agent starts (see run.py's docstring), named here for types.
    from acp_bridge._acp.services.elicitation import ElicitationHook
    from acp_bridge._acp.services.permissions import PermissionHook
    from acp_bridge._entries.acp_spawn.result import AcpResult


class RunState:
    """One ``acp_spawn`` run's state, from its options to its records."""

    def __init__(
        self,
        ctx: RunContext,
        profile: AgentProfile,
        task: str,
        options: AcpSpawnOptions,
        *,
        timeout: float,
        sink: EventSink,
        cancel: anyio.Event | None,
        abort: anyio.Event | None = None,
        permission_hook: PermissionHook | None = None,
        elicitation_hook: ElicitationHook | None = None,
        origin: str = "",
        follow_ups: FollowUps | None = None,
    ) -> None:
        """``options`` checked (:func:`~acp_bridge._entries.entry_table.check_options`)."""
        worktree = options.get("worktree")
        self.profile = profile
        self.options = options
        self.isolation: IsolationMode = options.get("isolation") or profile.isolation
        self.keep_worktree: KeepWorktree = options.get("keep_worktree") or profile.keep_worktree
        # the session's kept worktree, for a follow-up that resumes
        self.reopen = Path(worktree) if worktree is not None else None
        self.task = task
        self.ctx = ctx
        self.sink = sink
        self.permission_hook = permission_hook
        self.elicitation_hook = elicitation_hook
        self.resume = options.get("resume")
        self.fork = options.get("fork", False)
        self.unstable = options.get("unstable", False) or profile.unstable
        self.tracing = Tracing.from_host()
        self.origin = origin
        # Only when the profile keeps its agent between turns: else the one-shot run.
        self.follow_ups = follow_ups if profile.timeouts.idle > 0 else None
        self.turn = Turn(ctx.task_id, ctx.started)
        """The turn now running (the run itself, then each follow-up)."""
        self.cwd = session_cwd(options.get("cwd"), profile)
        self.roots = Roots.for_session(self.cwd, profile.read_roots, profile.write_roots)
        self.sandbox = profile.sandbox.over(ctx.config.config.sandbox)
        self.env = constructed_env(
            depth=ctx.depth,
            max_depth=ctx.max_depth,
            extra=profile.env,
            passthrough=profile.env_passthrough,
        )
        # When the host traces: the OTEL_* settings ACP asks clients to give their agents.
        self.env = self.tracing.agent_env(self.env, profile.name, host_environ())
        # The managed install of the profile's package, if any (agents install), else PATH.
        self.command, self.env = agent_command(profile, self.env)
        # A passed-through value is a secret under a secret-looking name (OPENAI_API_KEY);
        # CODEX_HOME and XDG_DATA_HOME are paths, which the errors must show as they are.
        passed = [
            self.env[name]
            for name in profile.env_passthrough
            if name in self.env and looks_secret(name)
        ]
        # OTLP headers carry the collector's credentials (Authorization=Bearer …).
        passed += [
            value
            for name, value in self.env.items()
            if name.startswith("OTEL_") and "HEADERS" in name
        ]
        self.redactor = Redactor([*profile.secret_values(), *passed])
        if self.redactor:
            sink.redact = self.redactor.data  # events reach stderr and the run store
        self.transcript = run_transcript(ctx.config.config.transcripts, ctx.task_id, self.redactor)
        grace = profile.timeouts.shutdown_grace
        self.clock = RunClock(
            ctx.deadline(timeout),
            timeout,
            cancel,
            abort,
            shutdown_grace=grace,
            transcript=self.transcript,
            stall=profile.timeouts.stall,
        )
        self.output_schema = options.get("output_schema") or ""
        self.schemas = SchemaRegistry(ctx.config.config.schemas)
        self.timeout = timeout
        self.confinement: Confinement | None = None
        self.result: AcpResult | None = None
        """What the run gathered (:meth:`records`): made as its agent starts."""

    def records(self) -> AcpResult:
        """What the run gathers for its envelope: made when its agent starts, or (a run
        that never started one) when its envelope is made."""
        if self.result is None:
            # Imported here, not above: what they bring (the turn's collector, the wire
            # schema's models) loads while the agent starts up (see the docstring).
            from acp_bridge._acp.turn.turn_collector import TurnCollector
            from acp_bridge._entries.acp_spawn.result import AcpResult

            self.result = AcpResult(
                profile=self.profile,
                output_schema=self.output_schema,
                schemas=self.schemas,
                collector=TurnCollector(self.sink),
                transcript=self.transcript,
                redactor=self.redactor,
                timeout=self.timeout,
                tracing=self.tracing,
            )
            self.result.confinement = self.confinement
            own = [*self.profile.env, *self.profile.env_passthrough]  # not PATH, HOME, …
            env = [(name, self.env[name]) for name in own if name in self.env]
            self.result.given = given_paths(self.profile.args, env)
        return self.result
