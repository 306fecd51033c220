"""What each MCP tool takes: one pydantic model per tool, checked once.

A tool's input schema is generated from its model (so what is listed is what is checked),
and the entry tools' models turn into the one request shape every front end uses,
:class:`~acp_bridge.EntryRequest`. Bad arguments raise :class:`~acp_bridge.ConfigError`
whose problems name the field (``agent: no ready profile 'x'; ready: demo``), before
anything starts.
"""

from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from acp_bridge._compare.compare_options import NOT_FOR_COMPARE, CompareOptions
from acp_bridge._entries.entry_table import entries_offered, model_of
from acp_bridge._entries.option_errors import options_error
from acp_bridge._entries.options import Option, arguments_model, offered
from acp_bridge._entries.request import EntryRequest
from acp_bridge._records.numbers import NumbersNotBooleans
from acp_bridge._runs.run_options import RunOptions
from acp_bridge.config import MAX_SECONDS
from acp_bridge.envelope import Entry
from acp_bridge.errors import ConfigError

TASK_ID_LIMIT = 64
"""Characters of a task id (``check_task_id``'s rule): a longer one names no run."""


class _Args(NumbersNotBooleans):  # a boolean is never a number
    model_config = ConfigDict(extra="forbid")


class EntryArgs(_Args):
    """What an entry tool takes: its task (named ``TASK``), its own fields, and the options
    its entry's options model offers the MCP face."""

    ENTRY: ClassVar[Entry]
    TASK: ClassVar[str] = "task"

    def request(self) -> EntryRequest:
        fields = self.model_dump(exclude_none=True)
        fields["task"] = fields.pop(self.TASK)
        return _request(self.ENTRY, fields, task=self.TASK)


def _entry_args(name: str, entry: Entry, own: dict[str, Any], task: str = "task") -> Any:
    """The arguments model of ``entry``'s tool (its options model's MCP subset)."""
    model = arguments_model(name, model_of(entry), "mcp", own, EntryArgs)
    model.ENTRY, model.TASK = entry, task
    return model


AcpSpawnArgs: type[EntryArgs] = _entry_args(
    "AcpSpawnArgs",
    "acp_spawn",
    {
        "agent": (str, Field(description="the agent profile to run")),
        "task": (str, Field(min_length=1, description="what the agent must do, self-contained")),
    },
)
SpawnArgs: type[EntryArgs] = _entry_args(
    "SpawnArgs",
    "spawn",
    {
        "task": (
            str,
            Field(min_length=1, description="what the inner agent must do, self-contained"),
        ),
        "tools": (list[str], Field(min_length=1, description="names of the tools it may use")),
    },
)
BashArgs: type[EntryArgs] = _entry_args(
    "BashArgs",
    "bash",
    {"command": (str, Field(min_length=1, description="the command line, run with bash -c"))},
    task="command",
)


class CompareArgsBase(_Args):
    """What the ``compare`` tool takes: the agents, the task, and compare's options model's
    MCP subset (its own, and ``acp_spawn``'s for every attempt)."""

    def options(self) -> dict[str, Any]:
        """compare's options, as given (those left unset left out)."""
        return self.model_dump(exclude_none=True, exclude={"agents", "task"})


CompareArgs: type[CompareArgsBase] = arguments_model(
    "CompareArgs",
    CompareOptions,
    "mcp",
    {
        "agents": (
            list[str],
            Field(min_length=1, description="the agent profiles to compare, in order"),
        ),
        "task": (str, Field(min_length=1, description="what every attempt must do")),
    },
    CompareArgsBase,
    without=NOT_FOR_COMPARE,
)


def _start_options() -> dict[str, Any]:
    """The options any of the entries ``start`` runs offers the MCP face (a name two entries
    share is described for both)."""
    found: dict[str, Option] = {}
    described: dict[str, list[str]] = {}
    for entry in START_ENTRIES:
        for option in offered(model_of(entry), "mcp"):
            found.setdefault(option.name, option)
            if option.description not in described.setdefault(option.name, []):
                described[option.name].append(f"{entry}: {option.description}")
    return {
        name: (option.annotation, Field(None, description="; ".join(described[name])))
        if len(described[name]) > 1
        else option.annotation
        for name, option in found.items()
    }


START_ENTRIES: tuple[Entry, ...] = entries_offered("start")


class _StartBase(_Args):
    entry: Literal["acp_spawn", "spawn", "bash"] = Field(
        "acp_spawn", description="which entry runs it"
    )
    task: str = Field(
        min_length=1, description="the task (acp_spawn, spawn) or the command line (bash)"
    )
    agent: str | None = Field(None, description="acp_spawn: the agent profile (required)")
    tools: list[str] | None = Field(None, description="spawn: the tools it may use (required)")

    def request(self) -> EntryRequest:
        fields = self.model_dump(exclude_none=True, exclude=set(RUN_LAYER_ARGUMENTS))
        return _request(fields.pop("entry"), fields)

    def run_options(self) -> RunOptions:
        """What the run layer adds to the run (budgets, group, session)."""
        return RunOptions(**{name: getattr(self, name) for name in RUN_LAYER_ARGUMENTS})


RUN_LAYER_ARGUMENTS = tuple(option.name for option in offered(RunOptions, "mcp"))
"""The run layer's options ``start`` takes (its options model's MCP subset)."""

StartArgs: type[_StartBase] = create_model(
    "StartArgs",
    __base__=_StartBase,
    **_start_options(),
    **{option.name: option.annotation for option in offered(RunOptions, "mcp")},
)


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
        return EntryRequest.model_validate({"entry": entry, **fields})
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
    return options_error(exc, renamed, unknown="unknown argument")
