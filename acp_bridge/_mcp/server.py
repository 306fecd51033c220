"""The MCP server: ``tools/list`` and ``tools/call`` over the catalog.

Built on the SDK's low-level :class:`mcp.server.Server` rather than ``MCPServer``: the
schemas it lists are ours (the ready profiles change with the machine; the output schema is
the envelope's), and a synchronous tool's run must outlive the request that started it
(:mod:`.tool_runs`). Arguments are checked before anything starts: a bad one is a JSON-RPC
``invalid params`` error whose message and ``data.problems`` name the field.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import Any

import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from acp_bridge._acp.agent_executable import ready_profiles
from acp_bridge._acp.services.elicitation import ElicitationHook
from acp_bridge._acp.services.permissions import PermissionHook
from acp_bridge._entries.request import EntryRequest, run_entry
from acp_bridge._mcp import arguments as a
from acp_bridge._mcp import run_control
from acp_bridge._mcp.compare_tool import call_compare, compare_schema
from acp_bridge._mcp.host import Host, LogGate
from acp_bridge._mcp.progress import Lines
from acp_bridge._mcp.questions import elicitation_hook, permission_hook
from acp_bridge._mcp.relay import follow
from acp_bridge._mcp.tool_catalog import (
    COMPARE_TOOL,
    ENTRY_TOOLS,
    SPECS,
    envelope_schema,
    input_schema,
)
from acp_bridge._mcp.tool_runs import ToolRun, ToolRuns, tool_runs_lifespan
from acp_bridge._version import __version__
from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import BridgeError, ConfigError, Problem

Context = ServerRequestContext[ToolRuns, Any]
DEFAULT_ASK_TIMEOUT = 120.0
INSTRUCTIONS = (
    "acp-bridge hands a subtask to an isolated worker and returns one SubtaskResult envelope. "
    "acp_spawn runs an external coding agent (see its `agent` enum), spawn a local model "
    "loop, bash one command; each waits for the result. For long work: start, then wait."
)
_ENTRY_ARGS: dict[str, type[a.EntryArgs]] = {
    "acp_spawn": a.AcpSpawnArgs,
    "spawn": a.SpawnArgs,
    "bash": a.BashArgs,
}


@dataclass(frozen=True)
class Settings:
    config: LoadedConfig
    tools: tuple[str, ...] = tuple(SPECS)
    ask_timeout: float = DEFAULT_ASK_TIMEOUT


def invalid(tool: str, exc: ConfigError) -> MCPError:
    problems = [{"field": p.field, "message": p.message} for p in exc.problems]
    text = "; ".join(f"{p.field}: {p.message}" if p.field else p.message for p in exc.problems)
    return MCPError(types.INVALID_PARAMS, f"{tool}: {text}", {"problems": problems})


class BridgeServer:
    """The handlers of one MCP server and what they share."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.gate = LogGate()

    def build(self) -> Server[ToolRuns]:
        # logging/setLevel is deprecated from 2026-07-28 on, but the handshake protocols'
        # hosts (all of them today) need it for the logging capability.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            return Server(
                "acp-bridge",
                version=__version__,
                title="acp-bridge",
                instructions=INSTRUCTIONS,
                lifespan=tool_runs_lifespan,
                on_list_tools=self.list_tools,
                on_call_tool=self.call_tool,
                on_set_logging_level=self.set_level,
            )

    # --- tools/list --------------------------------------------------------------------

    def tools(self) -> list[types.Tool]:
        ready = ready_profiles(self.settings.config)
        envelope = envelope_schema()
        run = run_control.run_schema(envelope)
        outputs = {
            "start": run_control.START_SCHEMA,
            "list": run_control.list_schema(run),
            COMPARE_TOOL: compare_schema(),
        }
        listed = []
        for name in self.settings.tools:
            spec = SPECS[name]
            output = envelope if name in ENTRY_TOOLS else outputs.get(name, run)
            listed.append(
                types.Tool(
                    name=name,
                    description=spec.description,
                    input_schema=input_schema(spec, ready),
                    output_schema=output,
                    annotations=types.ToolAnnotations(
                        read_only_hint=spec.read_only,
                        destructive_hint=spec.destructive,
                        open_world_hint=spec.open_world,
                    ),
                )
            )
        return listed

    async def list_tools(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools())

    async def set_level(
        self, ctx: Context, params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        self.gate.level = params.level
        return types.EmptyResult()

    # --- tools/call --------------------------------------------------------------------

    async def call_tool(
        self, ctx: Context, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        name = params.name
        if name not in self.settings.tools:
            offered = ", ".join(self.settings.tools)
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {name!r}; offered: {offered}")
        try:
            if name in ENTRY_TOOLS:
                return await self._entry(ctx, name, params)
            if name == COMPARE_TOOL:
                return await self._compare(ctx, params.arguments)
            return await self._run_control(ctx, name, params.arguments)
        except ConfigError as exc:
            raise invalid(name, exc) from None

    async def _entry(
        self, ctx: Context, name: str, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        host = Host(ctx, self.gate)
        tool_runs = ctx.lifespan_context
        if params.request_state is not None:  # a 2026-07-28 host back with its answers
            tool_run = tool_runs.find(params.request_state)
            if tool_run is None:
                raise MCPError(
                    types.INVALID_PARAMS,
                    "request_state: no run waits for it (it ended long ago, or the server "
                    "restarted)",
                )
            if tool_run.following:
                raise MCPError(types.INVALID_REQUEST, "another call follows this run already")
            tool_run.answer(params.input_responses)
            return await follow(tool_run, host)
        request = self.entry_request(name, params.arguments)
        tool_run = ToolRun(ask_timeout=self.settings.ask_timeout)
        hooks = self._hooks(request, tool_run, host)
        config = self.settings.config

        async def run(tool_run: ToolRun) -> SubtaskResult:
            return await run_entry(
                request,
                config=config,
                on_event=tool_run.on_event,
                cancel=tool_run.cancel,
                permission_hook=hooks[0],
                elicitation_hook=hooks[1],
            )

        tool_runs.start(tool_run, run)
        return await follow(tool_run, host)

    async def _compare(
        self, ctx: Context, arguments: dict[str, Any] | None
    ) -> types.CallToolResult:
        args = a.parse(a.CompareArgs, arguments)
        for agent in getattr(args, "agents"):  # noqa: B009 - a field of the derived model
            self.check_agent(agent)
        return await call_compare(args, self.settings.config, Host(ctx, self.gate))

    def entry_request(self, name: str, arguments: dict[str, Any] | None) -> EntryRequest:
        """The checked request of an entry tool (:class:`ConfigError` naming the field)."""
        request = a.parse(_ENTRY_ARGS[name], arguments).request()
        if request.agent is not None:
            self.check_agent(request.agent)
        return request

    def check_agent(self, agent: str) -> None:
        """``agent`` names a profile that is ready here, or the error says what is wrong."""
        ready = ready_profiles(self.settings.config)
        if agent in ready:
            return
        catalog = self.settings.config.profiles
        if agent in catalog.errors:
            why = f"profile {agent!r} is broken: {catalog.errors[agent].problems[0]}"
        elif agent in catalog.names():
            command = catalog.get(agent).profile.command
            why = (
                f"profile {agent!r} is not ready here: {command!r} not found "
                f"(see: acp-bridge doctor {agent})"
            )
        else:
            why = f"no profile {agent!r}"
        listed = ", ".join(ready) or "none"
        raise ConfigError([Problem(f"{why}; ready: {listed}", field="agent")])

    def _hooks(
        self, request: EntryRequest, tool_run: ToolRun, host: Host
    ) -> tuple[PermissionHook | None, ElicitationHook | None]:
        """The host answers ``ask`` and the agent's questions when it can be asked; else the
        headless decision (rejected, recorded) applies."""
        if request.entry != "acp_spawn" or not host.can_ask:
            return None, None
        who = request.agent or "the agent"
        return permission_hook(tool_run, who), elicitation_hook(tool_run, who, url_mode=host.url)

    # --- run control -------------------------------------------------------------------

    async def _run_control(
        self, ctx: Context, name: str, arguments: dict[str, Any] | None
    ) -> types.CallToolResult:
        try:
            data = await self._control(ctx, name, arguments)
        except ConfigError:
            raise
        except BridgeError as exc:  # e.g. the run's supervisor could not start
            return _error_result(f"{type(exc).__name__}: {exc}")
        text = types.TextContent(type="text", text=_runs_text(data))
        return types.CallToolResult(content=[text], structured_content=data)

    async def _control(
        self, ctx: Context, name: str, arguments: dict[str, Any] | None
    ) -> dict[str, Any]:
        if name == "start":
            start = a.parse(a.StartArgs, arguments)
            request = start.request()
            if request.agent is not None:
                self.check_agent(request.agent)
            return await run_control.start(start, request, self.settings.config)
        if name in ("wait", "send"):
            lines = Lines(Host(ctx, self.gate).progress)
            if name == "send":
                args = a.parse(a.SendArgs, arguments)
                data = await run_control.send(args, self.settings.config, lines.event)
            else:
                data = await run_control.wait(a.parse(a.WaitArgs, arguments), lines.event)
            await lines.flush()
            return data
        if name == "status":
            return await run_control.status(a.parse(a.StatusArgs, arguments))
        if name == "list":
            return await run_control.list_runs(a.parse(a.ListArgs, arguments))
        assert name == "stop", name
        return await run_control.stop(a.parse(a.StopArgs, arguments))


def _error_result(text: str) -> types.CallToolResult:
    """A tool's own failure, for the host's model to read (not a protocol error)."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _runs_text(data: dict[str, Any]) -> str:
    """A short text for hosts that read only text: one line per run, then the JSON."""
    listed = data.get("runs", [data])
    lines = [
        f"{run['task_id']}: {run['status']} {run.get('summary') or ''}".rstrip() for run in listed
    ]
    return "\n".join([*lines, "", json.dumps(data, ensure_ascii=False)])
