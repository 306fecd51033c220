"""Configuration and agent profiles (DESIGN §3).

One config file (``--config``, else ``$ACP_BRIDGE_CONFIG``, else ``./acp-bridge.yaml``, else
``$XDG_CONFIG_HOME/acp-bridge/config.yaml``) plus profile folders: the built-in ``profiles/``
shipped inside the package, then the config's ``profiles_dirs``, then the config's own
``acp.agents`` list (Mistermorph's form). A profile named in a later layer is deep-merged over
the earlier one of the same name, mapping by mapping; lists and scalars replace.

Every value remembers which file, line and column it came from, so an error names the spot
and ``acp-bridge profiles show`` can say where each value came from. Unknown keys are errors.
``${VAR}`` (and ``${VAR:-default}``, ``$$`` for a dollar) expands from the environment at load;
an unset variable is an error for the profile that uses it, not for the others.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from acp_bridge.config._yaml import DataPath, YamlDocument, field_name, load_yaml, validate_located
from acp_bridge.errors import (
    ConfigError,
    Problem,
    ProfileError,
    SourceLocation,
    UnknownProfileError,
)

CONFIG_ENV = "ACP_BRIDGE_CONFIG"
LOCAL_CONFIG_NAME = "acp-bridge.yaml"
BUILTIN_PROFILES_DIR = Path(__file__).parent.parent / "profiles"
PROFILE_SUFFIXES = (".yaml", ".yml")

# --- models ---------------------------------------------------------------------------


class StrictModel(BaseModel):
    """Unknown keys are errors, never silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _existing_dir(path: Path) -> Path:
    if not path.exists():
        raise ValueError(f"directory does not exist: {path}")
    if not path.is_dir():
        raise ValueError(f"not a directory: {path}")
    return path


def _existing_file(path: Path) -> Path:
    if not path.is_file():
        raise ValueError(f"file does not exist: {path}")
    return path


def _profile_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", name):
        raise ValueError(
            f"must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit; "
            f"got {name!r}"
        )
    return name


def _env_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(
            f"must be an environment variable name (letters, digits, '_'; no leading digit); "
            f"got {name!r}"
        )
    return name


ExistingDir = Annotated[Path, AfterValidator(_existing_dir)]
ExistingFile = Annotated[Path, AfterValidator(_existing_file)]
PositiveSeconds = Annotated[float, Field(gt=0)]
Name = Annotated[str, AfterValidator(_profile_name)]
EnvName = Annotated[str, AfterValidator(_env_name)]

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
PermissionMode = Literal["deny-all", "read-only", "workspace-write", "approve-all"]


class PermissionRule(StrictModel):
    """First matching rule decides; a rule with no matcher matches every tool call."""

    kind: ToolKind | None = Field(None, description="ACP tool kind the rule applies to")
    title: str | None = Field(
        None, description="glob on the tool call title, case-insensitive (e.g. 'git *')"
    )
    decision: Literal["allow", "reject", "ask"]


