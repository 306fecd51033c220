"""The parent tool registry: the built-in tools a host loop may offer its model.

Built-in tools: ``bash``, ``read_file``, ``write_file``, and the explicit subtask entries
``spawn`` (``tools.spawn.enabled``, default on) and ``acp_spawn`` (``tools.acp_spawn.enabled``,
default off, as in Mistermorph). The subtask entries (``spawn``, ``acp_spawn``, ``bash`` with
``run_in_subtask``) answer with their SubtaskResult envelope as JSON. The file tools go
through the same confined file operations as an ACP agent's ``fs/*`` requests.

Entry paths are imported when a tool is called: ``spawn`` loads pydantic-ai (over a second),
so a host that only runs ``bash`` stays fast to start.
"""

import json
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from acp_bridge._entries.agent_commands import ready_profiles
from acp_bridge._entries.options import arguments_model
from acp_bridge._loop.toolset import NESTING_TOOLS, Tool, ToolSet
from acp_bridge._os.files import read_text, write_text
from acp_bridge._os.stoppable import StopToken, in_thread
from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import SubtaskResult
from acp_bridge.events import EventHandler

MAX_READ_BYTES = 256 * 1024
"""Most bytes ``read_file`` returns in one call (a model's context is the limit, not disk)."""
MAX_WRITE_BYTES = 16 * 1024 * 1024
DEFAULT_READ_LINES = 2000  # a read without a limit: long files come in windows


class ToolRegistry(ToolSet):
    """The tools a host may call: the built-in ones (as the config enables them) and its own
    (:meth:`register`), bound to a config and a workspace."""

    def __init__(
        self,
        config: LoadedConfig,
        *,
        cwd: str | Path | None = None,
        on_event: EventHandler | None = None,
        builtins: bool = True,
    ) -> None:
        super().__init__(config, cwd=cwd, on_event=on_event)
        if builtins:
            for tool in _builtin_tools(config):
                self.add(tool)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


BashArgs: type[BaseModel] = arguments_model(
    "BashArgs",
    "bash",
    "tool",
    {
        "command": (str, Field(description="the command line, run with bash -c")),
        "run_in_subtask": (
            bool,
            Field(
                False,
                description="true: run it as an isolated subtask and get a SubtaskResult "
                "envelope (output_schema subtask.bash.result.v1; the answer is in "
                "output.stdout); false: a plain call returning {exit_code, stdout, stderr, …}",
            ),
        ),
    },
    _Args,
)


class ReadFileArgs(_Args):
    path: str = Field(description="file path, relative to the workspace")
    offset: int | None = Field(None, ge=1, description="first line to read (1-based)")
    limit: int | None = Field(None, ge=1, description="most lines to read")


class WriteFileArgs(_Args):
    path: str = Field(description="file path, relative to the workspace; parents are created")
    content: str = Field(description="the whole new content of the file")


SpawnArgs: type[BaseModel] = arguments_model(
    "SpawnArgs",
    "spawn",
    "tool",
    {
        "task": (str, Field(description="what the inner agent must do, self-contained")),
        "tools": (list[str], Field(description="names of the tools the inner agent may use")),
    },
    _Args,
)
AcpSpawnArgs: type[BaseModel] = arguments_model(
    "AcpSpawnArgs",
    "acp_spawn",
    "tool",
    {
        "agent": (str, Field(description="the agent profile to run")),
        "task": (str, Field(description="what the agent must do, self-contained")),
    },
    _Args,
)


def _entry_options(args: BaseModel, tools: ToolSet, *own: str) -> tuple[list[Any], dict[str, Any]]:
    """A tool call's ``own`` arguments (in order) and its entry options, its ``cwd`` inside
    the workspace (relative to it; the workspace itself by default)."""
    fields = args.model_dump(exclude_none=True)
    values = [fields.pop(name) for name in own]
    fields["cwd"] = tools.inside(fields["cwd"]) if fields.get("cwd") else tools.cwd
    return values, fields


async def _bash_tool(args: BaseModel, tools: ToolSet) -> str:
    from acp_bridge._entries.bash import CommandResult, bash

    (line, in_subtask), options = _entry_options(args, tools, "command", "run_in_subtask")
    command = str(line)
    if in_subtask:
        # Typed here: with ``**options`` a type checker cannot tell the overloads apart.
        result: SubtaskResult = await bash(
            command, on_event=tools.on_event, config=tools.config, **options
        )
        return result.to_json()
    plain: CommandResult = await bash(
        command, run_in_subtask=False, on_event=tools.on_event, config=tools.config, **options
    )
    return json.dumps(plain.to_tool_output(), ensure_ascii=False)


