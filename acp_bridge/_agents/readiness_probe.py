"""``doctor``'s proof that an agent is ready: start it as a run would — in its sandbox, with
its environment and its managed install — and complete ``initialize``, bounded in time.

A command found on ``PATH`` proves little: an agent installed under ``/tmp`` or a hidden
directory may not even load its own modules inside the sandbox. The probe is a real run of
the profile that stops after ``initialize`` (no session, no prompt: no model key needed),
in a fresh temporary workspace, and ends in the run's usual wind-down.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass

from acp_bridge._acp.session.acp_session import AcpSession
from acp_bridge._entries.acp_spawn.run import AcpRun
from acp_bridge._entries.acp_spawn.session_phases import SessionPhases
from acp_bridge._entries.enveloped import RunContext
from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import new_task_id
from acp_bridge.events import EventSink

PROBE_TIMEOUT = 60.0
"""The most a probe may take, whatever the profile's ``timeouts.startup`` says."""


STDERR_LINES, STDERR_CHARS = 8, 600  # of the agent's stderr, in a failed probe's detail


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    detail: str  # the agent's name and version, or why it did not get through initialize


class _InitializeOnly(SessionPhases):
    """A started agent whose only phase is ``initialize``."""

    async def _phases(self, session: AcpSession) -> None:
        startup = self.profile.timeouts.startup
        late = f"the agent did not answer initialize within {startup:g}s (timeouts.startup)"
        await self.run.clock.phase(session.conn, session.initialize, startup, late)


class _InitializeOnlyRun(AcpRun):
    """A run of the profile that takes its agent through ``initialize`` only."""

    def session_phases(self) -> type[SessionPhases]:
        return _InitializeOnly


async def probe_initialize(loaded: LoadedConfig, name: str) -> ProbeResult:
    """Start profile ``name``'s agent in its sandbox and complete ``initialize``."""
    resolved = loaded.profiles.get(name)
    profile = resolved.runnable()
    origin = resolved.set_at(("command",))
    timeout = min(profile.timeouts.startup + profile.timeouts.shutdown_grace, PROBE_TIMEOUT)
    with tempfile.TemporaryDirectory(prefix="acp-bridge-doctor-") as workspace:
        ctx = RunContext(new_task_id(), 1, None, time.monotonic(), loaded)
        run = _InitializeOnlyRun(
            ctx,
            profile,
            "",
            {"cwd": workspace},
            timeout=timeout,
            sink=EventSink(None),
            cancel=None,
            origin=f"set at {origin}" if origin else "",
        )
        envelope = await run.execute()
    result = run.records()
    session = result.session
    if session is None or session.init is None or result.error is not None:
        said = [line.strip() for line in (envelope.meta.stderr_tail or "").splitlines()]
        last = " ".join([line for line in said if line][-STDERR_LINES:])[-STDERR_CHARS:]
        return ProbeResult(False, envelope.error + (f"; its stderr ends: {last}" if last else ""))
    info = session.init.agent_info
    agent = f"{info.name} {info.version or ''}".strip() if info is not None else "the agent"
    mode = (envelope.meta.sandbox or {}).get("mode", "?")
    return ProbeResult(True, f"{agent} answered initialize in the sandbox ({mode})")
