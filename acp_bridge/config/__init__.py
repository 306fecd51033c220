"""Configuration and agent profiles (docs/explanation/configuration.md).

One config file (``--config``, else ``$ACP_BRIDGE_CONFIG``, else ``./acp-bridge.yaml``, else
``$XDG_CONFIG_HOME/acp-bridge/config.yaml``) plus profile folders: the built-in ``profiles/``
shipped inside the package, then the config's ``profiles_dirs``, then the config's own
``acp.agents`` list (Mistermorph's form). A profile named in a later layer is deep-merged over
the earlier one of the same name.

Every value remembers which file, line and column it came from, so an error names the spot
and ``acp-bridge profiles show`` can say where each value came from. Unknown keys are errors.
``${VAR}`` (and ``${VAR:-default}``, ``$$`` for a dollar) expands from the environment at load;
an unset variable is an error for the profile that uses it, not for the others.

Modules: ``_profile`` (the profile models), ``_settings`` (the rest of the file),
``_sandbox_section``, ``_package`` and ``_fields`` (parts both share), ``_yaml`` (positions,
bounds, the parse cache), ``_expand`` (variables and paths), ``_layers`` (merging,
provenance), ``_catalog`` (every profile by name), ``_load`` (the file search and loading),
``_reuse`` (what stays valid while its files are unchanged), ``_json_schema``.
"""

from acp_bridge._os.limits import MAX_BYTES, MAX_CONCURRENT, MAX_SECONDS
from acp_bridge.config._catalog import BUILTIN_PROFILES_DIR, ProfileCatalog, builtin_profile_files
from acp_bridge.config._expand import expand_vars
from acp_bridge.config._fields import StrictModel
from acp_bridge.config._json_schema import config_json_schema, profile_json_schema
from acp_bridge.config._layers import ProfileLayer, ResolvedProfile, ValueSource, resolve_profile
from acp_bridge.config._load import (
    CONFIG_ENV,
    LOCAL_CONFIG_NAME,
    LoadedConfig,
    find_config_file,
    load_config,
    looks_like_config,
    schema_problems,
    validate_files,
)
from acp_bridge.config._profile import (
    AgentProfile,
    AuthSettings,
    FsSettings,
    McpServer,
    PermissionMode,
    PermissionRule,
    Permissions,
    SessionSettings,
    TerminalSettings,
    Timeouts,
    ToolKind,
)
from acp_bridge.config._sandbox_section import ResolvedSandbox, SandboxMode, SandboxSettings
from acp_bridge.config._settings import (
    PASSTHROUGH_MODEL,
    AcpSection,
    BashToolSettings,
    Config,
    ModelEntry,
    ModelsConfig,
    RetentionSettings,
    RunsSettings,
    SpawnToolSettings,
    SubtasksConfig,
    ToolsConfig,
    TranscriptSettings,
)

__all__ = [
    "BUILTIN_PROFILES_DIR",
    "CONFIG_ENV",
    "LOCAL_CONFIG_NAME",
    "MAX_BYTES",
    "MAX_CONCURRENT",
    "MAX_SECONDS",
    "PASSTHROUGH_MODEL",
    "AcpSection",
    "AgentProfile",
    "AuthSettings",
    "BashToolSettings",
    "Config",
    "FsSettings",
    "LoadedConfig",
    "McpServer",
    "ModelEntry",
    "ModelsConfig",
    "PermissionMode",
    "PermissionRule",
    "Permissions",
    "ProfileCatalog",
    "ProfileLayer",
    "ResolvedProfile",
    "ResolvedSandbox",
    "RetentionSettings",
    "RunsSettings",
    "SandboxMode",
    "SandboxSettings",
    "SessionSettings",
    "SpawnToolSettings",
    "StrictModel",
    "SubtasksConfig",
    "TerminalSettings",
    "Timeouts",
    "ToolKind",
    "ToolsConfig",
    "TranscriptSettings",
    "ValueSource",
    "builtin_profile_files",
    "config_json_schema",
    "expand_vars",
    "find_config_file",
    "load_config",
    "looks_like_config",
    "profile_json_schema",
    "resolve_profile",
    "schema_problems",
    "validate_files",
]
