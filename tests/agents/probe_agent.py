"""A test agent on the official ACP SDK's agent side (``agent-client-protocol``, import acp)
that probes the client's services and reports what happened.

The prompt is a JSON list of steps; the agent runs them in order through the client and
answers with one JSON list of results, ``{"ok": true, "result": …}`` or
``{"ok": false, "code": …, "message": …}`` per step. Steps:

    {"op": "read", "path": P, "line": N?, "limit": N?}
    {"op": "write", "path": P, "content": S}
    {"op": "permission", "kind": K, "title": T, "locations": [P…]?, "rawInput": {…}?}
    {"op": "terminal", "command": C, "args": […]?, "cwd": P?, "env": {…}?,
     "outputByteLimit": N?, "release": true?}     create → wait → output (→ release)
    {"op": "spawn", "command": C, …}               create only: left for the client to end
    {"op": "capabilities"}                        what the client advertised

It is our code on their SDK, so the bridge is checked against an independent peer. Run as
``python tests/agents/probe_agent.py``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import acp
from acp import (
    PROTOCOL_VERSION,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    run_agent,
    text_block,
)
from acp.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    ClientCapabilities,
    EnvVariable,
    Implementation,
    PermissionOption,
    TextContentBlock,
    ToolCallUpdate,
)


class ProbeAgent:
    def __init__(self) -> None:
        self._conn: acp.Client | None = None
        self._caps: ClientCapabilities | None = None
        self._counter = 0

    def on_connect(self, conn: acp.Client) -> None:
        self._conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self._caps = client_capabilities
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(),
            auth_methods=[],
            agent_info=Implementation(name="probe-agent", version="1"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id="probe-session")

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(b.text for b in prompt if isinstance(b, TextContentBlock))
        results = [await self._step(session_id, step) for step in json.loads(text)]
        assert self._conn is not None
        await self._conn.session_update(
            session_id=session_id,
            update=AgentMessageChunk(
                session_update="agent_message_chunk", content=text_block(json.dumps(results))
            ),
        )
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None

    async def _step(self, session_id: str, step: dict[str, Any]) -> dict[str, Any]:
        try:
            return {"ok": True, "result": await self._run(session_id, step)}
        except RequestError as exc:
            return {"ok": False, "code": exc.code, "message": str(exc), "data": exc.data}

    async def _run(self, session_id: str, step: dict[str, Any]) -> Any:
        conn = self._conn
        assert conn is not None
        op = step["op"]
        if op == "capabilities":
            return self._caps.model_dump(by_alias=True, exclude_none=True) if self._caps else None
        if op == "read":
            reply = await conn.read_text_file(
                session_id=session_id,
                path=step["path"],
                line=step.get("line"),
                limit=step.get("limit"),
            )
            return reply.content
        if op == "write":
            await conn.write_text_file(
                session_id=session_id, path=step["path"], content=step["content"]
            )
            return None
        if op == "permission":
            self._counter += 1
            reply = await conn.request_permission(
                session_id=session_id,
                tool_call=ToolCallUpdate(
                    tool_call_id=f"call_{self._counter}",
                    title=step["title"],
                    kind=step["kind"],
                    locations=[{"path": p} for p in step.get("locations", [])],
                    raw_input=step.get("rawInput"),
                ),
                options=[
                    PermissionOption(option_id="always", name="Always", kind="allow_always"),
                    PermissionOption(option_id="once", name="Once", kind="allow_once"),
                    PermissionOption(option_id="no", name="No", kind="reject_once"),
                ],
            )
            return reply.outcome.model_dump(by_alias=True)
        created = await conn.create_terminal(
            session_id=session_id,
            command=step["command"],
            args=step.get("args"),
            cwd=step.get("cwd"),
            env=[EnvVariable(name=k, value=v) for k, v in step.get("env", {}).items()],
            output_byte_limit=step.get("outputByteLimit"),
        )
        ref = {"session_id": session_id, "terminal_id": created.terminal_id}
        if op == "spawn":
            return created.terminal_id
        status = await conn.wait_for_terminal_exit(**ref)
        output = await conn.terminal_output(**ref)
        if step.get("release", True):
            await conn.release_terminal(**ref)
        return {
            "exitCode": status.exit_code,
            "signal": status.signal,
            "output": output.output,
            "truncated": output.truncated,
        }


if __name__ == "__main__":
    asyncio.run(run_agent(ProbeAgent()))
