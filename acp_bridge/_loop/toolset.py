"""A set of tools a model loop may call: each as a call and as a function-calling spec.

A :class:`ToolSet` is bound to a config and a workspace; a host adds its own tools (a Python
callable, sync or async, taking one pydantic model of arguments). Every tool exports as a
function-calling spec (JSON Schema, in OpenAI's or Anthropic's shape) so any host loop can offer it.
The built-in tools (``bash``, the file tools, ``spawn``, ``acp_spawn``) are added by
``ToolRegistry`` in ``_entries/local_loop/builtin_tools.py``: they call entry paths, which sit above
this layer.

A call never raises for the tool's own failure: the model gets ``error: …`` and can adapt.
A set for a subtask (:meth:`ToolSet.select` with ``nesting=False``) never holds ``spawn`` or
``acp_spawn``: the depth limit would refuse them anyway, and a model should not be offered
what it cannot use.

Nothing here imports pydantic-ai.
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
from pydantic import BaseModel, ValidationError

from acp_bridge._os.fs.roots import Roots
from acp_bridge._os.fs.run_folders import check_write_roots, existing_directory
from acp_bridge.config import LoadedConfig, ToolKind
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import (
    BridgeError,
    ConfigError,
    SandboxViolation,
)
from acp_bridge.events import EventHandler

log = logging.getLogger("acp_bridge")

SpecFormat = Literal["openai", "anthropic"]
NESTING_TOOLS = frozenset({"spawn", "acp_spawn"})
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what OpenAI and Anthropic both accept

Handler = Callable[[Any, "ToolSet"], Awaitable[str]]
SpecHook = Callable[[dict[str, Any], "ToolSet"], None]


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

    def parameters(self, registry: ToolSet) -> dict[str, Any]:
        schema = json_parameters(self.args_model)
        if self.customize is not None:
            self.customize(schema, registry)
        return schema


@dataclass(frozen=True)
class Selection:
    """A registry narrowed to named tools, and the names that were left out and why."""

    registry: ToolSet
    unknown: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def warnings(self) -> list[str]:
        notes = [f"unknown tool {name!r} ignored" for name in self.unknown]
        notes += [f"tool {name!r} is never offered inside a subtask" for name in self.refused]
        return notes


class ToolSet:
    """The tools one host (or one subtask) may call, bound to a config and a workspace."""

    def __init__(
        self,
        config: LoadedConfig,
        *,
        cwd: str | Path | None = None,
        on_event: EventHandler | None = None,
    ) -> None:
        self.config = config
        self.cwd = existing_directory(cwd or Path.cwd())
        self.on_event = on_event
        self._tools: dict[str, Tool] = {}
        self.origin: ToolSet = self
        """The full set this one was selected from (itself, unless selected): ``spawn`` offers
        its inner loop tools from there, so selecting ``spawn`` alone still offers some."""

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

        async def handler(args: BaseModel, _registry: ToolSet) -> str:
            if inspect.iscoroutinefunction(func):
                return as_tool_text(await func(args))
            return as_tool_text(await anyio.to_thread.run_sync(func, args))

        tool = Tool(tool_name, text, model, handler)
        self.add(tool)
        return tool

    def select(self, names: Iterable[str], *, nesting: bool = True) -> Selection:
        """A set with only ``names`` (in this set's order), same config and cwd.

        Unknown names are left out and reported; with ``nesting`` false (a subtask's
        set) so are ``spawn`` and ``acp_spawn``.
        """
        wanted = list(dict.fromkeys(n.strip() for n in names if n.strip()))
        child = ToolSet(self.config, cwd=self.cwd, on_event=self.on_event)
        child.origin = self.origin
        # A subtask never nests: spawn and acp_spawn are refused as such whether or not this
        # set holds them (a spawn's own set has only the workspace tools).
        refused = [n for n in wanted if n in NESTING_TOOLS and not nesting]
        unknown = [n for n in wanted if n not in self._tools and n not in refused]
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
    def roots(self) -> Roots:
        """The workspace, confined the same way as an ACP agent's roots (never the whole
        filesystem, the home folder or a system folder: a file tool then answers why)."""
        roots = Roots.for_session(self.cwd)
        check_write_roots(roots.write)
        return roots

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
