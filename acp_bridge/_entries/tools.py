"""The parent tool registry: what a host loop may offer its model, as calls and as specs.

Built-in tools: ``bash``, ``read_file``, ``write_file``, and the explicit subtask entries
``spawn`` (``tools.spawn.enabled``, default on) and ``acp_spawn`` (``tools.acp_spawn.enabled``,
default off, as in Mistermorph). A host adds its own: a Python callable (sync or async) taking
one pydantic model of arguments. Every tool exports as a function-calling spec (JSON Schema,
in OpenAI's or Anthropic's shape) so any host loop can offer it.

A call never raises for the tool's own failure: the model gets ``error: …`` and can adapt.
The subtask entries (``spawn``, ``acp_spawn``, ``bash`` with ``run_in_subtask``) answer with
their SubtaskResult envelope as JSON. A registry for a subtask (:meth:`ToolRegistry.select`
with ``nesting=False``) never holds ``spawn`` or ``acp_spawn``: the depth limit would refuse
them anyway, and a model should not be offered what it cannot use.

Nothing here imports pydantic-ai: the ``spawn`` tool loads its entry path when called, so a
host that only runs ``bash`` stays fast to start.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, get_type_hints

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from acp_bridge._acp.connection import RpcFailure
from acp_bridge._acp.schema import RESOURCE_NOT_FOUND
from acp_bridge._acp.services.files import FileService
from acp_bridge._os.roots import Roots
from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import (
    BridgeError,
    ConfigError,
    SandboxViolation,
)
from acp_bridge.events import EventHandler, ObserveProfile

log = logging.getLogger("acp_bridge")

SpecFormat = Literal["openai", "anthropic"]
ToolKind = Literal["read", "edit", "execute", "other"]
NESTING_TOOLS = frozenset({"spawn", "acp_spawn"})
MAX_READ_BYTES = 256 * 1024
MAX_WRITE_BYTES = 16 * 1024 * 1024
DEFAULT_READ_LINES = 2000  # a read without a limit: long files come in windows
"""Most bytes ``read_file`` returns in one call (a model's context is the limit, not disk)."""
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what OpenAI and Anthropic both accept

Handler = Callable[[Any, "ToolRegistry"], Awaitable[str]]
SpecHook = Callable[[dict[str, Any], "ToolRegistry"], None]


@dataclass(frozen=True)
class Tool:
    """One tool: its name, what it is for, its arguments, and how to run it."""

    name: str
    description: str
    args_model: type[BaseModel]
    handler: Handler
    kind: ToolKind = "other"
    customize: SpecHook | None = None
    """Fills in parameter details only the registry knows (e.g. the allowed agent names)."""

    def parameters(self, registry: ToolRegistry) -> dict[str, Any]:
        schema = json_parameters(self.args_model)
        if self.customize is not None:
            self.customize(schema, registry)
        return schema


@dataclass(frozen=True)
class Selection:
    """A registry narrowed to named tools, and the names that were left out and why."""

    registry: ToolRegistry
    unknown: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def warnings(self) -> list[str]:
        notes = [f"unknown tool {name!r} ignored" for name in self.unknown]
        notes += [f"tool {name!r} is never offered inside a subtask" for name in self.refused]
        return notes


class ToolRegistry:
    """The tools one host (or one subtask) may call, bound to a config and a workspace."""

    def __init__(
        self,
        config: LoadedConfig,
        *,
        cwd: str | Path | None = None,
        on_event: EventHandler | None = None,
        builtins: bool = True,
    ) -> None:
        self.config = config
        self.cwd = Path(cwd or Path.cwd()).resolve()
        self.on_event = on_event
        self._tools: dict[str, Tool] = {}
        if builtins:
            for tool in _builtin_tools(config):
                self.add(tool)

    # --- contents ---------------------------------------------------------------------

    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def get(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            known = ", ".join(self._tools) or "none"
            raise ConfigError(f"no tool named {name!r}; available: {known}") from None

    def add(self, tool: Tool) -> None:
        if not _TOOL_NAME.fullmatch(tool.name):
            raise ConfigError(
                f"tool name must be 1-64 letters, digits, '_' or '-'; got {tool.name!r}"
            )
        if tool.name in self._tools:
            raise ConfigError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def register(
        self,
        func: Callable[[Any], Any],
        args_model: type[BaseModel] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> Tool:
        """Offer a host callable as a tool. ``func`` takes one instance of ``args_model``
        (taken from its annotation when not given) and returns text or JSON-able data; it
        may be sync (run in a worker thread) or async."""
        model = args_model or _args_model_of(func)
        tool_name = name or func.__name__
        text = description or inspect.getdoc(func) or ""
        if not text:
            raise ConfigError(f"tool {tool_name!r} needs a description (or a docstring)")

        async def handler(args: BaseModel, _registry: ToolRegistry) -> str:
            if inspect.iscoroutinefunction(func):
                return as_tool_text(await func(args))
            return as_tool_text(await anyio.to_thread.run_sync(func, args))

        tool = Tool(tool_name, text, model, handler)
        self.add(tool)
        return tool

    def select(self, names: Iterable[str], *, nesting: bool = True) -> Selection:
        """A registry with only ``names`` (in this registry's order), same config and cwd.

        Unknown names are left out and reported; with ``nesting`` false (a subtask's
        registry) so are ``spawn`` and ``acp_spawn``.
        """
        wanted = list(dict.fromkeys(n.strip() for n in names if n.strip()))
        child = ToolRegistry(self.config, cwd=self.cwd, on_event=self.on_event, builtins=False)
        unknown = [n for n in wanted if n not in self._tools]
        refused = [n for n in wanted if n in NESTING_TOOLS and n in self._tools and not nesting]
        for name, tool in self._tools.items():
            if name in wanted and name not in refused:
                child.add(tool)
        return Selection(child, unknown, refused)

    # --- calling ----------------------------------------------------------------------

    async def call(self, name: str, arguments: Mapping[str, Any] | str | None) -> str:
        """Run one tool call; the text the model should see, errors included."""
        tool = self._tools.get(name)
        if tool is None:
            return f"error: unknown tool {name!r}; available: {', '.join(self._tools) or 'none'}"
        try:
            if isinstance(arguments, str):
                args = tool.args_model.model_validate_json(arguments or "{}")
            else:
                args = tool.args_model.model_validate(arguments or {})
        except ValidationError as exc:
            return f"error: invalid arguments for {name}: {_brief(exc)}"
        try:
            return await tool.handler(args, self)
        except BridgeError as exc:
            return f"error: {exc}"
        except Exception as exc:  # a host tool's bug must not end the whole loop
            log.warning("tool %s failed", name, exc_info=True)
            return f"error: {name} failed: {type(exc).__name__}: {exc}"

    # --- specs --------------------------------------------------------------------------

    def specs(self, fmt: SpecFormat = "openai") -> list[dict[str, Any]]:
        """Every tool as a function-calling definition in ``fmt``'s shape."""
        out = []
        for tool in self._tools.values():
            params = tool.parameters(self)
            if fmt == "anthropic":
                out.append(
                    {"name": tool.name, "description": tool.description, "input_schema": params}
                )
            else:
                out.append(
                    {
                        "type": "function",
                        "function": {
                            "name": tool.name,
                            "description": tool.description,
                            "parameters": params,
                        },
                    }
                )
        return out

    # --- the workspace --------------------------------------------------------------------

    @cached_property
    def files(self) -> FileService:
        """The workspace's files, served with the same confinement as an ACP agent gets."""
        return FileService(
            Roots.for_session(self.cwd),
            max_read_bytes=MAX_READ_BYTES,
            max_write_bytes=MAX_WRITE_BYTES,
        )

    def inside(self, path: str) -> Path:
        """A command's starting directory (relative to the workspace), refused outside it.
        Only where a command starts: the command itself may ``cd`` anywhere."""
        resolved = (self.cwd / Path(path).expanduser()).resolve()
        if not resolved.is_relative_to(self.cwd):
            raise SandboxViolation(f"{path} is outside the workspace {self.cwd}")
        return resolved


def as_tool_text(value: Any) -> str:
    """A tool's return value as the text a model sees."""
    if isinstance(value, str):
        return value
    if isinstance(value, SubtaskResult):
        return value.to_json()
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, ensure_ascii=False, default=str)


def _brief(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def _args_model_of(func: Callable[[Any], Any]) -> type[BaseModel]:
    hints = get_type_hints(func)
    hints.pop("return", None)
    params = list(hints.values())
    if len(params) == 1 and isinstance(params[0], type) and issubclass(params[0], BaseModel):
        return params[0]
    raise ConfigError(
        f"tool {getattr(func, '__name__', func)!r}: pass args_model, or annotate its one "
        "parameter with a pydantic model"
    )


# --- JSON Schema for function calling -----------------------------------------------------


def json_parameters(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON Schema, trimmed for function calling: no titles, and an optional
    field is just optional (``T``), not ``T or null``."""
    schema = _tidy(model.model_json_schema())
    schema.setdefault("properties", {})
    return schema  # type: ignore[no-any-return]


def _tidy(node: Any) -> Any:
    if isinstance(node, list):
        return [_tidy(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: _tidy(v) for k, v in node.items() if k != "title"}
    options = node.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options and node.get("default") is None:
        rest = [o for o in options if o != {"type": "null"}]
        if len(rest) == 1:
            node.pop("anyOf")
            node.pop("default", None)
            node = {**rest[0], **node}
    return node


# --- the built-in tools ---------------------------------------------------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BashArgs(_Args):
    command: str = Field(description="the command line, run with bash -c")
    run_in_subtask: bool = Field(
        False,
        description="true: run it as an isolated subtask and get a SubtaskResult envelope "
        "(output_schema subtask.bash.result.v1; the answer is in output.stdout); "
        "false: a plain call returning {exit_code, stdout, stderr, …}",
    )
    timeout: float | None = Field(
        None, gt=0, description="seconds before the command is killed (default from config)"
    )
    cwd: str | None = Field(None, description="working directory, relative to the workspace")


class ReadFileArgs(_Args):
    path: str = Field(description="file path, relative to the workspace")
    offset: int | None = Field(None, ge=1, description="first line to read (1-based)")
    limit: int | None = Field(None, ge=1, description="most lines to read")


class WriteFileArgs(_Args):
    path: str = Field(description="file path, relative to the workspace; parents are created")
    content: str = Field(description="the whole new content of the file")


class SpawnArgs(_Args):
    task: str = Field(description="what the inner agent must do, self-contained")
    tools: list[str] = Field(description="names of the tools the inner agent may use")
    model: str | None = Field(None, description="model name from the config (default: its default)")
    output_schema: str | None = Field(
        None, description="contract label: the inner agent must answer with JSON under it"
    )
    observe_profile: ObserveProfile | None = Field(None, description="which live events to show")


class AcpSpawnArgs(_Args):
    agent: str = Field(description="the agent profile to run")
    task: str = Field(description="what the agent must do, self-contained")
    cwd: str | None = Field(None, description="session working directory")
    output_schema: str | None = Field(
        None, description="contract label: the agent must answer with JSON under it"
    )
    observe_profile: ObserveProfile | None = Field(None, description="which live events to show")
    timeout: float | None = Field(None, gt=0, description="seconds the whole run may take")


async def _bash_tool(args: BashArgs, tools: ToolRegistry) -> str:
    from acp_bridge._entries.shell import bash

    cwd = tools.inside(args.cwd or ".")
    if args.run_in_subtask:
        result = await bash(
            args.command,
            timeout=args.timeout,
            cwd=cwd,
            on_event=tools.on_event,
            config=tools.config,
        )
        return result.to_json()
    plain = await bash(
        args.command,
        run_in_subtask=False,
        timeout=args.timeout,
        cwd=cwd,
        on_event=tools.on_event,
        config=tools.config,
    )
    return json.dumps(plain.to_tool_output(), ensure_ascii=False)


async def _served(call: Awaitable[dict[str, Any]], path: str) -> dict[str, Any]:
    """A file service reply, its JSON-RPC failures as the errors a tool call reports."""
    try:
        return await call
    except RpcFailure as failure:
        if failure.code == RESOURCE_NOT_FOUND:
            raise BridgeError(f"no such file: {path}") from failure
        raise SandboxViolation(failure.message) from failure


async def _read_file_tool(args: ReadFileArgs, tools: ToolRegistry) -> str:
    # One line more than asked: whether the file goes on decides the "cut" marker.
    wanted = args.limit or DEFAULT_READ_LINES
    offset = args.offset or 1
    reply = await _served(
        tools.files.read_text_file(
            sessionId="local", path=str(tools.cwd / args.path), line=offset, limit=wanted + 1
        ),
        args.path,
    )
    lines = str(reply["content"]).splitlines(keepends=True)
    if len(lines) <= wanted:
        return "".join(lines)
    following = offset + wanted
    return "".join(lines[:wanted]) + (
        f"[... cut at line {following}: read more with offset={following}]\n"
    )


async def _write_file_tool(args: WriteFileArgs, tools: ToolRegistry) -> str:
    await _served(
        tools.files.write_text_file(
            sessionId="local", path=str(tools.cwd / args.path), content=args.content
        ),
        args.path,
    )
    return f"wrote {len(args.content.encode())} bytes to {args.path}"


async def _spawn_tool(args: SpawnArgs, tools: ToolRegistry) -> str:
    from acp_bridge._entries.inner import (
        spawn,
    )  # the local-loop path; it loads pydantic-ai when run

    result = await spawn(
        args.task,
        args.tools,
        model=args.model,
        output_schema=args.output_schema,
        observe_profile=args.observe_profile,
        registry=tools,
    )
    return result.to_json()


def _spawn_spec(schema: dict[str, Any], tools: ToolRegistry) -> None:
    usable = [n for n in tools.names() if n not in NESTING_TOOLS]
    prop = schema["properties"]["tools"]
    prop["items"] = {"type": "string", "enum": usable}
    prop["description"] += f"; from: {', '.join(usable)} (spawn and acp_spawn are never offered)"


async def _acp_spawn_tool(args: AcpSpawnArgs, tools: ToolRegistry) -> str:
    # Imported here: the ACP client loads only when a model really delegates to an agent.
    # acp_spawn applies the depth limit itself, like every entry path.
    from acp_bridge._entries.acp_agent import acp_spawn

    result = await acp_spawn(
        args.agent,
        args.task,
        cwd=tools.inside(args.cwd) if args.cwd else tools.cwd,
        output_schema=args.output_schema,
        observe_profile=args.observe_profile,
        timeout=args.timeout,
        on_event=tools.on_event,
        config=tools.config,
    )
    return result.to_json()


def _acp_spawn_spec(schema: dict[str, Any], tools: ToolRegistry) -> None:
    usable = tools.config.profiles.usable()
    names = sorted(usable)
    lines = [f"{n}: {usable[n].profile.description or '(no description)'}" for n in names]
    prop = schema["properties"]["agent"]
    prop["enum"] = names
    prop["description"] = "the agent profile to run; one of:\n" + "\n".join(lines)


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
