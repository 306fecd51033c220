"""Agent methods that are not part of a run's turn: ``session/list``, ``session/delete`` and
``logout`` (v2: ``auth/logout``), each on an initialized :class:`AcpSession` and only when
the agent advertises it (``sessionCapabilities.list`` / ``.delete``,
``agentCapabilities.auth.logout``; v2: a non-empty ``authMethods``).

``session/list`` is paged with an opaque cursor: we follow ``nextCursor`` until it is absent,
up to ``max_pages`` (an agent that hands out cursors forever must not keep us forever).
"""

from __future__ import annotations

from acp_bridge._acp.session.acp_session import AcpSession
from acp_bridge._acp.wire.schema import SessionIdParams, parse_reply
from acp_bridge._acp.wire.session_schema import (
    EmptyParams,
    ListSessionsParams,
    ListSessionsResult,
    SessionInfo,
)
from acp_bridge.errors import NotOffered

MAX_PAGES = 100


async def list_sessions(
    session: AcpSession, *, cwd: str | None, max_pages: int = MAX_PAGES
) -> list[SessionInfo]:
    """Every session the agent knows (only those of ``cwd``, when given), newest first as the
    agent orders them."""
    if not session.agent.agent_capabilities.session_supports("list"):
        raise NotOffered("the agent does not offer session/list")
    await session.configured_auth()
    session.phase = "session/list"
    found: list[SessionInfo] = []
    cursor: str | None = None
    for _ in range(max_pages):
        params = ListSessionsParams(cwd=cwd, cursor=cursor)
        page = parse_reply(
            ListSessionsResult,
            await session.call_authenticated("session/list", params),
            "session/list",
        )
        found += page.sessions
        cursor = page.next_cursor
        if not cursor:
            break
    return found


async def delete_session(session: AcpSession, session_id: str) -> None:
    """Remove ``session_id`` from the agent's session list (deleting an unknown one is not an
    error, says the spec)."""
    if not session.agent.agent_capabilities.session_supports("delete"):
        raise NotOffered("the agent does not offer session/delete")
    await session.configured_auth()
    session.phase = "session/delete"
    await session.call_authenticated("session/delete", SessionIdParams(session_id=session_id))


async def logout(session: AcpSession) -> None:
    """End the agent's authenticated state: new sessions will need authentication again."""
    if not session.agent.agent_capabilities.logout:
        raise NotOffered("the agent does not offer logout")
    session.phase = "logout"
    await session.call("auth/logout" if session.v2 else "logout", EmptyParams())
