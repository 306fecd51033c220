"""The bridge's files and terminals offered to the agent as MCP tools
(docs/explanation/acp.md, two wire versions, one turn model).

ACP v2 has no ``fs/*`` or ``terminal/*``: what a client offers the agent, it offers as an
MCP server in the session's ``mcpServers``. This is that server, for v2 and, with the
profile's ``services: mcp | both``, for v1 agents too. It is the same confined
:class:`ClientServices` behind the ACP methods — same roots, policy, rules, ledger, limits
and process groups — served by the bridge process, never inside the agent's sandbox, so the
decisions and the ledger stay with the bridge. The agent does not ask before a tool call, so
each call is judged and recorded in ``meta.permissions`` by the services themselves
(:meth:`ClientServices.serve_tool`); ``run_command`` is an ``execute`` like
``terminal/create``, needing an allowing rule under ``workspace-write``.

Tools: ``read_text_file(path, line?, limit?)``, ``write_text_file(path, content)`` (when the
profile serves reads / writes) and ``run_command(command, args?, cwd?, timeout?)`` (when it
serves terminals): the exit code, the signal, and the last ``terminal.output_byte_limit``
bytes of output.

How the agent reaches it — HTTP on loopback, or a stdio relay over a unix socket in the
run's private ``/tmp`` — and when nothing can: mcp_transport.py.

The official ``mcp`` SDK and uvicorn are imported only when the server starts (they cost
over a second): a run that does not use it never loads them.
"""

from __future__ import annotations

from typing import Any

import anyio

from acp_bridge._acp.rpc.router import RequestError
from acp_bridge._acp.services.client import (
    ClientServices,
    describe_read,
    describe_write,
)
from acp_bridge._acp.wire.schema import (
    CreateTerminalParams,
    ReadTextFileParams,
    TerminalIdParams,
    WriteTextFileParams,
)
from acp_bridge.errors import BridgeError

SERVER_NAME = "acp-bridge"

_READ = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "absolute path of the file"},
        "line": {"type": "integer", "minimum": 1, "description": "first line (1-based)"},
        "limit": {"type": "integer", "minimum": 0, "description": "lines to read"},
    },
    "required": ["path"],
}
_WRITE = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "absolute path of the file"},
        "content": {"type": "string", "description": "the whole new content"},
    },
    "required": ["path", "content"],
}
_RUN = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "a program, or a shell line"},
        "args": {"type": "array", "items": {"type": "string"}},
        "cwd": {"type": "string", "description": "absolute; default: the session cwd"},
        "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "seconds"},
    },
    "required": ["command"],
}
_RUN_OUTPUT = {
    "type": "object",
    "properties": {
        "exit_code": {"type": ["integer", "null"]},
        "signal": {"type": ["string", "null"]},
        "output": {"type": "string"},
        "truncated": {"type": "boolean"},
        "timed_out": {"type": "boolean"},
    },
    "required": ["exit_code", "output", "truncated", "timed_out"],
}


class ServicesMcp:
    """One run's services as MCP tools: what is listed, and each call judged and served."""

    def __init__(self, services: ClientServices, session_id: str = "") -> None:
        self.services = services
        self.session_id = session_id

    # --- what it offers ------------------------------------------------------------------

    def tools(self) -> list[tuple[str, str, dict[str, Any], dict[str, Any] | None]]:
        profile = self.services.profile
        listed: list[tuple[str, str, dict[str, Any], dict[str, Any] | None]] = []
        if profile.fs.read:
            listed.append(("read_text_file", "Read a text file (a window of lines).", _READ, None))
        if profile.fs.write:
            listed.append(("write_text_file", "Write a whole text file.", _WRITE, None))
        if profile.terminal.enabled:
            what = "Run a command; its exit code and the end of its output."
            listed.append(("run_command", what, _RUN, _RUN_OUTPUT))
        return listed

    def app(self) -> Any:
        """The low-level MCP server of these tools (the SDK is imported here)."""
        import mcp.types as types
        from mcp.server import Server
        from mcp.shared.exceptions import MCPError

        async def list_tools(ctx: Any, params: Any) -> Any:
            return types.ListToolsResult(
                tools=[
                    types.Tool(
                        name=name, description=text, input_schema=schema, output_schema=output
                    )
                    for name, text, schema, output in self.tools()
                ]
            )

        async def call_tool(ctx: Any, params: Any) -> Any:
            offered = {name for name, *_ in self.tools()}
            if params.name not in offered:
                raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name!r}")
            try:
                reply = await self.call(params.name, dict(params.arguments or {}))
            except (RequestError, BridgeError, ValueError) as exc:
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text=str(exc))], is_error=True
                )
            text = reply.get("content", reply.get("output", ""))
            structured = reply if params.name == "run_command" else None
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=str(text))],
                structured_content=structured,
                is_error=params.name == "run_command" and reply.get("exit_code") != 0,
            )

        return Server(SERVER_NAME, on_list_tools=list_tools, on_call_tool=call_tool)

    # --- the tools -------------------------------------------------------------------------

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """One tool call, judged and served by the run's services."""
        services, sid = self.services, self.session_id
        if tool == "read_text_file":
            read = ReadTextFileParams.model_validate({**args, "sessionId": sid})
            files = services.files.read_text_file
            return await services.serve_tool(tool, "read", read, describe_read, files)
        if tool == "write_text_file":
            write = WriteTextFileParams.model_validate({**args, "sessionId": sid})
            reply = await services.serve_tool(
                tool, "edit", write, describe_write, services.files.write_text_file
            )
            return {**reply, "content": f"wrote {write.path}"}
        timeout = args.pop("timeout", None)
        run = CreateTerminalParams.model_validate({**args, "sessionId": sid})
        return await services.serve_tool(
            tool, "execute", run, services.describe_command, lambda r: self._run(r, timeout)
        )

    async def _run(self, request: CreateTerminalParams, timeout: Any) -> dict[str, Any]:
        terminals = self.services.terminals
        created = await terminals.create(request)
        handle = TerminalIdParams(session_id=self.session_id, terminal_id=created["terminalId"])
        limit = terminals.settings.timeout
        seconds = min(float(timeout), limit) if isinstance(timeout, int | float) else limit
        timed_out = False
        try:
            with anyio.move_on_after(seconds) as scope:
                status = await terminals.wait_for_exit(handle)
            if scope.cancelled_caught:
                timed_out = True
                await terminals.kill(handle)
                status = await terminals.wait_for_exit(handle)
            output = await terminals.output(handle)
        finally:
            await terminals.release(handle)
        return {
            "exit_code": status.get("exitCode"),
            "signal": status.get("signal"),
            "output": output.get("output", ""),
            "truncated": bool(output.get("truncated")),
            "timed_out": timed_out,
        }
