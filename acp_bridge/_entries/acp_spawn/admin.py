"""Asking an agent about its sessions and its login, outside any run: ``session/list``,
``session/delete`` and ``logout`` (``acp-bridge sessions`` / ``logout``).

Each starts the agent like a run does (same profile, constructed environment, process group,
one subtask level), initializes, calls the one method when the agent advertises it, and
shuts the agent down the same sure way. Nothing is served to the agent (no capabilities, no
routes): these are not turns. Errors are raised (:class:`~acp_bridge.errors.NotOffered`
when the agent does not offer the method); there is no envelope, as no task ran.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import anyio

from acp_bridge._acp.agent_executable import session_cwd
from acp_bridge._acp.agent_process import AgentProcess
from acp_bridge._acp.rpc.connection import JsonRpcConnection
from acp_bridge._acp.rpc.router import Router
from acp_bridge._acp.session.acp_session import AcpSession
from acp_bridge._acp.session.session_methods import delete_session, list_sessions, logout
from acp_bridge._acp.turn.prompt_turn import TurnSignals
from acp_bridge._acp.turn.turn_collector import TurnCollector
from acp_bridge._acp.wire.initialize_schema import ClientCapabilities
from acp_bridge._acp.wire.session_schema import SessionInfo
from acp_bridge._entries.acp_spawn.session_phases import CLIENT_INFO
from acp_bridge._entries.depth import inherited_max_depth, subtask_level
from acp_bridge._os.process.environment import constructed_env
from acp_bridge.config import LoadedConfig, load_config
from acp_bridge.errors import BridgeError, RunTimeout
from acp_bridge.events import EventSink

T = TypeVar("T")


async def _with_agent(
    agent: str,
    config: LoadedConfig | None,
    cwd: str | Path | None,
    body: Callable[[AcpSession], Awaitable[T]],
) -> T:
    loaded = config if config is not None else load_config()
    profile = loaded.profiles.get(agent).profile
    where = session_cwd(cwd, profile)
    timeouts = profile.timeouts
    sink = EventSink(None)
    error: BridgeError | None = None
    outcome: list[T] = []  # empty until the body returned
    with subtask_level(loaded.config.subtasks.max_depth) as depth:
        env = constructed_env(
            depth=depth,
            max_depth=inherited_max_depth(),
            extra=profile.env,
            passthrough=profile.env_passthrough,
        )
        process = AgentProcess(
            [profile.command, *profile.args],
            env=env,
            cwd=where,
            grace=timeouts.shutdown_grace,
            install_hint=profile.install,
        )
        collector = TurnCollector(sink)
        async with (
            process,
            JsonRpcConnection(
                process.stdout, process.stdin, on_update=collector, router=Router()
            ) as conn,
        ):
            session = AcpSession(
                conn,
                profile=profile,
                cwd=str(where),
                agent_env=env,
                capabilities=ClientCapabilities(),
                client_info=CLIENT_INFO,
                collector=collector,
                signals=TurnSignals(),
                sink=sink,
            )
            try:
                outcome.append(await _initialized(session, body))
            except BridgeError as exc:  # raised below, outside the task groups (not grouped)
                error = exc
            finally:
                with anyio.CancelScope(shield=True):
                    await process.shutdown()
                    with anyio.move_on_after(timeouts.shutdown_grace):
                        await conn.wait_closed()
    if error is not None:
        raise error
    return outcome[0]


async def _initialized(session: AcpSession, body: Callable[[AcpSession], Awaitable[T]]) -> T:
    timeouts = session.profile.timeouts
    try:
        with anyio.fail_after(timeouts.startup):
            await session.initialize()
    except TimeoutError as exc:
        raise RunTimeout(
            f"the agent did not answer initialize within {timeouts.startup:g}s"
        ) from exc
    try:
        with anyio.fail_after(timeouts.session):
            return await body(session)
    except TimeoutError as exc:
        raise RunTimeout(
            f"the agent did not answer {session.phase} within {timeouts.session:g}s "
            "(timeouts.session)"
        ) from exc


async def agent_sessions(
    agent: str,
    *,
    config: LoadedConfig | None = None,
    cwd: str | Path | None = None,
    all_dirs: bool = False,
) -> list[SessionInfo]:
    """The sessions agent ``agent`` knows of for ``cwd`` (default: the profile's, else the
    current directory), or in every directory with ``all_dirs``."""

    async def body(session: AcpSession) -> list[SessionInfo]:
        return await list_sessions(session, cwd=None if all_dirs else session.cwd)

    return await _with_agent(agent, config, cwd, body)


async def delete_agent_session(
    agent: str, session_id: str, *, config: LoadedConfig | None = None
) -> None:
    """Remove ``session_id`` from the agent's session list (``session/delete``)."""

    async def body(session: AcpSession) -> None:
        await delete_session(session, session_id)

    await _with_agent(agent, config, None, body)


async def agent_logout(agent: str, *, config: LoadedConfig | None = None) -> None:
    """Log the agent out (``logout``): its next sessions need authentication again."""
    await _with_agent(agent, config, None, logout)
