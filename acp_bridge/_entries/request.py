"""Every entry path behind one request shape, for every front end.

The CLI, smoke suites, the run store's supervisor, the MCP server and batches all describe a
run as an :class:`EntryRequest` — plain, validated, JSON-serializable data — and start it
with :func:`run_entry`. What each entry takes is its options model
(:mod:`acp_bridge._entries.options`), in its row of the entries table
(:mod:`acp_bridge._entries.entry_table`): a request checks its options against it, and
:func:`run_entry` hands them to the entry function as keyword arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import InitErrorDetails

from acp_bridge._entries.entry_table import ENTRY_TABLE, Hooks, options_adapter, stored_options
from acp_bridge._entries.options import options_of
from acp_bridge._records.field_defaults import empty_dict
from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import Entry, SubtaskResult
from acp_bridge.events import EventHandler

if TYPE_CHECKING:
    # Only the signatures below name them: importing the ACP layer here would put its
    # wire schema on the path of every command that builds a request (run --detach, send).
    from acp_bridge._acp.services.elicitation import ElicitationHook
    from acp_bridge._acp.services.permissions import PermissionHook
    from acp_bridge._entries.acp_spawn.live_turns import FollowUps

_TOP = ("entry", "task", "agent", "tools")
"""What every request has at its top, besides the entry's options."""


class EntryRequest(BaseModel):
    """One run of any entry path, as data: which ``entry``, its ``task`` (the command line
    for ``bash``), the ``agent`` profile (``acp_spawn``), the ``tools`` (``spawn``, ``ask``)
    and the entry's ``options``, checked by its options model (defaults filled in).

    Written flat, in Python and in JSON alike::

        EntryRequest(entry="acp_spawn", agent="demo", task="Hi", mode="plan", timeout=60)

    (``options`` then holds ``mode`` and ``timeout``); its JSON is flat too, without the
    options left at their defaults.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    entry: Entry
    task: str = Field(description="the task (acp_spawn, spawn, ask) or the command line (bash)")
    agent: str | None = Field(None, description="acp_spawn: the agent profile")
    tools: list[str] | None = Field(None, description="spawn: required; ask: default all")
    options: dict[str, Any] = Field(default_factory=empty_dict, description="the entry's options")

    if TYPE_CHECKING:  # the flat form, for type checkers (the options are checked at run time)

        def __init__(
            self,
            *,
            entry: Entry,
            task: str,
            agent: str | None = None,
            tools: list[str] | None = None,
            **options: Any,
        ) -> None: ...

    @model_validator(mode="before")
    @classmethod
    def _nest_options(cls, data: Any) -> Any:
        """Flat input → ``options``, checked against the entry's options model here, so a
        bad option is a field error named like the option (``timeout``)."""
        if not isinstance(data, Mapping) or data.get("entry") not in ENTRY_TABLE:
            return data  # the entry field's own check reports it
        entry = str(data["entry"])
        top = {name: data[name] for name in _TOP if name in data}
        given = {**(data.get("options") or {})}
        given.update({k: v for k, v in data.items() if k not in _TOP and k != "options"})
        # Another entry's option left at None is no option given (a front end fills them in).
        given = {k: v for k, v in given.items() if v is not None or _has(entry, k)}
        misplaced = [name for name in given if _entries_with(name) and not _has(entry, name)]
        if misplaced:
            owners = sorted({owner for name in misplaced for owner in _entries_with(name)})
            raise ValueError(f"{', '.join(misplaced)}: only for {', '.join(owners)}")
        try:
            top["options"] = dict(options_adapter(entry).validate_python(given))
        except ValidationError as exc:
            raise ValidationError.from_exception_data(cls.__name__, _line_errors(exc)) from None
        return top

    @field_validator("task")
    @classmethod
    def _command_is_a_command_line(cls, task: str, info: ValidationInfo) -> str:
        # An agent's task is text (JSON carries a NUL); a command line goes to exec, which
        # cannot take one: refused here rather than an internal error mid-run.
        if info.data.get("entry") == "bash" and "\0" in task:
            raise ValueError("a command line cannot contain a NUL byte")
        return task

    @model_validator(mode="after")
    def _entry_needs(self) -> EntryRequest:
        if self.entry == "acp_spawn" and not self.agent:
            raise ValueError("acp_spawn needs an agent")
        if self.entry == "spawn" and self.tools is None:
            raise ValueError("spawn needs tools")
        if self.agent is not None and self.entry != "acp_spawn":
            raise ValueError("agent: only for acp_spawn")
        if self.tools is not None and self.entry not in ("spawn", "ask"):
            raise ValueError("tools: only for spawn, ask")
        return self

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        kept = stored_options(self.entry, self.options)
        if not info.mode_is_json():  # Python values (a Path stays a Path)
            kept = {name: self.options[name] for name in kept}
        data.pop("options", None)
        return {**data, **kept}

    @property
    def cwd(self) -> str | None:
        """The working directory option, as text."""
        cwd = self.options.get("cwd")
        return None if cwd is None else str(cwd)

    @property
    def task_id(self) -> str | None:
        """The run's id, when the request names it."""
        task_id = self.options.get("task_id")
        return None if task_id is None else str(task_id)

    def option(self, name: str) -> Any:
        """Option ``name`` (its default when not given; None if the entry has no such
        option)."""
        return self.options.get(name)

    def replace(self, **changes: Any) -> EntryRequest:
        """This request with ``changes`` (top fields or options), checked again."""
        return EntryRequest.model_validate({**self.model_dump(exclude_none=True), **changes})


