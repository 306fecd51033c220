"""The parent tool registry: the built-in tools a host loop may offer its model.

Built-in tools: the workspace tools (``bash``, ``read_file``, ``write_file``:
:mod:`.workspace_tools`) and the explicit subtask entries ``spawn`` (``tools.spawn.enabled``,
default on) and ``acp_spawn`` (``tools.acp_spawn.enabled``, default off, as in Mistermorph).
The subtask entries answer with their SubtaskResult envelope as JSON.

Entry paths are imported when a tool is called: ``spawn`` loads pydantic-ai (over a second),
so a host that only runs ``bash`` stays fast to start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from acp_bridge._acp.agent_executable import ready_profiles
from acp_bridge._entries.local_loop.workspace_tools import ToolArgs, entry_options, workspace_tools
from acp_bridge._entries.options import AcpSpawnOptions, SpawnOptions, arguments_model
from acp_bridge._loop.toolset import NESTING_TOOLS, Tool, ToolSet
from acp_bridge.config import LoadedConfig
from acp_bridge.events import EventHandler


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


SpawnArgs: type[BaseModel] = arguments_model(
    "SpawnArgs",
    SpawnOptions,
    "tool",
    {
        "task": (str, Field(description="what the inner agent must do, self-contained")),
        "tools": (list[str], Field(description="names of the tools the inner agent may use")),
    },
    ToolArgs,
)
AcpSpawnArgs: type[BaseModel] = arguments_model(
    "AcpSpawnArgs",
    AcpSpawnOptions,
    "tool",
    {
        "agent": (str, Field(description="the agent profile to run")),
        "task": (str, Field(description="what the agent must do, self-contained")),
    },
    ToolArgs,
)


async def _spawn_tool(args: BaseModel, tools: ToolSet) -> str:
    from acp_bridge._entries.local_loop.spawn import (
        spawn,  # the local-loop path: pydantic-ai, when run
    )

    (task, names), options = entry_options(args, tools, "task", "tools")
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

    (agent, task), options = entry_options(args, tools, "agent", "task")
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
    tools = workspace_tools()
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
