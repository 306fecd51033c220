"""Wire types of the session methods beyond one new session's turn: list, load, resume, fork
(unstable), delete, logout, and the older ``session/set_model``.

Same rules as schema.py (whose :class:`Wire` base these share): tolerant reading, exact
writing. Each method is called only when the agent advertises it (``_acp/session/acp_session.py``
and ``_acp/session/session_methods.py`` check the capabilities first).
"""

from typing import Any

from pydantic import Field

from acp_bridge._acp.wire.schema import McpServerHttp, McpServerStdio, SessionSetup, Wire
from acp_bridge._records.field_defaults import empty_list


class SessionLifecycleParams(Wire):
    """Params of ``session/load``, ``session/resume`` and ``session/fork``: the session to
    continue and the same cwd, MCP servers and extra roots a new session would get (the
    agent reconnects them; extra roots are never restored implicitly)."""

    session_id: str
    cwd: str
    mcp_servers: list[McpServerStdio | McpServerHttp]
    additional_directories: list[str] | None = None
    system_prompt: dict[str, Any] | None = None


class ForkSessionResult(SessionSetup):
    session_id: str


class ListSessionsParams(Wire):
    cwd: str | None = None
    cursor: str | None = None


class SessionInfo(Wire):
    session_id: str
    cwd: str = ""
    title: str | None = None
    updated_at: str | None = None


class ListSessionsResult(Wire):
    sessions: list[SessionInfo] = Field(default_factory=empty_list)
    next_cursor: str | None = None


class SetModelParams(Wire):
    session_id: str
    model_id: str


class EmptyParams(Wire):
    """Params of ``logout``: nothing (an object all the same)."""