class Permissions(StrictModel):
    mode: PermissionMode = Field(
        "workspace-write",
        description="deny-all | read-only | workspace-write (allow when every location of the "
        "tool call is inside the write roots) | approve-all",
    )
    rules: list[PermissionRule] = Field(
        default_factory=list, description="ordered rules, checked before the mode"
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


class TerminalSettings(StrictModel):
    enabled: bool = Field(True, description="serve the terminal/* methods to the agent")
    output_byte_limit: int = Field(
        1_048_576, gt=0, description="most output bytes kept per terminal (the tail is kept)"
    )
    timeout: PositiveSeconds = Field(600, description="seconds one command may run")
    max_concurrent: int = Field(8, gt=0, description="terminals running at once per session")
    max_open: int = Field(
        64,
        gt=0,
        description="terminals created and not yet released per session (each keeps its "
        "output, up to output_byte_limit, until released)",
    )


class FsSettings(StrictModel):
    read: bool = Field(True, description="serve fs/read_text_file to the agent")
    write: bool = Field(True, description="serve fs/write_text_file to the agent")
    max_read_bytes: int = Field(16 * 1_048_576, gt=0)
    max_write_bytes: int = Field(16 * 1_048_576, gt=0)


class AuthSettings(StrictModel):
    method: str | None = Field(
        None, description="authMethods id to authenticate with before session/new"
    )


class McpServer(StrictModel):
    """An MCP server handed to the agent in session/new."""

    name: str
    type: Literal["stdio", "http", "sse"] = "stdio"
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _transport_fields(self) -> McpServer:
        if self.type == "stdio" and not self.command:
            raise ValueError("a stdio MCP server needs a command")
        if self.type != "stdio" and not self.url:
            raise ValueError(f"an {self.type} MCP server needs a url")
        return self


class SessionSettings(StrictModel):
    mode: str | None = Field(None, description="session mode id to switch to, if advertised")
    model: str | None = Field(None, description="model id to select, if advertised")
    config_options: dict[str, str | bool | int | float] = Field(
        default_factory=dict, description="session config option id → value, if advertised"
    )


class AgentProfile(StrictModel):
    """How to start one external ACP agent and what it may touch."""

    name: Name
    description: str = ""
    command: str = Field(min_length=1, description="executable to start; no shell is used")
    args: list[str] = Field(default_factory=list)
    env: dict[EnvName, str] = Field(
        default_factory=dict, description="variables set for the agent; ${VAR} expands at load"
    )
    env_passthrough: list[EnvName] = Field(
        default_factory=list, description="host variables the agent may see"
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
    permissions: Permissions = Field(default_factory=Permissions)
    timeouts: Timeouts = Field(default_factory=Timeouts)
    terminal: TerminalSettings = Field(default_factory=TerminalSettings)
    fs: FsSettings = Field(default_factory=FsSettings)
    auth: AuthSettings = Field(default_factory=AuthSettings)
    mcp_servers: list[McpServer] = Field(default_factory=list)
    session: SessionSettings = Field(default_factory=SessionSettings)
    max_message_bytes: int = Field(
        64 * 1_048_576,
        gt=0,
        description="longest JSON-RPC line accepted from the agent; past it the run fails",
    )
    repair_turns: int = Field(
        1, ge=0, description="extra turns allowed to fix output that breaks output_schema"
    )
    install: str = Field("", description="how to install the command (shown when it is missing)")


class ToolSwitch(StrictModel):
    enabled: bool


class BashToolSettings(StrictModel):
    # No ``enabled`` switch: ``bash`` (plain or run_in_subtask) is always offered.
    timeout: PositiveSeconds = Field(600, description="seconds one command may run by default")
    max_output_bytes: int = Field(
        65_536,
        ge=64,
        description="bytes kept per stream (stdout, stderr): the head and the tail, the middle cut",
    )


class SpawnToolSettings(StrictModel):
    enabled: bool = Field(True, description="offer the explicit spawn tool to host loops")
    timeout: PositiveSeconds = Field(600, description="seconds one spawn run may take")
    max_requests: int = Field(
        25, gt=0, description="model requests one loop may make before it fails"
    )
    repair_turns: int = Field(
        1, ge=0, description="extra turns allowed to fix output that breaks output_schema"
    )


class ToolsConfig(StrictModel):
    bash: BashToolSettings = Field(default_factory=BashToolSettings)
    spawn: SpawnToolSettings = Field(default_factory=SpawnToolSettings)
    acp_spawn: ToolSwitch = Field(default_factory=lambda: ToolSwitch(enabled=False))


PASSTHROUGH_MODEL = "passthrough"


def _model_entry_name(name: str) -> str:
    name = _profile_name(name)
    if name == PASSTHROUGH_MODEL:
        raise ValueError(f"{PASSTHROUGH_MODEL!r} is the built-in offline model; pick another name")
    return name


def _http_url(url: str) -> str:
    if not re.match(r"https?://[^/\s]+", url):
        raise ValueError(f"must be an http:// or https:// URL, got {url!r}")
    return url.rstrip("/")


class ModelEntry(StrictModel):
    """One model behind an OpenAI-compatible chat-completions endpoint."""

    description: str = ""
    provider: Literal["openai", "openai-compatible"] = Field(
        "openai-compatible",
        description="openai: OpenAI's own API (its model profiles); anything else (Ollama, vLLM, "
        "llama.cpp server, OpenRouter, a gateway): openai-compatible",
    )
    base_url: Annotated[str, AfterValidator(_http_url)] = Field(
        description="the API root, e.g. http://127.0.0.1:11434/v1"
    )
    model: str = Field(min_length=1, description="the model id the endpoint knows")
    api_key: str | None = Field(
        None, description="the key itself; write ${VAR} (expanded at load), never the secret"
    )
    api_key_env: EnvName | None = Field(
        None, description="environment variable holding the key, read when the model is used"
    )
    headers: dict[str, str] = Field(
        default_factory=dict, description="extra HTTP headers sent with every request"
    )
    request_timeout: PositiveSeconds = Field(120, description="seconds one model request may take")
    max_retries: int = Field(2, ge=0, description="retries of a failed request (connection, 5xx)")
    temperature: float | None = Field(None, ge=0, le=2)
    max_tokens: int | None = Field(None, gt=0, description="most tokens in one answer")

    @model_validator(mode="after")
    def _one_key_source(self) -> ModelEntry:
        if self.api_key is not None and self.api_key_env is not None:
            raise ValueError("set api_key or api_key_env, not both")
        return self


class ModelsConfig(StrictModel):
    """Models for the local loops (``spawn``, ``ask``); ``passthrough`` is always there."""

    # Declared before ``default`` so that its validator can see the entries.
    entries: dict[Annotated[str, AfterValidator(_model_entry_name)], ModelEntry] = Field(
        default_factory=dict, description="model name → endpoint and model id"
    )
    default: str = Field(
        PASSTHROUGH_MODEL,
        description="model used when a run names none (or an unknown one); "
        "default: the offline passthrough model",
    )

    @field_validator("default")
    @classmethod
    def _known_default(cls, name: str, info: ValidationInfo) -> str:
        entries = info.data.get("entries")
        if entries is None or name == PASSTHROUGH_MODEL or name in entries:
            return name
        known = ", ".join([PASSTHROUGH_MODEL, *sorted(entries)])
        raise ValueError(f"no model named {name!r} in models.entries; known: {known}")


class SubtasksConfig(StrictModel):
    max_depth: int = Field(1, ge=0, description="subtask levels a run may open below the host")


class AcpSection(StrictModel):
    # Entries stay raw here: each is merged over earlier layers and validated on its own,
    # so one broken profile does not make the others unusable.
    agents: list[dict[str, Any]] = Field(default_factory=list)


class TranscriptSettings(StrictModel):
    enabled: bool = Field(True, description="write a JSONL transcript of every ACP run")
    dir: Path | None = Field(
        None, description="where; default $XDG_STATE_HOME/acp-bridge/transcripts"
    )
    keep: int = Field(200, ge=1, description="newest transcripts kept; older ones are deleted")


class Config(StrictModel):
    """The config file's settings (everything except the profiles themselves)."""

    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    subtasks: SubtasksConfig = Field(default_factory=SubtasksConfig)
    models: ModelsConfig = Field(default_factory=ModelsConfig)
    profiles_dirs: list[ExistingDir] = Field(
        default_factory=list, description="extra profile folders, relative to this file"
    )
    schemas: dict[str, ExistingFile] = Field(
        default_factory=dict, description="output_schema label → JSON Schema file"
    )
    transcripts: TranscriptSettings = Field(default_factory=TranscriptSettings)
    acp: AcpSection = Field(default_factory=AcpSection)


# Fields holding paths, resolved against the directory of the file that wrote them.
_PROFILE_PATH_FIELDS: tuple[DataPath, ...] = (("cwd",), ("read_roots", "*"), ("write_roots", "*"))
_CONFIG_PATH_FIELDS: tuple[DataPath, ...] = (
    ("profiles_dirs", "*"),
    ("schemas", "*"),
    ("transcripts", "dir"),
)
_CONFIG_KEYS = frozenset(Config.model_fields)


# --- ${VAR} expansion -----------------------------------------------------------------

_VAR = re.compile(r"\$(?:(?P<dollar>\$)|\{(?P<body>[^}]*)(?P<close>\}?))")
_VAR_BODY = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>.*))?$", re.DOTALL)


