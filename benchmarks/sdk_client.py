"""The official Python ACP SDK as the benchmarks' reference client: one turn on an agent.

    python benchmarks/sdk_client.py [AGENT ARG…]

As a program it is the SDK's cold one-shot, the peer of a cold ``acp-bridge run demo …``
(``cold_start.py``): start the agent (default: the bundled demo agent), ``initialize``,
``session/new``, one prompt (``Reply with exactly OK``), close, print the answer. Nothing
more: no sandbox, no transcript, no record — the least a client does for one turn.
``fanout.py`` drives many of :func:`one_turn` at once.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

TASK = "Reply with exactly OK"
DEMO_AGENT = (sys.executable, "-m", "acp_bridge._demo.agent")


async def one_turn(
    argv: Sequence[str], *, cwd: str, env: Mapping[str, str] | None = None, task: str = TASK
) -> tuple[str, str]:
    """The agent's answer to ``task`` and the turn's stop reason."""
    import acp
    from acp.schema import AgentMessageChunk, ClientCapabilities, Implementation, TextContentBlock

    class Client:
        def __init__(self) -> None:
            self.text: list[str] = []

        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            if isinstance(update, AgentMessageChunk) and isinstance(
                update.content, TextContentBlock
            ):
                self.text.append(update.content.text)

        async def request_permission(self, **kwargs: Any) -> Any:
            raise acp.RequestError.method_not_found("session/request_permission")

        async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
            raise acp.RequestError.method_not_found(method)

        async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
            return None

    client = Client()
    environment = dict(env) if env is not None else None
    async with acp.spawn_agent_process(client, argv[0], *argv[1:], cwd=cwd, env=environment) as (
        conn,
        _process,
    ):
        await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="bench-sdk", version="1"),
        )
        session = await conn.new_session(cwd=cwd, mcp_servers=[])
        reply = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block(task)])
    return "".join(client.text).strip(), reply.stop_reason


def main() -> int:
    argv = sys.argv[1:] or list(DEMO_AGENT)
    answer, stop_reason = asyncio.run(one_turn(argv, cwd=str(Path.cwd())))
    print(answer)
    return 0 if stop_reason == "end_turn" else 1


if __name__ == "__main__":
    raise SystemExit(main())
