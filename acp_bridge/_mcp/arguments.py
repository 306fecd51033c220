"""What each MCP tool takes: one pydantic model per tool, checked once.

A tool's input schema is generated from its model (so what is listed is what is checked),
and the entry tools' models turn into the one request shape every front end uses,
:class:`~acp_bridge.EntryRequest`. Bad arguments raise :class:`~acp_bridge.ConfigError`
whose problems name the field (``agent: no ready profile 'x'; ready: demo``), before
anything starts.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from acp_bridge._entries.request import EntryRequest
from acp_bridge._os.limits import MAX_COST, MAX_TOKENS
from acp_bridge.config import MAX_SECONDS
from acp_bridge.config._sandbox import IsolationMode
from acp_bridge.errors import ConfigError, Problem
from acp_bridge.events import ObserveProfile

OptionValue = str | bool | int | float
TASK_ID_LIMIT = 64
"""Characters of a task id (``check_task_id``'s rule): a longer one names no run."""


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _RunArgs(_Args):
    """What every entry tool takes besides its task."""

    cwd: str | None = Field(
        None,
        description="working directory (default: the profile's for acp_spawn, else the "
        "directory the MCP server runs in)",
    )
    timeout: float | None = Field(
        None, gt=0, le=MAX_SECONDS, description="seconds the run may take (default: the config's)"
    )
    observe_profile: ObserveProfile | None = Field(
        None,
        description="which live events become progress notifications: default, long_shell "
        "(plus command output), web_extract",
    )


class AcpSpawnArgs(_RunArgs):
    agent: str = Field(description="the agent profile to run")
    task: str = Field(min_length=1, description="what the agent must do, self-contained")
    output_schema: str | None = Field(
        None, description="contract label: the agent must answer with JSON under it"
    )
    mode: str | None = Field(None, description="session mode id to set (e.g. plan)")
    model: str | None = Field(None, description="the agent's model id to select")
    config_options: dict[str, OptionValue] | None = Field(
        None, description="session config option id → value to set"
    )
    resume: str | None = Field(None, description="continue this earlier session id")
    isolation: IsolationMode | None = Field(
        None, description="worktree: run in a fresh git worktree (default: the profile's)"
    )

    def request(self) -> EntryRequest:
        return _request("acp_spawn", self.model_dump(exclude_none=True))


class SpawnArgs(_RunArgs):
    task: str = Field(min_length=1, description="what the inner agent must do, self-contained")
    tools: list[str] = Field(min_length=1, description="names of the tools it may use")
    model: str | None = Field(None, description="a model name from the config's models")
    output_schema: str | None = Field(
        None, description="contract label: the inner agent must answer with JSON under it"
    )

    def request(self) -> EntryRequest:
        return _request("spawn", self.model_dump(exclude_none=True))


class BashArgs(_RunArgs):
    command: str = Field(min_length=1, description="the command line, run with bash -c")
    max_output_bytes: int | None = Field(
        None, gt=0, description="bytes kept per stream, head and tail (default: the config's)"
    )

    def request(self) -> EntryRequest:
        fields = self.model_dump(exclude_none=True)
        fields["task"] = fields.pop("command")
        return _request("bash", fields, task="command")


class StartArgs(_RunArgs):
    entry: Literal["acp_spawn", "spawn", "bash"] = Field(
        "acp_spawn", description="which entry runs it"
    )
    task: str = Field(
        min_length=1, description="the task (acp_spawn, spawn) or the command line (bash)"
    )
    agent: str | None = Field(None, description="acp_spawn: the agent profile (required)")
    tools: list[str] | None = Field(None, description="spawn: the tools it may use (required)")
    model: str | None = Field(None, description="spawn: a config model; acp_spawn: the agent's")
    output_schema: str | None = Field(None, description="require a JSON answer under this label")
    mode: str | None = Field(None, description="acp_spawn: session mode id to set")
    isolation: IsolationMode | None = Field(None, description="acp_spawn: worktree or none")
    max_tokens: int | None = Field(
        None, gt=0, le=MAX_TOKENS, description="budget: cancel the run past this many tokens"
    )
    max_cost: float | None = Field(
        None, gt=0, le=MAX_COST, description="budget: cancel the run past this cost"
    )

    def request(self) -> EntryRequest:
        fields = self.model_dump(exclude_none=True, exclude={"max_tokens", "max_cost"})
        return _request(fields.pop("entry"), fields)


class WaitArgs(_Args):
    task_id: str = Field(
        min_length=1, max_length=TASK_ID_LIMIT, description="the run's task_id (from start)"
    )
    timeout: float = Field(
        50,
        gt=0,
        le=MAX_SECONDS,
        description="seconds to wait; the run as it is then if it has not ended (default 50: "
        "below most hosts' own limit for one tool call; call wait again)",
    )


class StatusArgs(_Args):
    task_id: str = Field(min_length=1, max_length=TASK_ID_LIMIT, description="the run's task_id")


class ListArgs(_Args):
    include_ended: bool = Field(True, description="false: only queued and running runs")
    limit: int = Field(20, gt=0, le=1000, description="at most this many, newest first")


class StopArgs(_Args):
    task_id: str = Field(min_length=1, max_length=TASK_ID_LIMIT, description="the run's task_id")
    wait: float = Field(
        15, ge=0, le=600, description="seconds to wait for it to end (0: ask and return)"
    )


class SendArgs(_Args):
    task_id: str = Field(
        min_length=1,
        max_length=TASK_ID_LIMIT,
        description="a run of the session (from start); its latest turn is followed",
    )
    text: str = Field(min_length=1, description="the follow-up prompt")
    timeout: float | None = Field(
        None, gt=0, le=MAX_SECONDS, description="seconds the turn may take (default: the config's)"
    )
    wait: float = Field(
        50,
        ge=0,
        le=MAX_SECONDS,
        description="seconds to wait for the turn to end, as wait does (default 50; 0: return "
        "its task_id at once, then call wait)",
    )


def _request(entry: str, fields: dict[str, Any], *, task: str = "task") -> EntryRequest:
    """The request; an error names the tool's own argument (``task``: what it calls it)."""
    try:
        return EntryRequest(entry=entry, **fields)
    except ValidationError as exc:
        raise arguments_error(exc, renamed={"task": task}) from None


A = TypeVar("A", bound=BaseModel)


def parse(model: type[A], arguments: dict[str, Any] | None) -> A:
    """``arguments`` checked against ``model``; :class:`ConfigError` naming each bad field."""
    try:
        return model.model_validate(arguments or {})
    except ValidationError as exc:
        raise arguments_error(exc) from None


def arguments_error(exc: ValidationError, renamed: dict[str, str] | None = None) -> ConfigError:
    """One :class:`Problem` per error, its ``field`` the dotted path to the bad value (its
    first part ``renamed`` where the tool calls it otherwise)."""
    problems = []
    for error in exc.errors(include_url=False):
        parts = [str(part) for part in error["loc"]]
        if parts and renamed:
            parts[0] = renamed.get(parts[0], parts[0])
        field = ".".join(parts)
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown argument"
        elif not field and message.startswith("Value error, "):
            # A check across fields (EntryRequest's): its message names the fields.
            message = message.removeprefix("Value error, ")
        problems.append(Problem(message, field=field))
    return ConfigError(problems)
