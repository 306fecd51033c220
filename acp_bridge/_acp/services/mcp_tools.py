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
``terminal/create``, needing an allowing rule under ``workspace-write``. Every call is
answered and recorded, however it fails: arguments that do not fit and unknown tools are
refused and recorded too; a failure while serving (an OS error on the path, a command that
cannot start) is an error result in plain words (``_acp/rpc/router.py`` words it), never a
traceback or a Python repr.

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

import math
from typing import Any

import anyio
from pydantic import ValidationError

from acp_bridge._acp.rpc.router import RequestError, rpc_error
from acp_bridge._acp.services.client import (
    ClientServices,
    describe_read,
    describe_write,
)
from acp_bridge._acp.wire.schema import (
    INVALID_PARAMS,
    CreateTerminalParams,
    ReadTextFileParams,
    TerminalIdParams,
    WriteTextFileParams,
)

SERVER_NAME = "acp-bridge"
_KINDS = {"read_text_file": "read", "write_text_file": "edit", "run_command": "execute"}

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
                name = str(params.name)
                why = f"unknown tool {name[:256]!r}: not offered"
                self.services.tool_call_refused(name, "other", name, why)
                raise MCPError(types.INVALID_PARAMS, why)
            try:
                reply = await self.call(params.name, dict(params.arguments or {}))
            except Exception as exc:  # every failure is an answer, in words (recorded already)
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text=error_text(exc))],
                    is_error=True,
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
        """One tool call, judged and served by the run's services (recorded in
        ``meta.permissions`` whatever becomes of it)."""
        timeout = args.get("timeout")
        why = None
        if timeout is not None and not (
            type(timeout) in (int, float) and 0 < timeout < math.inf
        ):  # a boolean is not a number of seconds, nor is NaN
            why = f"invalid arguments: timeout: a number of seconds above 0, got {timeout!r:.40}"
        else:
            try:  # only the arguments' check here: a failure while serving is recorded there
                parsed = self._parsed(tool, args)
            except ValidationError as exc:  # arguments that do not fit: refused, recorded
                why = f"invalid arguments: {error_text(exc)}"
            else:
                return await self.services.serve_tool(tool, *parsed)
        self.services.tool_call_refused(tool, _KINDS.get(tool, "other"), f"{tool}", why)
        raise RequestError(INVALID_PARAMS, why)

    def _parsed(self, tool: str, args: dict[str, Any]) -> tuple[str, Any, Any, Any]:
        """The tool's kind, its request (checked: ValidationError), how the policy reads it
        and what serves it."""
        services, sid = self.services, self.session_id
        if tool == "read_text_file":
            read = ReadTextFileParams.model_validate({**args, "sessionId": sid})
            return "read", read, describe_read, services.files.read_text_file
        if tool == "write_text_file":
            write = WriteTextFileParams.model_validate({**args, "sessionId": sid})

            async def written(request: WriteTextFileParams) -> dict[str, Any]:
                reply = await services.files.write_text_file(request)
                return {**reply, "content": f"wrote {request.path}"}

            return "edit", write, describe_write, written
        timeout = args.pop("timeout", None)
        run = CreateTerminalParams.model_validate({**args, "sessionId": sid})
        return "execute", run, services.describe_command, lambda r: self._run(r, timeout)

    async def _run(self, request: CreateTerminalParams, timeout: Any) -> dict[str, Any]:
        terminals = self.services.terminals
        created = await terminals.create(request)
        handle = TerminalIdParams(session_id=self.session_id, terminal_id=created["terminalId"])
        limit = terminals.settings.timeout
        seconds = min(float(timeout), limit) if timeout is not None else limit  # checked
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


def error_text(exc: BaseException) -> str:
    """What the agent reads of a failed call: the JSON-RPC error's words (an OS error as
    ``Permission denied (EACCES): /path``), and for arguments that do not fit, which and why."""
    if isinstance(exc, ValidationError):
        problems = exc.errors(include_url=False, include_context=False, include_input=False)
        return "; ".join(
            f"{'.'.join(str(part) for part in p['loc']) or 'arguments'}: {p['msg']}"
            for p in problems[:8]
        )
    if isinstance(exc, Exception):
        return rpc_error(exc)[1]
    return type(exc).__name__
