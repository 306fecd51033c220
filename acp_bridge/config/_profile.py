"""Agent profiles: how to start one external ACP agent and what it may touch
(docs/explanation/configuration.md).

Every model is strict (unknown keys are errors) and every number has a documented maximum
(``MAX_SECONDS`` for times, ``MAX_BYTES`` for sizes, ``MAX_COUNT`` for counts): a value that
would exhaust memory or never end (``output_byte_limit: 1e13``) is a config error at load,
not a crash mid-run.
"""

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, BeforeValidator, Field, PrivateAttr, model_validator

from acp_bridge._os.limits import (
    MAX_BYTES,
    MAX_CONCURRENT,
    MAX_COUNT,
    MAX_IDLE,
    MAX_REPAIR_TURNS,
    MAX_SECONDS,
)
from acp_bridge._os.redact import looks_secret
from acp_bridge._records.field_defaults import empty_dict, empty_list, instance_of
from acp_bridge.config._fields import (
    EnvName,
    ExistingDir,
    Name,
    PositiveSeconds,
    StrictModel,
    program,
)
from acp_bridge.config._package import PackageSpec
from acp_bridge.config._sandbox_section import IsolationMode, KeepWorktree, SandboxSettings

ToolKind = Literal[
    "read",
    "edit",
    "delete",
    "move",
    "search",
    "execute",
    "think",
    "fetch",
    "switch_mode",
    "other",
]
"""The kinds of tool call an ACP agent declares, as permission rules name them."""
PermissionMode = Literal["deny-all", "read-only", "workspace-write", "approve-all"]


def _version_number(value: object) -> object:
    """``protocol: 1`` as the docs write it, unquoted: YAML reads a number. A bool is not
    one (``True == 1`` in Python), so ``protocol: true`` stays an error."""
    if type(value) is int and value in (1, 2):
        return str(value)
    return value


def _command_pattern(pattern: str) -> str:
    from acp_bridge._os.cmdline import parse_line

    parsed = parse_line(pattern)
    if not parsed.simple:
        raise ValueError(
            "must be the leading words of one command (globs allowed), "
            f"without shell operators: got {pattern!r}"
        )
    return pattern


class PermissionRule(StrictModel):
    """First matching rule decides; a rule with no matcher matches every tool call.

    ``command`` matches the *parsed* command (see docs/how-to/configure.md): its words must
    begin with the pattern's words. An ``allow`` rule (by ``command`` or, for ``execute``
    tool calls, by ``title``) never matches a line of several commands (``;``, ``&&``,
    ``|``, newline, redirection…) unless it says ``compound: true``; a ``reject`` or ``ask``
    rule matches if any command of the line does."""

    kind: ToolKind | None = Field(None, description="ACP tool kind the rule applies to")
    name: str | None = Field(
        None,
        description="glob on the tool's programmatic name (ACP ToolCall.name, e.g. "
        "'mcp__acp_bridge__*'), case-sensitive; a tool call without a name never matches",
    )
    title: str | None = Field(
        None, description="glob on the tool call title, case-insensitive (e.g. 'git *')"
    )
    command: Annotated[str, AfterValidator(_command_pattern)] | None = Field(
        None,
        description="the command's leading words, each a glob (e.g. 'npm test', 'git *'), "
        "matched on the parsed command line, never on the raw text",
    )
    compound: bool = Field(
        False,
        description="allow rules only: also match a line of several commands (; && || | & "
        "newline, redirections) when every one of them matches; $(…), backticks, subshells "
        "and NAME=value prefixes never match",
    )
    decision: Literal["allow", "reject", "ask"] = Field(
        description="allow or reject the tool call, or ask the host (its permission hook)"
    )


class Permissions(StrictModel):
    mode: PermissionMode = Field(
        "workspace-write",
        description="deny-all | read-only | workspace-write (allow when every location of the "
        "tool call is inside the write roots) | approve-all",
    )
    rules: list[PermissionRule] = Field(
        default_factory=empty_list, description="ordered rules, checked before the mode"
    )