def expand_vars(text: str, environ: Mapping[str, str]) -> tuple[str, list[str]]:
    """``text`` with ``${VAR}`` expanded; returns the result and the variables used.

    Raises ValueError with a readable reason on bad syntax or an unset variable.
    """
    used: list[str] = []

    def replace(match: re.Match[str]) -> str:
        if match["dollar"]:
            return "$"
        body = match["body"]
        if not match["close"]:
            raise ValueError(f"unterminated ${{…}} in {text!r}")
        parsed = _VAR_BODY.match(body)
        if parsed is None:
            raise ValueError(
                f"bad variable reference ${{{body}}}: write ${{NAME}} or ${{NAME:-default}}"
            )
        name, default = parsed["name"], parsed["default"]
        used.append(name)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise ValueError(
            f"environment variable {name} is not set (write ${{{name}:-}} to allow it empty)"
        )

    return _VAR.sub(replace, text), used


# --- layers and provenance ------------------------------------------------------------

Origin = Literal["built-in", "profiles dir", "config", "file"]


@dataclass(frozen=True)
class ProfileLayer:
    """One file's contribution to a profile: the mapping at ``prefix`` inside ``doc``."""

    origin: Origin
    doc: YamlDocument
    prefix: DataPath = ()

    @property
    def data(self) -> dict[str, Any]:
        value: Any = self.doc.data
        for part in self.prefix:
            value = value[part]
        return value  # type: ignore[no-any-return]

    @property
    def name(self) -> str:
        return str(self.data.get("name") or self.doc.path.stem)

    def location(self, rel: DataPath = (), *, at_key: bool = False) -> SourceLocation:
        path = (*self.prefix, *rel)
        return self.doc.locate_key(path) if at_key else self.doc.locate(path)

    def field(self, rel: DataPath) -> str:
        return field_name((*self.prefix, *rel))


