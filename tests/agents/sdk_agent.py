"""An ACP agent written with the official SDK's agent side (agent-client-protocol).

Nobody on this team wrote the SDK, so this agent checks the bridge against someone else's
reading of the protocol. Prompt lines: ``read PATH``, ``write PATH: TEXT``, ``run COMMAND``,
``sleep SECONDS``; anything else is echoed. Paths are relative to the session cwd. Every
message chunk carries a messageId; the final answer is its own message.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import acp
from acp import (
    PROTOCOL_VERSION,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    run_agent,
    start_tool_call,
    text_block,
    update_tool_call,
)
from acp.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    ClientCapabilities,
    Implementation,
    PermissionOption,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionMode,
    SessionModeState,
    TextContentBlock,
    ToolCallUpdate,
    Usage,
)

OPTIONS = [
    PermissionOption(option_id="allow-1", name="Allow", kind="allow_once"),
    PermissionOption(option_id="allow-all", name="Always", kind="allow_always"),
    PermissionOption(option_id="deny-1", name="Deny", kind="reject_once"),
]


class SdkAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.caps: ClientCapabilities | None = None
        self.cwd: dict[str, str] = {}
        self.cancelled: set[str] = set()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self.caps = client_capabilities
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                session_capabilities=SessionCapabilities(close=SessionCloseCapabilities())
            ),
            auth_methods=[],
            agent_info=Implementation(name="sdk-test-agent", version="1.0"),
        )

    async def new_session(
        self, cwd: str, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        session_id = f"sdk_{len(self.cwd) + 1}"
        self.cwd[session_id] = cwd
        return NewSessionResponse(
            session_id=session_id,
            modes=SessionModeState(
                current_mode_id="default",
                available_modes=[
                    SessionMode(id="default", name="Default"),
                    SessionMode(id="plan", name="Plan"),
                ],
            ),
        )

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> None:
        return None

    async def close_session(self, session_id: str, **kwargs: Any) -> None:
        return None

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.add(session_id)

    async def say(self, session_id: str, text: str, message_id: str) -> None:
        await self.conn.session_update(
            session_id=session_id,
            update=AgentMessageChunk(
                session_update="agent_message_chunk",
                content=text_block(text),
                message_id=message_id,
            ),
        )

    async def allowed(
        self, session_id: str, call_id: str, title: str, kind: str, path: str | None
    ) -> bool:
        locations = [{"path": path}] if path else None
        reply = await self.conn.request_permission(
            session_id=session_id,
            options=OPTIONS,
            tool_call=ToolCallUpdate(
                tool_call_id=call_id, title=title, kind=kind, locations=locations
            ),
        )
        outcome = reply.outcome
        return outcome.outcome == "selected" and outcome.option_id.startswith("allow")

    async def step(self, session_id: str, number: int, line: str) -> str:
        verb, _, rest = line.partition(" ")
        call_id = f"c{number}"
        cwd = self.cwd[session_id]
        if verb == "sleep":
            for _ in range(int(float(rest) * 20)):
                if session_id in self.cancelled:
                    return "interrupted"
                await asyncio.sleep(0.05)
            return "slept"
        path = os.path.join(cwd, rest.split(":", 1)[0].strip()) if verb != "run" else None
        kind = {"read": "read", "write": "edit", "run": "execute"}[verb]
        await self.conn.session_update(
            session_id=session_id,
            update=start_tool_call(call_id, line, kind=kind, status="pending"),
        )
        if verb != "read" and not await self.allowed(session_id, call_id, line, kind, path):
            await self.conn.session_update(
                session_id=session_id, update=update_tool_call(call_id, status="failed")
            )
            return f"{verb}: not allowed"
        try:
            if verb == "read":
                return str(
                    (await self.conn.read_text_file(session_id=session_id, path=path)).content
                )
            if verb == "write":
                await self.conn.write_text_file(
                    session_id=session_id, path=path, content=rest.split(":", 1)[1].strip()
                )
                return f"wrote {path}"
            terminal = await self.conn.create_terminal(session_id=session_id, command=rest, cwd=cwd)
            await self.conn.wait_for_terminal_exit(
                session_id=session_id, terminal_id=terminal.terminal_id
            )
            output = await self.conn.terminal_output(
                session_id=session_id, terminal_id=terminal.terminal_id
            )
            await self.conn.release_terminal(
                session_id=session_id, terminal_id=terminal.terminal_id
            )
            return str(output.output).strip()
        except acp.RequestError as exc:
            return f"{verb} error {exc.code}: {exc}"
        finally:
            await self.conn.session_update(
                session_id=session_id, update=update_tool_call(call_id, status="completed")
            )

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        self.cancelled.discard(session_id)
        text = "".join(b.text for b in prompt if isinstance(b, TextContentBlock))
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        steps = [line for line in lines if line.split(" ")[0] in ("read", "write", "run", "sleep")]
        if steps:
            await self.say(session_id, f"{len(steps)} step(s) to do", "m_plan")
        results = []
        for number, line in enumerate(steps, 1):
            results.append(await self.step(session_id, number, line))
            if session_id in self.cancelled:
                return PromptResponse(stop_reason="cancelled")
        await self.say(session_id, " | ".join(results) if results else f"echo: {text}", "m_final")
        words = len(text.split())
        return PromptResponse(
            stop_reason="end_turn",
            usage=Usage(input_tokens=words, output_tokens=words, total_tokens=2 * words),
        )


if __name__ == "__main__":
    asyncio.run(run_agent(SdkAgent(), use_unstable_protocol=True))
