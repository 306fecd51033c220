"""acp-bridge: hand a subtask to an isolated worker, get back one SubtaskResult envelope.

The public API is what ``__all__`` lists; every other module is private.
"""

from acp_bridge._version import __version__
from acp_bridge.ask import ask, ask_sync
from acp_bridge.bash import CommandResult, bash, bash_sync
from acp_bridge.config import AgentProfile, Config, LoadedConfig, load_config
from acp_bridge.envelope import Meta, SchemaRegistry, SubtaskResult
from acp_bridge.errors import (
    AgentError,
    AgentExitedError,
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
from acp_bridge.spawn import spawn, spawn_sync
from acp_bridge.tools import Tool, ToolRegistry

__all__ = [
    "AgentError",
    "AgentExitedError",
    "AgentProfile",
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
    "ask",
    "ask_sync",
    "bash",
    "bash_sync",
    "load_config",
    "spawn",
    "spawn_sync",
]
