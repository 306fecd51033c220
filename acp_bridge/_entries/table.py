"""The entries table: every entry path behind one request shape, for every front end.

The CLI, smoke suites, the run store's supervisor and the MCP server all describe a run as
an :class:`EntryRequest` — plain, validated, JSON-serializable data — and start it with
:func:`run_entry`, so an option is added, checked and passed on in one place.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from acp_bridge.config import LoadedConfig
from acp_bridge.config._sandbox import IsolationMode
from acp_bridge.envelope import Entry, SubtaskResult
from acp_bridge.events import EventHandler

PATH_MAX = 4095
"""Bytes of the longest path the system takes (Linux: 4096 with the NUL)."""
NAME_MAX = 255
"""Bytes of the longest name in a path."""

if TYPE_CHECKING:
    # Only run_entry's signature names them: importing the ACP layer here would put its
    # wire schema on the path of every command that builds a request (run --detach, send).
    from acp_bridge._acp.services.elicitation import ElicitationHook
    from acp_bridge._acp.services.permissions import PermissionHook
    from acp_bridge._entries.acp_turns import FollowUps


class EntryRequest(BaseModel):
    """One run of any entry path, as data."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    entry: Entry
    task: str = Field(description="the task (acp_spawn, spawn, ask) or the command line (bash)")
    agent: str | None = Field(None, description="acp_spawn: the agent profile")
    tools: list[str] | None = Field(None, description="spawn: required; ask: default all")
    model: str | None = Field(
        None,
        description="spawn, ask: a model name from the config; acp_spawn: the agent's model id",
    )
    mode: str | None = Field(None, description="acp_spawn: the session mode to set")
    system_prompt: str | None = Field(
        None, description="acp_spawn: instructions added to the agent's (ACP systemPrompt)"
    )
    config_options: dict[str, str | bool | int | float] | None = Field(
        None, description="acp_spawn: session config option id → value to set"
    )
    resume: str | None = Field(None, description="acp_spawn: continue this earlier session")
    fork: bool = Field(False, description="acp_spawn: continue resume's session in a fork")
    unstable: bool = Field(False, description="acp_spawn: allow unstable ACP methods")
    output_schema: str | None = Field(None, description="require a JSON answer under this label")
    timeout: float | None = Field(None, description="seconds the run may take")
    cwd: str | None = Field(None, description="working directory")
    observe_profile: str | None = Field(None, description="which live events to report")
    max_output_bytes: int | None = Field(None, description="bash: bytes kept per stream")
    isolation: IsolationMode | None = Field(
        None, description="acp_spawn: worktree = its own git worktree (default: the profile's)"
    )
    task_id: str | None = Field(None, description="the run's id (default: a fresh sub_… id)")
    worktree: str | None = Field(
        None, description="acp_spawn: go on in this worktree an earlier turn of the session kept"
    )

    @field_validator("cwd")
    @classmethod
    def _cwd_is_a_path(cls, cwd: str | None) -> str | None:
        # What chdir and stat refuse (ENAMETOOLONG is no "not a directory" to them) is
        # refused here, not an internal error mid-run.
        if cwd is None:
            return cwd
        if "\0" in cwd:
            raise ValueError("a path cannot contain a NUL byte")
        names = cwd.encode("utf-8", "surrogatepass").split(b"/")
        if sum(len(name) + 1 for name in names) > PATH_MAX or max(map(len, names)) > NAME_MAX:
            raise ValueError(
                f"a path longer than {PATH_MAX} bytes, or with a name longer than {NAME_MAX}"
            )
        return cwd

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
        if self.entry != "acp_spawn":
            used = [
                name
                for name in ("mode", "config_options", "system_prompt", "resume", "worktree")
                if getattr(self, name) is not None
            ] + [name for name in ("fork", "unstable") if getattr(self, name)]
            if used:
                raise ValueError(f"{', '.join(used)}: only for acp_spawn")
        if self.fork and self.resume is None:
            raise ValueError("fork needs resume: the session to fork")
        return self


def _acp_spawn(request: EntryRequest, common: dict[str, Any]) -> Awaitable[SubtaskResult]:
    from acp_bridge._entries.acp_agent import acp_spawn

    assert request.agent is not None
    return acp_spawn(
        request.agent,
        request.task,
        output_schema=request.output_schema,
        isolation=request.isolation,
        worktree=request.worktree,
        mode=request.mode,
        model=request.model,
        config_options=request.config_options,
        system_prompt=request.system_prompt,
        resume=request.resume,
        fork=request.fork,
        unstable=request.unstable,
        **common,
    )


def _not_acp(common: dict[str, Any]) -> dict[str, Any]:
    """``common`` without what only an ACP agent can use."""
    common.pop("permission_hook")
    common.pop("elicitation_hook")
    common.pop("follow_ups")
    return common


def _bash(request: EntryRequest, common: dict[str, Any]) -> Awaitable[SubtaskResult]:
    from acp_bridge._entries.shell import bash

    _not_acp(common)
    return bash(request.task, max_output_bytes=request.max_output_bytes, **common)


def _spawn(request: EntryRequest, common: dict[str, Any]) -> Awaitable[SubtaskResult]:
    from acp_bridge._entries.inner import spawn

    _not_acp(common)
    return spawn(
        request.task,
        request.tools or [],
        model=request.model,
        output_schema=request.output_schema,
        **common,
    )


def _ask(request: EntryRequest, common: dict[str, Any]) -> Awaitable[SubtaskResult]:
    from acp_bridge._entries.host import ask

    _not_acp(common)
    return ask(request.task, tools=request.tools, model=request.model, **common)


ENTRIES: dict[str, Callable[[EntryRequest, dict[str, Any]], Awaitable[SubtaskResult]]] = {
    "acp_spawn": _acp_spawn,
    "bash": _bash,
    "spawn": _spawn,
    "ask": _ask,
}


async def run_entry(
    request: EntryRequest,
    *,
    config: LoadedConfig | None = None,
    on_event: EventHandler | None = None,
    cancel: anyio.Event | None = None,
    permission_hook: PermissionHook | None = None,
    elicitation_hook: ElicitationHook | None = None,
    abort: anyio.Event | None = None,
    follow_ups: FollowUps | None = None,
) -> SubtaskResult:
    """Run ``request`` on its entry path; the envelope, whatever happens. The hooks answer an
    ACP agent's ``ask`` permission requests and questions to the user (other entries have no
    use for them). ``cancel`` ends it gracefully; ``abort`` (with or after ``cancel``) ends it
    now: no graces, SIGKILL. ``follow_ups``: further turns in an ACP agent's session, while
    its profile keeps the agent (see :func:`~acp_bridge.acp_spawn`)."""
    common: dict[str, Any] = {
        "timeout": request.timeout,
        "cwd": request.cwd,
        "observe_profile": request.observe_profile,
        "on_event": on_event,
        "config": config,
        "cancel": cancel,
        "permission_hook": permission_hook,
        "elicitation_hook": elicitation_hook,
        "abort": abort,
        "task_id": request.task_id,
        "follow_ups": follow_ups,
    }
    return await ENTRIES[request.entry](request, common)