@dataclass(frozen=True)
class ValueSource:
    """Where one resolved value came from, for ``profiles show``."""

    origin: Origin | Literal["default"]
    location: SourceLocation | None = None
    env_vars: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.origin == "default":
            return "default"
        text = f"{self.origin} {self.location}" if self.location else self.origin
        if self.env_vars:
            text += " via env " + ", ".join(f"${v}" for v in self.env_vars)
        return text


@dataclass(frozen=True)
class ResolvedProfile:
    """A usable profile plus, for each value set in a file, the layer that set it."""

    profile: AgentProfile
    owners: Mapping[DataPath, ProfileLayer]
    env_used: Mapping[DataPath, tuple[str, ...]]

    def source_of(self, path: DataPath) -> ValueSource:
        """Where the value at ``path`` came from (``default`` when no file set it)."""
        for end in range(len(path), 0, -1):
            layer = self.owners.get(path[:end])
            if layer is not None:
                names = tuple(
                    dict.fromkeys(
                        v for p, vs in self.env_used.items() if p[: len(path)] == path for v in vs
                    )
                )
                return ValueSource(layer.origin, layer.location(path), names)
        return ValueSource("default")


class _Merged:
    """Profile layers deep-merged, remembering which layer set each value."""

    def __init__(self, layers: list[ProfileLayer]) -> None:
        self.layers = layers
        self.data: dict[str, Any] = {}
        self.owner: dict[DataPath, ProfileLayer] = {}
        for layer in layers:
            self._merge(self.data, layer.data, (), layer)

    def _merge(
        self, target: dict[str, Any], source: dict[str, Any], path: DataPath, layer: ProfileLayer
    ) -> None:
        for key, value in source.items():
            here = (*path, key)
            if isinstance(value, dict) and isinstance(target.get(key), dict):
                self._merge(target[key], value, here, layer)
                continue
            target[key] = copy.deepcopy(value)
            for stale in [p for p in self.owner if p[: len(here)] == here]:
                del self.owner[stale]
            self.owner[here] = layer

    def layer_of(self, path: DataPath) -> ProfileLayer:
        for end in range(len(path), 0, -1):
            found = self.owner.get(path[:end])
            if found is not None:
                return found
        return self.layers[-1]

    def locate(self, path: DataPath, at_key: bool = False) -> tuple[SourceLocation, str]:
        layer = self.layer_of(path)
        return layer.location(path, at_key=at_key), layer.field(path)

    def problem(self, path: DataPath, message: str) -> Problem:
        where, name = self.locate(path)
        return Problem(message, where, name)


