"""The ``compare`` tool: best of N for a host agent in one call
(docs/explanation/batches.md, best of N).

The host names the agents, the task and compare's options (:class:`~.arguments.CompareArgs`,
derived from compare's options model); the call runs the whole comparison in this server's
process and returns it as structured content (the JSON document of ``acp-bridge compare
--json``), with the table as text for hosts that read only text. Each attempt, as it is
settled, is a progress line. A refusal before anything ran (not a git repository, a dirty
working tree with ``apply``) is an ``invalid params`` error naming the field.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import anyio
import mcp.types as types

from acp_bridge._compare.compare_result import AttemptResult, CompareResult
from acp_bridge._compare.comparison import compare
from acp_bridge._compare.table import status_of, table, verifier_of, wall_of
from acp_bridge._mcp.arguments import CompareArgsBase
from acp_bridge._mcp.host import Host
from acp_bridge.config import LoadedConfig
from acp_bridge.errors import BridgeError


@cache
def compare_schema() -> dict[str, Any]:
    """The JSON Schema of the tool's structured result."""
    return CompareResult.model_json_schema(mode="serialization")


async def call_compare(
    args: CompareArgsBase, config: LoadedConfig, host: Host
) -> types.CallToolResult:
    """Run the comparison ``args`` asks for; its result."""
    sent = 0
    refused: BridgeError | None = None
    async with anyio.create_task_group() as tg:  # the progress lines are sent beside it

        def settled(attempt: AttemptResult) -> None:
            nonlocal sent
            sent += 1
            line = f"{attempt.key}: {status_of(attempt)} in {wall_of(attempt)}, verifier "
            tg.start_soon(host.progress, sent, line + verifier_of(attempt))

        agents: list[str] = getattr(args, "agents")  # noqa: B009 - a field of the derived model
        task: str = getattr(args, "task")  # noqa: B009
        try:
            result = await compare(
                agents, task, config=config, on_attempt=settled, **args.options()
            )
        except BridgeError as exc:  # refused before anything ran: raised as itself
            refused = exc
    if refused is not None:
        raise refused
    text = "\n".join([*table(result), "", result.to_json()])
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=result.to_dict(),
    )
