"""What a session is set up with beside its cwd: the MCP servers handed to the agent and the
client's system prompt (both sent in session/new, resume, load and fork)."""

from __future__ import annotations

from typing import Any

from acp_bridge._acp.wire.initialize_schema import InitializeResult
from acp_bridge._acp.wire.schema import McpServerHttp, McpServerStdio, NameValue
from acp_bridge.config import AgentProfile
from acp_bridge.errors import NotOffered


def profile_mcp_servers(profile: AgentProfile, *, v2: bool) -> list[McpServerStdio | McpServerHttp]:
    """The profile's ``mcp_servers`` on the wire (v2 names the transport of stdio ones too)."""
    servers: list[McpServerStdio | McpServerHttp] = []
    stdio_type = "stdio" if v2 else None
    for server in profile.mcp_servers:
        if server.type == "stdio":
            assert server.command is not None
            servers.append(
                McpServerStdio(
                    type=stdio_type,
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


def system_prompt_param(text: str | None, agent: InitializeResult) -> dict[str, Any] | None:
    """The ``systemPrompt`` to send (append mode), or an error where it is not offered: a
    system prompt silently dropped would be a different run than the one asked for."""
    if text is None:
        return None
    if not agent.agent_capabilities.session_supports("systemPrompt"):
        raise NotOffered(
            "system prompt: the agent does not advertise sessionCapabilities.systemPrompt, "
            "so it cannot take one"
        )
    return {"mode": "append", "content": [{"type": "text", "text": text}]}