def _walk_strings(data: Any, path: DataPath = ()) -> Iterator[tuple[DataPath, str]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _walk_strings(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _walk_strings(value, (*path, index))
    elif isinstance(data, str):
        yield path, data


def _set(data: Any, path: DataPath, value: Any) -> None:
    for part in path[:-1]:
        data = data[part]
    data[path[-1]] = value


def _matches(pattern: DataPath, path: DataPath) -> bool:
    if len(pattern) != len(path):
        return False
    return all(p in ("*", q) for p, q in zip(pattern, path, strict=True))


def _resolve_path(raw: str, base: Path) -> str:
    path = Path(raw).expanduser()
    return str((path if path.is_absolute() else base / path).resolve())


def _expand_and_resolve(
    data: dict[str, Any],
    path_fields: tuple[DataPath, ...],
    environ: Mapping[str, str],
    base_dir_of: Any,
    problem_at: Any,
) -> tuple[list[Problem], dict[DataPath, tuple[str, ...]]]:
    """Expand ``${VAR}`` in every string and make path fields absolute, in place."""
    problems: list[Problem] = []
    env_used: dict[DataPath, tuple[str, ...]] = {}
    for path, text in list(_walk_strings(data)):
        if path == ("name",):
            continue
        try:
            value, used = expand_vars(text, environ)
        except ValueError as exc:
            problems.append(problem_at(path, str(exc)))
            continue
        if used:
            env_used[path] = tuple(used)
        if any(_matches(pattern, path) for pattern in path_fields):
            value = _resolve_path(value, base_dir_of(path))
        _set(data, path, value)
    return problems, env_used


def resolve_profile(layers: list[ProfileLayer], environ: Mapping[str, str]) -> ResolvedProfile:
    """Merge ``layers``, expand variables, resolve paths and validate: the usable profile."""
    merged = _Merged(layers)
    merged.data.setdefault("name", layers[-1].name)  # a profile file may omit it: its stem
    problems, env_used = _expand_and_resolve(
        merged.data,
        _PROFILE_PATH_FIELDS,
        environ,
        base_dir_of=lambda path: merged.layer_of(path).doc.path.parent,
        problem_at=merged.problem,
    )
    if problems:
        raise ProfileError(problems)
    try:
        profile = validate_located(AgentProfile, merged.data, merged.locate)
    except ConfigError as exc:
        raise ProfileError(exc.problems) from exc
    return ResolvedProfile(profile, dict(merged.owner), env_used)


# --- the catalogue of profiles ---------------------------------------------------------


@dataclass
class ProfileCatalog:
    """Every profile by name, resolved on first use (a run pays only for its own profile).

    Built-in profiles are files named after the profile, so they are parsed only when that
    name is asked for; profiles from folders and the config file are read up front.
    """

    environ: Mapping[str, str]
    builtin: dict[str, Path] = field(default_factory=dict)
    layers: dict[str, list[ProfileLayer]] = field(default_factory=dict)
    errors: dict[str, ProfileError] = field(default_factory=dict)
    _resolved: dict[str, ResolvedProfile] = field(default_factory=dict)

    def names(self) -> list[str]:
        return sorted(set(self.builtin) | set(self.layers))

    def get(self, name: str) -> ResolvedProfile:
        """The usable profile ``name``; raises its ProfileError or UnknownProfileError."""
        if name in self._resolved:
            return self._resolved[name]
        if name not in self.errors:
            if name not in self.builtin and name not in self.layers:
                known = ", ".join(self.names()) or "none"
                raise UnknownProfileError(
                    f"no agent profile named {name!r}; known profiles: {known}"
                )
            try:
                self._resolved[name] = resolve_profile(self._layers_of(name), self.environ)
                return self._resolved[name]
            except ConfigError as exc:
                self.errors[name] = ProfileError(exc.problems)
        raise self.errors[name]

    def _layers_of(self, name: str) -> list[ProfileLayer]:
        layers = list(self.layers.get(name, []))
        if name in self.builtin:
            doc = load_yaml(self.builtin[name])
            problems = _check_profile_root(doc, ())
            if problems:
                raise ProfileError(problems)
            layers.insert(0, ProfileLayer("built-in", doc))
        return layers

    def resolve_all(self) -> dict[str, ProfileError]:
        """Resolve every profile; returns the broken ones (for list and validate)."""
        for name in self.names():
            with contextlib.suppress(ConfigError):
                self.get(name)
        return self.errors

    def usable(self) -> dict[str, ResolvedProfile]:
        """Every profile that resolves, by name (broken ones are left out)."""
        self.resolve_all()
        return {name: self._resolved[name] for name in self.names() if name in self._resolved}

    def add_layer(self, layer: ProfileLayer) -> None:
        self.layers.setdefault(layer.name, []).append(layer)


def builtin_profile_files() -> dict[str, Path]:
    """Built-in profiles by name (each file is named after its profile)."""
    return {p.stem: p for p in _profile_files(BUILTIN_PROFILES_DIR)}


def _profile_files(directory: Path) -> list[Path]:
    if (
        not directory.is_dir()
    ):  # only the built-in folder can be missing (profiles_dirs are checked)
        return []
    return sorted(p for p in directory.iterdir() if p.suffix in PROFILE_SUFFIXES and p.is_file())


def _check_profile_root(doc: YamlDocument, prefix: DataPath) -> list[Problem]:
    """A profile must be a mapping whose ``name``, if given, is a string."""
    value: Any = doc.data
    for part in prefix:
        value = value[part]
    if not isinstance(value, dict):
        got = "an empty file" if value is None and not prefix else f"a {type(value).__name__}"
        return [doc.problem(prefix, f"a profile must be a mapping, got {got}")]
    if "name" in value and not isinstance(value["name"], str):
        return [doc.problem((*prefix, "name"), "must be a string")]
    return []


def _add_group(catalog: ProfileCatalog, layers: list[ProfileLayer]) -> list[Problem]:
    """Add one source's layers; a name twice in the same source is an error of that name."""
    by_name: dict[str, list[ProfileLayer]] = {}
    for layer in layers:
        by_name.setdefault(layer.name, []).append(layer)
    problems = []
    for name, group in by_name.items():
        if len(group) > 1:
            first = group[0]
            dup = [
                Problem(
                    f"duplicate profile name {name!r} (first defined at {first.location()})",
                    later.location(("name",)) if "name" in later.data else later.location(),
                    later.field(("name",)),
                )
                for later in group[1:]
            ]
            catalog.errors[name] = ProfileError(dup)
            problems.extend(dup)
        catalog.add_layer(group[-1])
    return problems


def _load_profile_dir(directory: Path, origin: Origin) -> tuple[list[ProfileLayer], list[Problem]]:
    layers, problems = [], []
    for path in _profile_files(directory):
        try:
            doc = load_yaml(path)
        except ConfigError as exc:
            problems.extend(exc.problems)
            continue
        root_problems = _check_profile_root(doc, ())
        if root_problems:
            problems.extend(root_problems)
            continue
        layers.append(ProfileLayer(origin, doc))
    return layers, problems


# --- the config file -------------------------------------------------------------------


def _with_builtin_vars(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment ``${VAR}`` reads, plus variables acp-bridge defines itself."""
    return {"ACP_BRIDGE_PYTHON": sys.executable, **environ}


def find_config_file(
    explicit: Path | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Path | None:
    """The config file to use, by the search order above; None when there is none."""
    environ = os.environ if environ is None else environ
    if explicit is not None:
        return explicit
    if environ.get(CONFIG_ENV):
        return Path(environ[CONFIG_ENV])
    local = (cwd or Path.cwd()) / LOCAL_CONFIG_NAME
    if local.is_file():
        return local
    xdg = environ.get("XDG_CONFIG_HOME") or str(Path(environ.get("HOME", "~")) / ".config")
    user = Path(xdg).expanduser() / "acp-bridge" / "config.yaml"
    return user if user.is_file() else None


@dataclass
class LoadedConfig:
    """The settings, the profiles and the file they came from (None: defaults only)."""

    path: Path | None
    config: Config
    profiles: ProfileCatalog
    problems: list[Problem] = field(default_factory=list)
    """Problems that made single profile files unusable (a broken file has no name)."""


def _config_doc_settings(doc: YamlDocument, environ: Mapping[str, str]) -> Config:
    if doc.data is None:
        doc.data = {}
    if not isinstance(doc.data, dict):
        raise ConfigError([doc.problem((), "the config file must be a mapping")])
    # Agent entries expand per profile (an unset variable breaks only that profile).
    data = copy.deepcopy({k: v for k, v in doc.data.items() if k != "acp"})
    problems, _ = _expand_and_resolve(
        data,
        _CONFIG_PATH_FIELDS,
        environ,
        base_dir_of=lambda _path: doc.path.parent,
        problem_at=doc.problem,
    )
    if problems:
        raise ConfigError(problems)
    if "acp" in doc.data:
        data["acp"] = doc.data["acp"]

    def locate(path: DataPath, at_key: bool) -> tuple[SourceLocation, str]:
        return (doc.locate_key(path) if at_key else doc.locate(path)), field_name(path)

    return validate_located(Config, data, locate)  # type: ignore[no-any-return]


def load_config(
    path: Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    search: bool = True,
) -> LoadedConfig:
    """Load settings and every profile. Raises ConfigError when the config file is broken.

    With ``search`` false, ``path`` None means "no config file" (built-in profiles only).
    """
    environ = _with_builtin_vars(os.environ if environ is None else environ)
    config_path = find_config_file(path, environ, cwd) if search else path
    catalog = ProfileCatalog(environ, builtin=builtin_profile_files())
    problems: list[Problem] = []
    if config_path is None:
        return LoadedConfig(None, Config(), catalog, problems)

    doc = load_yaml(config_path)
    settings = _config_doc_settings(doc, environ)
    for directory in settings.profiles_dirs:
        layers, dir_problems = _load_profile_dir(directory, "profiles dir")
        problems += dir_problems + _add_group(catalog, layers)
    agent_layers = []
    for index, _entry in enumerate(settings.acp.agents):
        prefix: DataPath = ("acp", "agents", index)
        entry_problems = _check_profile_root(doc, prefix)
        if "name" not in doc.data["acp"]["agents"][index]:
            entry_problems.append(doc.problem(prefix, "every agent needs a name"))
        if entry_problems:
            raise ConfigError(entry_problems)
        agent_layers.append(ProfileLayer("config", doc, prefix))
    problems += _add_group(catalog, agent_layers)
    return LoadedConfig(config_path, settings, catalog, problems)


def looks_like_config(doc: YamlDocument) -> bool:
    """Whether a YAML file is a config file (vs. a single profile file)."""
    return isinstance(doc.data, dict) and bool(_CONFIG_KEYS & set(doc.data))


def validate_files(
    paths: Iterable[Path], *, environ: Mapping[str, str] | None = None
) -> dict[Path, list[Problem]]:
    """Check config files and profile files (folders: every YAML file inside).

    A profile file is checked as if it sat in a profiles dir: over the built-in profile of
    the same name, if any. Returns the problems of each file (empty: the file is fine).
    """
    environ = _with_builtin_vars(os.environ if environ is None else environ)
    files: list[Path] = []
    for path in paths:
        files.extend(_profile_files(path) if path.is_dir() else [path])
    results: dict[Path, list[Problem]] = {}
    for path in files:
        results[path] = _validate_one(path, environ)
    return results


def _validate_one(path: Path, environ: Mapping[str, str]) -> list[Problem]:
    try:
        doc = load_yaml(path)
    except ConfigError as exc:
        return exc.problems
    if looks_like_config(doc):
        try:
            loaded = load_config(path, environ=environ, search=False)
        except ConfigError as exc:
            return exc.problems
        problems = list(loaded.problems)
        for err in loaded.profiles.resolve_all().values():
            problems.extend(p for p in err.problems if p not in problems)
        return problems
    root_problems = _check_profile_root(doc, ())
    if root_problems:
        return root_problems
    catalog = ProfileCatalog(environ, builtin=builtin_profile_files())
    layer = ProfileLayer("file", doc)
    if catalog.builtin.get(layer.name) == path:
        catalog.builtin.pop(layer.name)  # validating a built-in file: not over itself
    catalog.add_layer(layer)
    try:
        catalog.get(layer.name)
    except ConfigError as exc:
        return exc.problems
    return []


# --- JSON Schema for editors --------------------------------------------------------------


def profile_json_schema() -> dict[str, Any]:
    """JSON Schema of one profile file (``command`` may be omitted to override a built-in)."""
    schema = AgentProfile.model_json_schema()
    schema["required"] = [r for r in schema.get("required", []) if r != "command"]
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "acp-bridge agent profile"
    return schema


def config_json_schema() -> dict[str, Any]:
    """JSON Schema of the config file, with ``acp.agents`` items typed as profiles."""
    schema = Config.model_json_schema()
    profile = profile_json_schema()
    defs = schema.setdefault("$defs", {})
    defs.update(profile.pop("$defs", {}))
    profile.pop("$schema")
    defs["AgentProfile"] = profile
    defs["AcpSection"]["properties"]["agents"]["items"] = {"$ref": "#/$defs/AgentProfile"}
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "acp-bridge configuration"
    return schema