class Timeouts(StrictModel):
    startup: PositiveSeconds = Field(30, description="seconds from spawn to initialize reply")
    session: PositiveSeconds = Field(60, description="seconds for auth + session setup")
    run: PositiveSeconds = Field(600, description="seconds for the prompt turn")
    cancel_grace: PositiveSeconds = Field(
        5, description="seconds to wait for stopReason cancelled after session/cancel"
    )
    shutdown_grace: PositiveSeconds = Field(
        3, description="seconds between each step of the shutdown sequence"
    )
    stall: float = Field(
        0,
        ge=0,
        le=MAX_SECONDS,
        description="seconds a prompt turn may show no progress (no update, no request from "
        "the agent, none of its requests being served) before it is cancelled and the run "
        "ends with error_code stalled; resets on every sign of progress; 0: no limit",
    )
    idle: float = Field(
        0,
        ge=0,
        le=MAX_IDLE,
        description="seconds a detached run's agent is kept alive after its turn, for a "
        "follow-up turn (acp-bridge send) in the same process; 0: never kept (a follow-up "
        "resumes or loads the session instead)",
    )


class TerminalSettings(StrictModel):
    enabled: bool = Field(True, description="serve the terminal/* methods to the agent")
    output_byte_limit: int = Field(
        1_048_576,
        gt=0,
        le=MAX_BYTES,
        description="most output bytes kept per terminal (the tail is kept)",
    )
    timeout: PositiveSeconds = Field(600, description="seconds one command may run")
    max_concurrent: int = Field(
        8, gt=0, le=MAX_COUNT, description="terminals running at once per session"
    )
    max_open: int = Field(
        64,
        gt=0,
        le=MAX_COUNT,
        description="terminals created and not yet released per session (each keeps its "
        "output, up to output_byte_limit, until released)",
    )


class FsSettings(StrictModel):
    read: bool = Field(True, description="serve fs/read_text_file to the agent")
    write: bool = Field(True, description="serve fs/write_text_file to the agent")
    max_read_bytes: int = Field(16 * 1_048_576, gt=0, le=MAX_BYTES)
    max_write_bytes: int = Field(16 * 1_048_576, gt=0, le=MAX_BYTES)


class AuthSettings(StrictModel):
    method: str | None = Field(
        None, description="authMethods id to authenticate with before session/new"
    )
    env: list[EnvName] = Field(
        default_factory=empty_list,
        description="variables that authenticate the agent (any one of them will do); "
        "acp-bridge doctor says whether one is set, and names them in its fix when the agent "
        "asks for a key",
    )
    files: list[Path] = Field(
        default_factory=empty_list,
        description="the agent's own login or model config files (any one of them will do), "
        "expanded from the agent's environment as sandbox.state is; acp-bridge doctor says "
        "whether one exists",
    )
    checked_by_session: bool = Field(
        True,
        description="the agent refuses session/new (or reports its auth) when it has no key, "
        "login or model to answer a prompt with; false for an agent that opens sessions "
        "regardless (opencode): acp-bridge doctor then calls it ready only when one of "
        "auth.env is set or one of auth.files exists",
    )


class McpServer(StrictModel):
    """An MCP server handed to the agent in session/new."""

    name: str = Field(description="the server's name, as the agent will show it")
    type: Literal["stdio", "http", "sse"] = Field("stdio", description="its transport")
    command: str | None = Field(None, description="stdio: the executable the agent starts")
    args: list[str] = Field(default_factory=empty_list, description="stdio: its arguments")
    env: dict[str, str] = Field(
        default_factory=empty_dict, description="stdio: its variables (secrets are redacted)"
    )
    url: str | None = Field(None, description="http / sse: where it listens")
    headers: dict[str, str] = Field(
        default_factory=empty_dict, description="http / sse: headers sent (secrets are redacted)"
    )

    @model_validator(mode="after")
    def _transport_fields(self) -> Self:
        if self.type == "stdio" and not self.command:
            raise ValueError("a stdio MCP server needs a command")
        if self.type != "stdio" and not self.url:
            raise ValueError(f"an {self.type} MCP server needs a url")
        return self


