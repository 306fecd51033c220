"""The tool allowlist, and the limits every entry shares: a server started inside a subtask
(``ACP_BRIDGE_DEPTH=1``, as an agent's MCP server would be) refuses to go a level deeper."""

from __future__ import annotations

from collections.abc import AsyncIterator

import mcp.types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from acp_bridge.envelope import SubtaskResult
from tests.mcp.conftest import Bridge, bounded, server_pids

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def client(bridge: Bridge) -> AsyncIterator[Client]:
    server = bridge.stdio("--tools", "bash,list", ACP_BRIDGE_DEPTH="1")
    async with bridge.client(server, "legacy", elicit=False) as client:
        yield client


async def test_only_the_allowed_tools_are_offered(client: Client) -> None:
    assert [tool.name for tool in (await client.list_tools()).tools] == ["bash", "list"]
    with pytest.raises(MCPError) as caught:
        await client.call_tool("acp_spawn", {"agent": "demo", "task": "hi"})
    assert caught.value.code == types.INVALID_PARAMS
    assert "unknown tool 'acp_spawn'; offered: bash, list" in caught.value.message


async def test_a_server_inside_a_subtask_goes_no_deeper(bridge: Bridge, client: Client) -> None:
    async with bounded():
        result = await client.call_tool("bash", {"command": "echo too-deep"})
    envelope = SubtaskResult.model_validate(result.structured_content)
    assert envelope.status == "failed" and result.is_error
    assert envelope.meta.error_code == "depth_limit"
    assert "subtask depth limit reached" in envelope.error
    assert not bridge.leftovers(server_pids(bridge.marker))
