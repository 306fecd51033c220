"""The bridge's MCP tools: every call is answered and recorded in ``meta.permissions``,
however it fails — an unknown tool, arguments that do not fit, a boolean as a number
(issue 37, classes 5 and 9)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from acp_bridge._acp.services.client import ClientServices
from acp_bridge._acp.services.mcp_tools import ServicesMcp
from acp_bridge._acp.turn.prompt_turn import TurnSignals
from acp_bridge._os.fs.roots import Roots
from acp_bridge.config import AgentProfile
from acp_bridge.events import EventSink

_RAW = ("[Errno", "Traceback", "ValidationError", "pydantic", "Error(")

CALLS = [
    ("no_such_tool", {"path": "/x"}),
    ("read_text_file", {}),
    ("read_text_file", {"path": 3}),
    ("read_text_file", {"path": "a relative path"}),
    ("read_text_file", {"path": "/x", "line": True}),
    ("read_text_file", {"path": "/x", "limit": -1}),
    ("write_text_file", {"path": "/x"}),
    ("write_text_file", {"path": "/x", "content": ["not", "text"]}),
    ("run_command", {}),
    ("run_command", {"command": "true", "timeout": True}),
    ("run_command", {"command": "true", "timeout": 0}),
    ("run_command", {"command": "true", "timeout": "5"}),
    ("run_command", {"command": "true", "args": "not a list"}),
    ("run_command", {"command": "true", "cwd": "relative"}),
    ("run_command", {"command": "/no/such/program"}),
]


@pytest.mark.parametrize(("tool", "args"), CALLS, ids=[f"{t}-{a}" for t, a in CALLS])
def test_a_call_that_cannot_be_served_is_an_error_in_words_and_a_record(
    tmp_path: Path, tool: str, args: dict[str, Any]
) -> None:
    async def main() -> tuple[Any, ClientServices]:
        profile = AgentProfile(
            name="t",
            command="x",
            permissions={"mode": "approve-all"},
        )
        async with anyio.create_task_group() as tg:
            services = ClientServices(
                profile,
                roots=Roots.for_session(tmp_path),
                cwd=tmp_path,
                env={},
                tg=tg,
                sink=EventSink(None),
                signals=TurnSignals(),
            )
            with anyio.fail_after(20):
                async with Client(ServicesMcp(services, "s").app()) as client:
                    try:
                        result = await client.call_tool(tool, args)
                    except Exception as exc:  # an MCP error answer (an unknown tool)
                        result = exc
            await services.aclose()
        return result, services

    result, services = anyio.run(main)
    if isinstance(result, Exception):
        told = str(result)
    else:
        assert result.is_error, result
        told = " ".join(getattr(part, "text", "") for part in result.content)
    assert told and not any(raw in told for raw in _RAW), told
    (decision,) = services.ledger.records
    assert decision.tool_call_id == "mcp-1"
    judged = ("/no/such/program", "relative", "a relative path")
    if any(value in judged for value in args.values()):
        assert decision.decision == "allowed"  # judged, then the services refused or failed
    else:
        assert decision.decision == "rejected" and decision.reason
    (refusal,) = services.refusals
    assert refusal.method == f"mcp {tool}"
