"""The config file's settings: tools, models, subtasks, transcripts, runs
(docs/explanation/configuration.md)."""

import re
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from acp_bridge._os.limits import MAX_BYTES, MAX_CONCURRENT, MAX_REPAIR_TURNS
from acp_bridge._records.field_defaults import empty_dict, empty_list, instance_of
from acp_bridge.config._fields import (
    EnvName,
    ExistingDir,
    ExistingFile,
    PositiveSeconds,
    StrictModel,
    profile_name,
)
from acp_bridge.config._sandbox_section import SandboxSettings


class ToolSwitch(StrictModel):
    enabled: bool = Field(description="offer the tool to host loops")


class BashToolSettings(StrictModel):
    # No ``enabled`` switch: ``bash`` (plain or run_in_subtask) is always offered.
    timeout: PositiveSeconds = Field(600, description="seconds one command may run by default")
    max_output_bytes: int = Field(
        65_536,
        ge=64,
        le=MAX_BYTES,
        description="bytes kept per stream (stdout, stderr): the head and the tail, the middle cut",
    )


class SpawnToolSettings(StrictModel):
    enabled: bool = Field(True, description="offer the explicit spawn tool to host loops")
    timeout: PositiveSeconds = Field(600, description="seconds one spawn run may take")
    max_requests: int = Field(
        25, gt=0, le=10_000, description="model requests one loop may make before it fails"
    )
    repair_turns: int = Field(
        1,
        ge=0,
        le=MAX_REPAIR_TURNS,
        description="extra turns allowed to fix output that breaks output_schema",
    )


class ToolsConfig(StrictModel):
    bash: BashToolSettings = Field(
        default_factory=instance_of(BashToolSettings),
        description="the bash entry and tool (always on)",
    )
    spawn: SpawnToolSettings = Field(
        default_factory=instance_of(SpawnToolSettings), description="the spawn entry and tool"
    )
    acp_spawn: ToolSwitch = Field(
        default_factory=lambda: ToolSwitch(enabled=False),
        description="whether host loops are offered the acp_spawn tool (default: no, as in "
        "Mistermorph)",
    )


PASSTHROUGH_MODEL = "passthrough"


def _model_entry_name(name: str) -> str:
    name = profile_name(name)
    if name == PASSTHROUGH_MODEL:
        raise ValueError(f"{PASSTHROUGH_MODEL!r} is the built-in offline model; pick another name")
    return name


def _http_url(url: str) -> str:
    if not re.match(r"https?://[^/\s]+", url):
        raise ValueError(f"must be an http:// or https:// URL, got {url!r}")
    return url.rstrip("/")


class ModelEntry(StrictModel):
    """One model behind an OpenAI-compatible chat-completions endpoint."""

    description: str = Field("", description="what the model is good for")
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
        default_factory=empty_dict, description="extra HTTP headers sent with every request"
    )
    request_timeout: PositiveSeconds = Field(120, description="seconds one model request may take")
    max_retries: int = Field(
        2, ge=0, le=100, description="retries of a failed request (connection, 5xx)"
    )
    temperature: float | None = Field(None, ge=0, le=2)
    max_tokens: int | None = Field(
        None, gt=0, le=100_000_000, description="most tokens in one answer"
    )

    @model_validator(mode="after")
    def _one_key_source(self) -> Self:
        if self.api_key is not None and self.api_key_env is not None:
            raise ValueError("set api_key or api_key_env, not both")
        return self