def _entries_with(name: str) -> list[str]:
    return [entry for entry in ENTRY_TABLE if _has(entry, name)]


def _has(entry: str, name: str) -> bool:
    return any(option.name == name for option in options_of(ENTRY_TABLE[entry].options))


def _line_errors(exc: ValidationError) -> list[InitErrorDetails]:
    """``exc``'s errors, to raise again as the request's own (their paths unchanged)."""
    details: list[InitErrorDetails] = []
    for error in exc.errors():
        detail: InitErrorDetails = {
            "type": error["type"],
            "loc": error["loc"],
            "input": error["input"],
        }
        if "ctx" in error:
            detail["ctx"] = error["ctx"]
        details.append(detail)
    return details


async def run_entry(
    request: EntryRequest,
    *,
    config: LoadedConfig | None = None,
    on_event: EventHandler | None = None,
    cancel: anyio.Event | None = None,
    permission_hook: PermissionHook | None = None,
    elicitation_hook: ElicitationHook | None = None,
    abort: anyio.Event | None = None,
) -> SubtaskResult:
    """Run ``request`` on its entry path; the envelope, whatever happens. The hooks answer an
    ACP agent's ``ask`` permission requests and questions to the user (other entries have no
    use for them). ``cancel`` ends it gracefully; ``abort`` (with or after ``cancel``) ends it
    now: no graces, SIGKILL."""
    return await run_entry_with_follow_ups(
        request, follow_ups=None, config=config, on_event=on_event, cancel=cancel,
        permission_hook=permission_hook, elicitation_hook=elicitation_hook, abort=abort,
    )  # fmt: skip


async def run_entry_with_follow_ups(
    request: EntryRequest,
    *,
    follow_ups: FollowUps | None,
    config: LoadedConfig | None = None,
    on_event: EventHandler | None = None,
    cancel: anyio.Event | None = None,
    permission_hook: PermissionHook | None = None,
    elicitation_hook: ElicitationHook | None = None,
    abort: anyio.Event | None = None,
) -> SubtaskResult:
    """:func:`run_entry`, and ``follow_ups``: further turns in an ACP agent's session while
    its profile keeps the agent (the run layer's supervisor; see
    :func:`~acp_bridge._entries.acp_spawn.entry.acp_spawn_with_follow_ups`)."""
    hooks: Hooks = {
        "on_event": on_event,
        "config": config,
        "cancel": cancel,
        "abort": abort,
        "permission_hook": permission_hook,
        "elicitation_hook": elicitation_hook,
        "follow_ups": follow_ups,
    }
    return await ENTRY_TABLE[request.entry].call(request, hooks)
