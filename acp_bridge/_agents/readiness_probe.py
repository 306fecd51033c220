"""``doctor``'s proofs: the profile's agent started as a run starts it — in its sandbox, with
its environment and its managed install, in a fresh temporary workspace — and stopped
early, bounded in time, in the run's usual wind-down (no process left, nothing written
but the agent's declared state paths).

- :func:`probe_session`: through ``initialize`` and ``session/new`` (with the profile's
  auth, and the mode, model and options a run sets), then closed again (``session/close``
  where the agent offers it, else the agent ended). No prompt: no model is asked, nothing is
  billed. What the agent says about its auth is kept: a ``-32000`` (auth required) answer to
  ``session/new``, and the ``_auth/status_update`` notification claude-agent-acp sends after
  it (``{"kind": "none", "label": "Not logged in"}`` with no key).
- :func:`sandboxed_version`: ``<command> <version_args>`` started the same way, where the
  agent's install record does not say it: an agent's ``--version`` may write its state
  (codex did, into ``~/.codex``), and outside the sandbox that is the user's home.

A command found on ``PATH`` proves little: an agent installed under ``/tmp`` or a hidden
directory may not even load its own modules inside the sandbox, and one that starts may
still refuse every session for want of a key.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import anyio

from acp_bridge._acp.agent_executable import spawn_error
from acp_bridge._acp.agent_process import KILL_RESERVE
from acp_bridge._entries.acp_spawn.run import AcpRun
from acp_bridge._entries.acp_spawn.session_phases import SessionPhases
from acp_bridge._entries.enveloped import RunContext
from acp_bridge._os.process.procgroup import ProcessGroup, RunProcesses
from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import new_task_id
from acp_bridge.errors import AgentExitedError, AuthRequiredError, RunTimeout
from acp_bridge.events import EventSink

if TYPE_CHECKING:
    from acp_bridge._acp.session.acp_session import AcpSession
    from acp_bridge._entries.confinement import Confinement

PROBE_TIMEOUT = 90.0
"""The most a readiness probe may take, whatever the profile's timeouts say (its
``timeouts.startup`` and ``timeouts.session`` bound its two steps inside it)."""
VERSION_TIMEOUT = 30.0
"""The most a sandboxed ``--version`` may take (vibe's takes 9-11 s on a loaded machine)."""
VERSION_BYTES = 4096  # of the version command's output, kept
AUTH_STATUS = "_auth/status_update"
AUTH_STATUS_WAIT = 3.0
"""Seconds to wait, after ``session/new``, for the auth status of an agent that advertises
one (``agentCapabilities._meta.authStatus``): claude-agent-acp sends it right after."""

STDERR_LINES, STDERR_CHARS = 8, 600  # of the agent's stderr, in a failed probe's detail


@dataclass(frozen=True)
class ProbeResult:
    """How far the agent got, and what it said about its auth."""

    ok: bool
    """``initialize`` and ``session/new`` answered (the session closed again)."""
    detail: str
    """The agent's name and version and where it answered ``initialize``, or why it did not."""
    started: bool = False
    """``initialize`` answered."""
    late: bool = False
    """It stopped because a step took longer than its limit (``timeouts.startup`` before
    ``initialize`` answered, else ``timeouts.session``)."""
    session_error: str = ""
    """Why session setup failed (auth aside), once ``initialize`` answered."""
    closed_by: str = ""
    """How the session ended: ``session/close`` where the agent offers it, else by ending
    the agent."""
    auth_refused: str = ""
    """Why ``session/new`` was refused for want of auth (``-32000``), as the bridge says it."""
    auth_status: Mapping[str, Any] | None = None
    """The ``authStatus`` the agent reported after ``session/new`` (``kind``, ``label``)."""
    login_commands: tuple[str, ...] = ()
    """The advertised terminal logins, as command lines to run (``kimi --login``)."""
    auth_vars: tuple[str, ...] = ()
    """Variables the advertised ``env_var`` auth methods read."""
    env_names: frozenset[str] = field(default_factory=frozenset)
    """The names of the variables the agent's environment had."""
    agent_version: str = ""
    """The version the agent gave in ``initialize`` (``agentInfo.version``)."""


class _SessionProbePhases(SessionPhases):
    """A started agent taken through ``initialize`` and session setup, no turn."""

    def notification(self, method: str, params: Any) -> None:
        if method == AUTH_STATUS and isinstance(params, dict):
            status = params.get("authStatus")
            run = self.run
            if isinstance(status, dict) and isinstance(run, _SessionProbe):
                run.auth_status = status
                run.status_seen.set()
        super().notification(method, params)

    async def _phases(self, session: AcpSession) -> None:
        run, timeouts, clock = self.run, self.profile.timeouts, self.run.clock
        late = f"the agent did not answer initialize within {timeouts.startup:g}s"
        await clock.phase(
            session.conn, session.initialize, timeouts.startup, f"{late} (timeouts.startup)"
        )

        async def open_session() -> None:
            await session.open(run.roots.beside(run.cwd))
            await session.configure(self.choices)
            meta = session.agent.agent_capabilities.model_extra or {}
            said = meta.get("_meta")
            if isinstance(run, _SessionProbe) and isinstance(said, dict) and "authStatus" in said:
                with anyio.move_on_after(AUTH_STATUS_WAIT):
                    await run.status_seen.wait()

        late = f"session setup took longer than {timeouts.session:g}s (timeouts.session)"
        await clock.phase(session.conn, open_session, timeouts.session, late)


class _SessionProbe(AcpRun):
    """A run of the profile that stops once its session is set up."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.auth_status: dict[str, Any] | None = None
        self.status_seen = anyio.Event()

    def session_phases(self) -> type[SessionPhases]:
        return _SessionProbePhases


class _VersionCall(AcpRun):
    """A run of the profile whose process is ``<command> <version_args>``, not the agent:
    the same sandbox, environment and managed install, its output kept."""

    def __init__(self, *args: Any, limit: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limit = limit
        self.exit_code: int | None = None
        self.output = bytearray()
        self.errors = bytearray()
        self.timed_out = False

    async def _run_agent(self, confinement: Confinement, started: RunProcesses) -> None:
        argv = [self.command, *self.profile.version_args]
        self.transcript.note(f"doctor: the version, asked in the sandbox: {argv}")
        launch = confinement.launch(argv, self.env, self.cwd)
        try:
            group = await ProcessGroup.start(
                launch.argv,
                env=launch.env,
                cwd=launch.cwd,
                graceful=launch.graceful,
                dies_with_parent=launch.dies_with_parent,
            )
        except OSError as exc:
            raise spawn_error(exc.strerror or exc, self.profile, self.origin) from exc
        try:
            with anyio.move_on_after(self.limit) as scope:
                async with anyio.create_task_group() as readers:
                    readers.start_soon(_keep, group.process.stdout, self.output)
                    readers.start_soon(_keep, group.process.stderr, self.errors)
                    await group.process.wait()
            self.timed_out = scope.cancelled_caught
            self.transcript.note(f"exit code {group.returncode}; it printed {bytes(self.output)!r}")
        finally:
            with anyio.CancelScope(shield=True):  # whatever happened: nothing outlives it
                if group.returncode is None:
                    await group.kill()
                await group.sweep()
                await group.aclose()
                await started.kill_all(wait=KILL_RESERVE)
        self.exit_code = group.returncode


async def _keep(stream: Any, into: bytearray) -> None:
    if stream is None:
        return
    async for chunk in stream:
        into += chunk[: max(0, VERSION_BYTES - len(into))]


def _context(loaded: LoadedConfig) -> RunContext:
    return RunContext(new_task_id(), 1, None, time.monotonic(), loaded)


def _origin(loaded: LoadedConfig, name: str) -> str:
    where = loaded.profiles.get(name).set_at(("command",))
    return f"set at {where}" if where else ""


async def sandboxed_version(loaded: LoadedConfig, name: str) -> tuple[str, str]:
    """What ``<command> <version_args>`` of profile ``name`` prints, run in the agent's
    sandbox (bounded in time): (its output, "") or ("", why there is none)."""
    profile = loaded.profiles.get(name).runnable()
    limit = min(profile.timeouts.startup, VERSION_TIMEOUT)
    with tempfile.TemporaryDirectory(prefix="acp-bridge-doctor-") as workspace:
        call = _VersionCall(
            _context(loaded),
            profile,
            "",
            {"cwd": workspace},
            timeout=limit + profile.timeouts.shutdown_grace,
            sink=EventSink(None),
            cancel=None,
            origin=_origin(loaded, name),
            limit=limit,
        )
        envelope = await call.execute()
    if call.timed_out:
        return "", f"no answer within {limit:g}s in the sandbox"
    if call.exit_code is None:
        return "", envelope.error or "it did not start"
    said = (call.output or call.errors).decode("utf-8", "replace").strip()
    if call.exit_code != 0:
        first = said.splitlines()[0] if said else ""
        return "", f"exit code {call.exit_code}" + (f": {first}" if first else "")
    return said, ""


async def probe_session(loaded: LoadedConfig, name: str) -> ProbeResult:
    """Start profile ``name``'s agent in its sandbox, through ``initialize`` and
    ``session/new``, and end it again."""
    profile = loaded.profiles.get(name).runnable()
    timeouts = profile.timeouts
    timeout = min(timeouts.startup + timeouts.session, PROBE_TIMEOUT) + timeouts.shutdown_grace
    with tempfile.TemporaryDirectory(prefix="acp-bridge-doctor-") as workspace:
        run = _SessionProbe(
            _context(loaded),
            profile,
            "",
            {"cwd": workspace},
            timeout=timeout,
            sink=EventSink(None),
            cancel=None,
            origin=_origin(loaded, name),
        )
        envelope = await run.execute()
    result = run.records()
    session = result.session
    init = session.init if session is not None else None
    error = result.error
    said = [line.strip() for line in (envelope.meta.stderr_tail or "").splitlines()]
    last = " ".join([line for line in said if line][-STDERR_LINES:])[-STDERR_CHARS:]
    stderr = f"; its stderr ends: {last}" if last else ""
    if init is None:
        why = envelope.error or (str(error) if error else "it did not answer initialize")
        return ProbeResult(False, why + stderr, late=isinstance(error, RunTimeout))
    info = init.agent_info
    agent = f"{info.name} {info.version or ''}".strip() if info is not None else "the agent"
    mode = (envelope.meta.sandbox or {}).get("mode", "?")
    logins = [m for m in init.auth_methods if m.type == "terminal"]
    offers_close = init.agent_capabilities.session_supports("close")
    started = ProbeResult(
        False,
        f"{agent} answered initialize in the sandbox ({mode})",
        started=True,
        closed_by="session/close" if offers_close else "ending the agent",
        auth_status=run.auth_status,
        login_commands=tuple(" ".join([profile.command, *m.args]) for m in logins),
        auth_vars=tuple(v.name for m in init.auth_methods if m.type == "env_var" for v in m.vars),
        env_names=frozenset(run.env),
        agent_version=info.version if info is not None else "",
    )
    if isinstance(error, AuthRequiredError):
        return replace(started, auth_refused=str(error))
    if error is not None:
        what = envelope.error or str(error)
        step = session.phase if session is not None else "session/new"
        tail = stderr if isinstance(error, AgentExitedError) else ""  # else: its answer says
        late = isinstance(error, RunTimeout)
        return replace(started, session_error=f"{step}: {what}{tail}", late=late)
    return replace(started, ok=True)
