"""acp-bridge: hand a subtask to an isolated worker, get back one SubtaskResult envelope.

The public API is what ``__all__`` lists; every other module is private.
"""

from acp_bridge._version import __version__
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
    OutputSchemaError,
    ProfileError,
    ProtocolError,
    RunCancelled,
    RunTimeout,
    SandboxViolation,
    SpawnError,
    UnknownProfileError,
)

__all__ = [
    "AgentError",
    "AgentExitedError",
    "AgentProfile",
    "AuthRequiredError",
    "BridgeError",
    "Config",
    "ConfigError",
    "DepthLimitError",
    "ErrorCode",
    "LoadedConfig",
    "Meta",
    "OutputSchemaError",
    "ProfileError",
    "ProtocolError",
    "RunCancelled",
    "RunTimeout",
    "SandboxViolation",
    "SchemaRegistry",
    "SpawnError",
    "SubtaskResult",
    "UnknownProfileError",
    "__version__",
    "load_config",
]