class ModelsConfig(StrictModel):
    """Models for the local loops (``spawn``, ``ask``); ``passthrough`` is always there."""

    # Declared before ``default`` so that its validator can see the entries.
    entries: dict[Annotated[str, AfterValidator(_model_entry_name)], ModelEntry] = Field(
        default_factory=empty_dict, description="model name → endpoint and model id"
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
    max_depth: int = Field(
        1, ge=0, le=16, description="subtask levels a run may open below the host"
    )


class AcpSection(StrictModel):
    # Entries stay raw here: each is merged over earlier layers and validated on its own,
    # so one broken profile does not make the others unusable.
    agents: list[dict[str, Any]] = Field(
        default_factory=empty_list,
        description="agent profiles (Mistermorph's acp.agents form), each laid over the "
        "built-in or folder profile of the same name",
    )


class TranscriptSettings(StrictModel):
    enabled: bool = Field(True, description="write a JSONL transcript of every ACP run")
    dir: Path | None = Field(
        None, description="where; default $XDG_STATE_HOME/acp-bridge/transcripts"
    )
    keep: int = Field(
        200, ge=1, le=100_000, description="newest transcripts kept; older ones are deleted"
    )
    max_bytes: int = Field(
        64 << 20,
        ge=4096,
        le=MAX_BYTES,
        description="most bytes one transcript may take; past it a note line says it was cut "
        "and the rest is left out",
    )


MAX_EVENTS = 1_000_000
"""The most events one run may keep in the run store (each is up to 64 KiB of JSON)."""
MAX_RETENTION_DAYS = 36_500.0
MAX_SUPERVISOR_IDLE = 3600.0


class RetentionSettings(StrictModel):
    days: float | None = Field(
        30,
        gt=0,
        le=MAX_RETENTION_DAYS,
        description="ended runs are deleted this many days after they ended; null: never",
    )
    keep: int | None = Field(
        None, ge=0, le=10_000_000, description="at most this many ended runs are kept, newest first"
    )


class RunsSettings(StrictModel):
    """The run store: what is recorded, how many detached runs run at once
    (docs/explanation/runs.md)."""

    record: bool = Field(
        True,
        description="record foreground runs in the run store too (detached runs always are)",
    )
    max_concurrent: int | None = Field(
        None,
        gt=0,
        le=MAX_CONCURRENT,
        description="detached runs running at once over all lanes; later ones wait, first in "
        "first out; null: no limit",
    )
    max_events: int = Field(
        10_000, ge=2, le=MAX_EVENTS, description="live events a detached run keeps for logs"
    )
    supervisor_idle: float = Field(
        2,
        ge=0,
        le=MAX_SUPERVISOR_IDLE,
        description="seconds a supervisor of detached runs waits for more runs from the same "
        "environment once it has none left (they then start without a new process); 0: it "
        "exits as its last run ends; formerly runner_idle (still read, with a warning)",
    )
    retention: RetentionSettings = Field(
        default_factory=instance_of(RetentionSettings),
        description="how long ended runs are kept (supervisors prune hourly; acp-bridge prune)",
    )


class Config(StrictModel):
    """The config file's settings (everything except the profiles themselves)."""

    tools: ToolsConfig = Field(
        default_factory=instance_of(ToolsConfig), description="the tools host loops are offered"
    )
    subtasks: SubtasksConfig = Field(
        default_factory=instance_of(SubtasksConfig),
        description="the one depth limit of every entry",
    )
    models: ModelsConfig = Field(
        default_factory=instance_of(ModelsConfig),
        description="models of the local loops (spawn, ask)",
    )
    profiles_dirs: list[ExistingDir] = Field(
        default_factory=empty_list, description="extra profile folders, relative to this file"
    )
    schemas: dict[str, ExistingFile] = Field(
        default_factory=empty_dict, description="output_schema label → JSON Schema file"
    )
    transcripts: TranscriptSettings = Field(
        default_factory=instance_of(TranscriptSettings),
        description="the JSONL transcripts of ACP runs",
    )
    sandbox: SandboxSettings = Field(
        default_factory=instance_of(SandboxSettings),
        description="the default sandbox of every profile, and the bash entry's",
    )
    runs: RunsSettings = Field(
        default_factory=instance_of(RunsSettings),
        description="the run store: recording, lanes, retention (docs/how-to/runs.md)",
    )
    acp: AcpSection = Field(
        default_factory=instance_of(AcpSection),
        description="agent profiles in the config file itself",
    )
