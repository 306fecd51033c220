"""Wire types of the ``initialize`` handshake (protocol v1): what each side can do, who it is,
and how the agent may be authenticated (``authenticate``).

Same rules as schema.py (whose :class:`Wire` base these share): tolerant reading, exact
writing.
"""

from typing import Any

from pydantic import Field

from acp_bridge._acp.wire.schema import PROTOCOL_VERSION, Wire
from acp_bridge._records.field_defaults import empty_list, instance_of


class Implementation(Wire):
    name: str
    title: str | None = None
    version: str = ""


class FsCapabilities(Wire):
    read_text_file: bool = False
    write_text_file: bool = False


class Empty(Wire):
    """A capability that is on when present: ``{}``."""


class ConfigOptionsCapabilities(Wire):
    boolean: Empty | None = None


class ClientSessionCapabilities(Wire):
    config_options: ConfigOptionsCapabilities | None = None
    notices: Empty | None = None  # live `notice` updates: shown as events, kept in meta
    compaction: Empty | None = None  # `compaction_update` / `compaction_summary_chunk`


class ElicitationCapabilities(Wire):
    # Each mode is supported only when present (ACP differs from MCP here: {} is no mode).
    form: Empty | None = None
    url: Empty | None = None


class ClientCapabilities(Wire):
    fs: FsCapabilities = Field(default_factory=instance_of(FsCapabilities))
    terminal: bool = False
    session: ClientSessionCapabilities | None = None
    elicitation: ElicitationCapabilities | None = None
    # Unstable in v1 (sent only with the profile's `unstable: true`): child sessions and
    # plan operations (`plan_update` / `plan_removed`).
    subagents: Empty | None = None
    plan: Empty | None = None


class InitializeParams(Wire):
    protocol_version: int = PROTOCOL_VERSION
    client_capabilities: ClientCapabilities
    client_info: Implementation


class McpCapabilities(Wire):
    http: bool = False
    sse: bool = False
    stdio: bool = True  # every v1 agent takes stdio servers; a v2 agent says so


class PromptCapabilities(Wire):
    image: bool = False
    audio: bool = False
    embedded_context: bool = False


class AgentCapabilities(Wire):
    load_session: bool = False
    prompt_capabilities: PromptCapabilities = Field(default_factory=instance_of(PromptCapabilities))
    mcp_capabilities: McpCapabilities = Field(default_factory=instance_of(McpCapabilities))
    # Each entry is an empty object when supported (close, list, resume, additionalDirectories…).
    session_capabilities: dict[str, Any] | None = None
    auth: dict[str, Any] | None = None  # {"logout": {}} when logout is offered

    def session_supports(self, name: str) -> bool:
        caps = self.session_capabilities
        return isinstance(caps, dict) and caps.get(name) is not None

    @property
    def logout(self) -> bool:
        return isinstance(self.auth, dict) and self.auth.get("logout") is not None


class AuthEnvVar(Wire):
    name: str
    label: str | None = None
    secret: bool = True
    optional: bool = False


class AuthMethod(Wire):
    """An advertised auth method. ``type``: absent/"agent", "env_var", "terminal", or newer."""

    id: str
    name: str = ""
    description: str | None = None
    type: str = "agent"
    vars: list[AuthEnvVar] = Field(default_factory=empty_list)
    link: str | None = None
    args: list[str] = Field(default_factory=empty_list)


class InitializeResult(Wire):
    protocol_version: int
    agent_capabilities: AgentCapabilities = Field(default_factory=instance_of(AgentCapabilities))
    auth_methods: list[AuthMethod] = Field(default_factory=empty_list)
    agent_info: Implementation | None = None


class AuthenticateParams(Wire):
    method_id: str