class SessionSettings(StrictModel):
    mode: str | None = Field(None, description="session mode id to switch to, if advertised")
    model: str | None = Field(None, description="model id to select, if advertised")
    system_prompt: str | None = Field(
        None,
        description="instructions added to the agent's own (ACP systemPrompt, append mode), "
        "sent only to an agent that advertises it; one that does not fails the run",
    )
    config_options: dict[str, str | bool | int | float] = Field(
        default_factory=empty_dict, description="session config option id → value, if advertised"
    )


class AgentProfile(StrictModel):
    """How to start one external ACP agent and what it may touch."""

    name: Name = Field(description="the profile's name: acp-bridge run NAME …")
    description: str = Field("", description="what the agent is, for people and host models")
    enable: bool = Field(
        True, description="false: the profile is kept but refused (Mistermorph's switch)"
    )
    type: Literal["stdio"] = Field(
        "stdio", description="transport to the agent: stdio, the only one (Mistermorph's key)"
    )
    command: Annotated[str, AfterValidator(program)] = Field(
        min_length=1, description="executable to start; no shell is used"
    )
    args: list[str] = Field(
        default_factory=empty_list, description="its arguments (a list: no shell)"
    )
    env: dict[EnvName, str] = Field(
        default_factory=empty_dict,
        description="variables set for the agent; ${VAR} expands at load",
    )
    env_passthrough: list[EnvName] = Field(
        default_factory=empty_list, description="host variables the agent may see"
    )
    cwd: ExistingDir | None = Field(
        None, description="session cwd, relative to this file; default: the caller's cwd"
    )
    read_roots: list[ExistingDir] | None = Field(
        None, description="where fs reads may go; default: the session cwd"
    )
    write_roots: list[ExistingDir] | None = Field(
        None, description="where fs writes may go; default: the session cwd"
    )
    permissions: Permissions = Field(
        default_factory=instance_of(Permissions), description="how permission requests are decided"
    )
    timeouts: Timeouts = Field(
        default_factory=instance_of(Timeouts), description="the run's deadlines"
    )
    terminal: TerminalSettings = Field(
        default_factory=instance_of(TerminalSettings), description="the terminal/* methods served"
    )
    fs: FsSettings = Field(
        default_factory=instance_of(FsSettings), description="the fs/* methods served"
    )
    auth: AuthSettings = Field(
        default_factory=instance_of(AuthSettings), description="how it authenticates"
    )
    mcp_servers: list[McpServer] = Field(
        default_factory=empty_list, description="MCP servers handed to the agent in session/new"
    )
    session: SessionSettings = Field(
        default_factory=instance_of(SessionSettings),
        description="mode, model and config options set after session/new (each only if "
        "the agent offers it; a warning when it does not)",
    )
    session_options: dict[str, str | bool | int | float] = Field(
        default_factory=empty_dict,
        description="Mistermorph's name for session.config_options (those win where both "
        "set an option)",
    )
    max_message_bytes: int = Field(
        32 * 1_048_576,
        ge=4096,
        le=MAX_BYTES,
        description="longest JSON-RPC line accepted from the agent; past it the run fails "
        "(held whole until its end: memory)",
    )
    repair_turns: int = Field(
        1,
        ge=0,
        le=MAX_REPAIR_TURNS,
        description="extra turns allowed to fix output that breaks output_schema",
    )
    unstable: bool = Field(
        False,
        description="allow unstable ACP methods and capabilities the agent advertises "
        "(session/fork, subagent sessions, plan operations); off by default, like --unstable",
    )
    protocol: Annotated[
        Literal["auto", "1", "2"],
        BeforeValidator(_version_number, json_schema_input_type=Literal["auto", "1", "2", 1, 2]),
    ] = Field(
        "1",
        description="ACP wire version: 1 (stable), 2 (the v2 Preview: a v1-only agent is then "
        "an error), or auto (ask for 2, speak 1 with an agent that answers 1 or whose v2 "
        "session setup does not validate)",
    )
    services: Literal["acp", "mcp", "both"] = Field(
        "acp",
        description="how a v1 agent gets the bridge's files and terminals: acp (the fs/* and "
        "terminal/* methods), mcp (an MCP server in session/new), or both; a v2 agent always "
        "gets the MCP server (v2 has no fs/* or terminal/*)",
    )
    install: str = Field("", description="how to install the command (shown when it is missing)")
    package: PackageSpec | None = Field(
        None,
        description="the npm or PyPI package (exact version) that provides the command: "
        "acp-bridge agents install NAME puts it in a managed prefix, where the profile finds it",
    )
    min_version: str | None = Field(
        None, description="oldest version of the command known to work (acp-bridge doctor)"
    )
    checked: str | None = Field(
        None,
        description="the agent version the compatibility matrix proved (tests/compat; its "
        "table is docs/reference/compatibility.md): every scenario passed or is impossible "
        "offline for a stated reason, as root and as an unprivileged user; null: not proved",
    )
    version_args: list[str] = Field(
        default_factory=lambda: ["--version"],
        description="arguments that make the command print its version",
    )
    sandbox: SandboxSettings = Field(
        default_factory=instance_of(SandboxSettings),
        description="how the agent process is confined by the OS, over the config's sandbox",
    )
    isolation: IsolationMode = Field(
        "none",
        description="worktree: in a git repository, each run works in a fresh worktree on its "
        "own branch acp-bridge/<task_id>",
    )
    keep_worktree: KeepWorktree = Field(
        "changed", description="which worktrees are kept after a run: changed | always | never"
    )
    max_concurrent: int | None = Field(
        None,
        gt=0,
        le=MAX_CONCURRENT,
        description="detached runs of this profile running at once; later ones wait, first in "
        "first out (runs.max_concurrent caps all lanes together); null: no limit",
    )

    _from_secrets: frozenset[tuple[str | int, ...]] = PrivateAttr(frozenset())
    _secret_parts: tuple[str, ...] = PrivateAttr(())

    @model_validator(mode="after")
    def _mistermorph_session_options(self) -> Self:
        """``session_options`` (Mistermorph) are config options, set as ours are."""
        if self.session_options:
            merged = {**self.session_options, **self.session.config_options}
            session = self.session.model_copy(update={"config_options": merged})
            object.__setattr__(self, "session", session)  # frozen: set once, while validating
        return self

    def mark_from_environment(
        self,
        used: Mapping[tuple[str | int, ...], tuple[str, ...]],
        environ: Mapping[str, str] | None = None,
    ) -> None:
        """Remember which values were expanded from ``${VAR}``\\ s under a secret-looking
        name (``${OPENAI_API_KEY}``), and those variables' values (from ``environ``): a
        secret inside a longer value (``Bearer ${TOKEN}``, a JSON config) is one too."""
        secret = {path: names for path, names in used.items() if any(map(looks_secret, names))}
        self._from_secrets = frozenset(secret)
        names = {name for found in secret.values() for name in found if looks_secret(name)}
        self._secret_parts = tuple((environ or {}).get(name, "") for name in sorted(names))

    def secret_values(self) -> list[str]:
        """Values given to the agent that must never be shown, by the one redaction policy
        (``_os/redact.py``): in its ``env`` and in the ``env`` and ``headers`` of its MCP
        servers, those under a secret-looking name and those expanded from a variable with
        one, and those variables' own values. A value expanded from ``${HOME}`` or
        ``${XDG_DATA_HOME}`` is a path, not a secret: the errors that name it must show it."""
        named: list[tuple[tuple[str | int, ...], str, str]] = [
            (("env", k), k, v) for k, v in self.env.items()
        ]
        for index, server in enumerate(self.mcp_servers):
            for part, mapping in (("env", server.env), ("headers", server.headers)):
                named += [(("mcp_servers", index, part, k), k, v) for k, v in mapping.items()]
        values = [
            value for path, name, value in named if looks_secret(name) or path in self._from_secrets
        ]
        return values + [part for part in self._secret_parts if part]
