"""acp-bridge: hand a subtask to an isolated worker, get back one SubtaskResult envelope.

The public API is what ``__all__`` lists; every other module is private. Names are loaded
on first use, so ``import acp_bridge`` is cheap and the bundled demo agent (a submodule)
starts without loading pydantic.
"""

from __future__ import annotations

import importlib

from acp_bridge._version import __version__

# Not typing.TYPE_CHECKING: importing typing costs the demo agent (a submodule, so this file
# runs first) ~12 ms of start-up. Type checkers treat this name the same way.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from acp_bridge._acp.services.permissions import PermissionHook, PermissionQuestion
    from acp_bridge._entries.acp_agent import acp_spawn, acp_spawn_sync
    from acp_bridge._entries.host import ask, ask_sync
    from acp_bridge._entries.inner import spawn, spawn_sync
    from acp_bridge._entries.shell import CommandResult, bash, bash_sync
    from acp_bridge._entries.tools import Tool, ToolRegistry
    from acp_bridge.config import AgentProfile, Config, LoadedConfig, load_config
    from acp_bridge.envelope import Meta, SchemaRegistry, SubtaskResult
    from acp_bridge.errors import (
        AgentError,
        AgentExitedError,
        AgentRequestError,
        AuthRequiredError,
        BridgeError,
        ConfigError,
        DepthLimitError,
        ErrorCode,
        ModelError,
        OutputSchemaError,
        ProfileError,
        ProtocolError,
        RunCancelled,
        RunTimeout,
        SandboxViolation,
        SpawnError,
        TurnLimitError,
        UnknownProfileError,
    )
    from acp_bridge.events import Event, EventHandler

_MODULES: dict[str, tuple[str, ...]] = {
    "acp_bridge._entries.acp_agent": ("acp_spawn", "acp_spawn_sync"),
    "acp_bridge._entries.host": ("ask", "ask_sync"),
    "acp_bridge._entries.shell": ("CommandResult", "bash", "bash_sync"),
    "acp_bridge._acp.services.permissions": ("PermissionHook", "PermissionQuestion"),
    "acp_bridge.config": ("AgentProfile", "Config", "LoadedConfig", "load_config"),
    "acp_bridge.envelope": ("Meta", "SchemaRegistry", "SubtaskResult"),
    "acp_bridge.events": ("Event", "EventHandler"),
    "acp_bridge._entries.inner": ("spawn", "spawn_sync"),
    "acp_bridge._entries.tools": ("Tool", "ToolRegistry"),
    "acp_bridge.errors": (
        "AgentError", "AgentExitedError", "AgentRequestError", "AuthRequiredError",
        "BridgeError", "ConfigError", "DepthLimitError", "ErrorCode", "ModelError",
        "OutputSchemaError", "ProfileError", "ProtocolError", "RunCancelled", "RunTimeout",
        "SandboxViolation", "SpawnError", "TurnLimitError", "UnknownProfileError",
    ),
}  # fmt: skip
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [
    "AgentError",
    "AgentExitedError",
    "AgentProfile",
    "AgentRequestError",
    "AuthRequiredError",
    "BridgeError",
    "CommandResult",
    "Config",
    "ConfigError",
    "DepthLimitError",
    "ErrorCode",
    "Event",
    "EventHandler",
    "LoadedConfig",
    "Meta",
    "ModelError",
    "OutputSchemaError",
    "PermissionHook",
    "PermissionQuestion",
    "ProfileError",
    "ProtocolError",
    "RunCancelled",
    "RunTimeout",
    "SandboxViolation",
    "SchemaRegistry",
    "SpawnError",
    "SubtaskResult",
    "Tool",
    "ToolRegistry",
    "TurnLimitError",
    "UnknownProfileError",
    "__version__",
    "acp_spawn",
    "acp_spawn_sync",
    "ask",
    "ask_sync",
    "bash",
    "bash_sync",
    "load_config",
    "spawn",
    "spawn_sync",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'acp_bridge' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