async def _read_file_tool(args: ReadFileArgs, tools: ToolSet) -> str:
    # One line more than asked: whether the file goes on decides the "cut" marker.
    wanted = args.limit or DEFAULT_READ_LINES
    offset = args.offset or 1
    path = str(tools.cwd / args.path)
    try:
        stop = StopToken()  # the loop's deadline or cancel stops the read as it goes
        content = await in_thread(
            lambda: read_text(
                tools.roots,
                path,
                line=offset,
                limit=wanted + 1,
                max_bytes=MAX_READ_BYTES,
                stop=stop,
            ),
            stop,
        )
    except FileNotFoundError:
        return f"error: no such file: {args.path}"
    lines = content.splitlines(keepends=True)
    if len(lines) <= wanted:
        return "".join(lines)
    following = offset + wanted
    return "".join(lines[:wanted]) + (
        f"[... cut at line {following}: read more with offset={following}]\n"
    )


async def _write_file_tool(args: WriteFileArgs, tools: ToolSet) -> str:
    path, data = str(tools.cwd / args.path), args.content.encode()
    try:
        await anyio.to_thread.run_sync(
            lambda: write_text(tools.roots, path, data, max_bytes=MAX_WRITE_BYTES)
        )
    except FileNotFoundError:
        return f"error: cannot create {args.path}: a parent is not a directory"
    return f"wrote {len(args.content.encode())} bytes to {args.path}"


async def _spawn_tool(args: BaseModel, tools: ToolSet) -> str:
    from acp_bridge._entries.spawn import spawn  # the local-loop path: pydantic-ai, when run

    (task, names), options = _entry_options(args, tools, "task", "tools")
    # What _spawn_spec offered: the full set, not the selection.
    result = await spawn(task, names, registry=tools.origin, **options)
    return result.to_json()


def _spawn_spec(schema: dict[str, Any], tools: ToolSet) -> None:
    usable = [n for n in tools.origin.names() if n not in NESTING_TOOLS]
    prop = schema["properties"]["tools"]
    prop["items"] = _one_of(usable)
    prop["description"] += f"; from: {', '.join(usable)} (spawn and acp_spawn are never offered)"


def _one_of(names: list[str]) -> dict[str, Any]:
    """A string among ``names``; never an empty enum (a schema no value can satisfy, which
    function-calling APIs refuse)."""
    return {"type": "string", "enum": names} if names else {"type": "string"}


async def _acp_spawn_tool(args: BaseModel, tools: ToolSet) -> str:
    # Imported here: the ACP client loads only when a model really delegates to an agent.
    # acp_spawn applies the depth limit itself, like every entry path.
    from acp_bridge._entries.acp_spawn.entry import acp_spawn

    (agent, task), options = _entry_options(args, tools, "agent", "task")
    result = await acp_spawn(agent, task, on_event=tools.on_event, config=tools.config, **options)
    return result.to_json()


def _acp_spawn_spec(schema: dict[str, Any], tools: ToolSet) -> None:
    ready = ready_profiles(tools.config)  # as the MCP face: only agents that would start
    names = sorted(ready)
    lines = [f"{n}: {ready[n] or '(no description)'}" for n in names]
    prop = schema["properties"]["agent"]
    prop.update(_one_of(names))
    prop["description"] = "the agent profile to run; one of:\n" + (
        "\n".join(lines) or "(no agent is ready here: see acp-bridge doctor)"
    )


def _builtin_tools(config: LoadedConfig) -> list[Tool]:
    settings = config.config.tools
    tools = [
        Tool(
            "bash",
            "Run one shell command (bash -c) in the workspace, in its own process group, with "
            "a time limit; stdout and stderr are kept head and tail. Set run_in_subtask=true "
            "to run it as an isolated subtask that returns a SubtaskResult envelope.",
            BashArgs,
            _bash_tool,
            kind="execute",
        ),
        Tool(
            "read_file",
            "Read a text file of the workspace (optionally a window of lines).",
            ReadFileArgs,
            _read_file_tool,
            kind="read",
        ),
        Tool(
            "write_file",
            "Create or replace a text file of the workspace with the given content.",
            WriteFileArgs,
            _write_file_tool,
            kind="edit",
        ),
    ]
    if settings.spawn.enabled:
        tools.append(
            Tool(
                "spawn",
                "Delegate a subtask to a local inner agent that may use only the tools you "
                "list. Returns a SubtaskResult JSON envelope; the answer is its output. With "
                "output_schema the output is JSON.",
                SpawnArgs,
                _spawn_tool,
                customize=_spawn_spec,
            )
        )
    if settings.acp_spawn.enabled:
        tools.append(
            Tool(
                "acp_spawn",
                "Delegate a subtask to an external coding agent (an ACP agent profile), which "
                "works in its own session and sandboxed workspace. Returns a SubtaskResult "
                "JSON envelope; the answer is its output.",
                AcpSpawnArgs,
                _acp_spawn_tool,
                customize=_acp_spawn_spec,
            )
        )
    return tools
