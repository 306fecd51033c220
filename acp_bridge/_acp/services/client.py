"""Everything the bridge serves to one session, the capabilities that say so, and the routes.

Only what the profile enables and the bridge fully serves is advertised in ``initialize``;
a method that is not advertised has no route either (-32601) — except
``elicitation/create``, which the spec wants answered -32602 when not advertised
(elicitation.py). Boolean session config options are always advertised: we can set them.

What the bridge serves is judged by the permission policy whether or not the agent asked
first (see permissions.py): a served request the policy refuses, or one the confined
services refuse, is recorded in ``meta.refusals`` as well as answered with an error.

Every request is answered and recorded however it fails: a policy that cannot judge (an
error of its own, a host hook that raises) refuses; a request that fails while it is served
(an ``EACCES`` or ``ELOOP`` on its path, a name too long, a directory where a file was asked
for, an I/O error, a terminal id never given) is answered with a clean JSON-RPC error
(``_acp/rpc/router.py``) and recorded in ``meta.refusals`` with the reason, counted apart from
the refusals in the summary. A call of the bridge's MCP tools is recorded in
``meta.permissions`` whatever becomes of it, arguments that do not fit and unknown tools
included. The records are bounded (``_records/bounded.py``): past their caps, counted.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import anyio
from anyio.abc import TaskGroup
from pydantic import BaseModel

from acp_bridge._acp.rpc.router import Reply, RequestError, Route, Router, rpc_error
from acp_bridge._acp.services.elicitation import (
    CompleteElicitationParams,
    CreateElicitationParams,
    ElicitationHook,
    ElicitationService,
)
from acp_bridge._acp.services.file_service import FileService
from acp_bridge._acp.services.permission_policy import (
    PermissionLedger,
    PermissionPolicy,
    choose_option,
)
from acp_bridge._acp.services.permissions import PermissionHook
from acp_bridge._acp.services.terminals import TerminalService, shell_argv
from acp_bridge._acp.turn.prompt_turn import TurnSignals
from acp_bridge._acp.turn.tool_calls import overlay
from acp_bridge._acp.wire.initialize_schema import (
    ClientCapabilities,
    ClientSessionCapabilities,
    ConfigOptionsCapabilities,
    Empty,
    FsCapabilities,
)
from acp_bridge._acp.wire.schema import (
    INVALID_PARAMS,
    PERMISSION_CANCELLED,
    CreateTerminalParams,
    ReadTextFileParams,
    RequestPermissionParams,
    TerminalIdParams,
    ToolCallUpdate,
    WriteTextFileParams,
    permission_selected,
)
from acp_bridge._os.cmdline import Command, from_argv, parse_line, without_cd_to
from acp_bridge._os.fs.roots import Roots
from acp_bridge._os.process.procgroup import Launcher
from acp_bridge._os.race import race
from acp_bridge._records.bounded import BoundedList
from acp_bridge.config import AgentProfile
from acp_bridge.envelope import PermissionRecord, RefusalRecord
from acp_bridge.errors import LimitExceeded, SandboxViolation
from acp_bridge.events import EventSink

ParamsT = TypeVar("ParamsT", bound=BaseModel)
log = logging.getLogger("acp_bridge.services")

MAX_REFUSALS = 10_000
"""Refused or failed requests recorded for ``meta.refusals``; later ones are counted."""
TARGET_CHARS = 4096
NAME_CHARS = 256


Described = tuple[str, str, tuple[str, ...], Command | None]
"""A served request as the policy judges it: title, target, locations, command."""


def describe_read(request: ReadTextFileParams) -> Described:
    return f"Read {request.path}", request.path, (request.path,), None


def describe_write(request: WriteTextFileParams) -> Described:
    return f"Write {request.path}", request.path, (request.path,), None


def describe_command(request: CreateTerminalParams, session_cwd: Path | None = None) -> Described:
    """A terminal request as the policy judges it: by what the shell will run there. A
    leading ``cd`` to the terminal's own cwd (the request's, else ``session_cwd``) is not a
    command of its own (:func:`~acp_bridge._os.cmdline.without_cd_to`)."""
    line = " ".join([request.command, *request.args])
    # Judged as it will run: an argv as it is, a shell line by what the shell will run.
    argv = shell_argv(request.command, request.args)
    command = parse_line(argv[2]) if argv[:2] == ["/bin/sh", "-c"] else from_argv(argv)
    where = request.cwd if request.cwd is not None else session_cwd
    if where is not None and Path(where).is_absolute():  # a relative one is refused anyway
        command = without_cd_to(command, str(where))
    return line, line, (), command


class ClientServices:
    """Permission decisions, files and terminals for one session."""

    def __init__(
        self,
        profile: AgentProfile,
        *,
        roots: Roots,
        cwd: Path,
        env: Mapping[str, str],
        tg: TaskGroup,
        sink: EventSink,
        signals: TurnSignals,
        permission_hook: PermissionHook | None = None,
        elicitation_hook: ElicitationHook | None = None,
        on_tool_call: Callable[[ToolCallUpdate], None] | None = None,
        launcher: Launcher | None = None,
        announced: Callable[[str], ToolCallUpdate | None] | None = None,
        sandbox: str = "off",
    ) -> None:
        self.profile = profile
        self.cwd = cwd
        self.signals = signals
        self.sink = sink
        self.ledger = PermissionLedger()
        self.policy = PermissionPolicy(
            profile.permissions,
            roots,
            permission_hook=permission_hook,
            ledger=self.ledger,
            cwd=cwd,
            sandbox=sandbox,
        )
        self.files = FileService(
            roots,
            max_read_bytes=profile.fs.max_read_bytes,
            max_write_bytes=profile.fs.max_write_bytes,
        )
        self.terminals = TerminalService(
            roots=roots,
            cwd=cwd,
            env=env,
            settings=profile.terminal,
            tg=tg,
            sink=sink,
            launcher=launcher,
        )
        self.elicitation = ElicitationService(elicitation_hook, signals=signals, sink=sink)
        self._on_tool_call = on_tool_call
        self._announced = announced
        self.refusals: BoundedList[RefusalRecord] = BoundedList(
            "refused or failed file/terminal requests", MAX_REFUSALS
        )
        """File and terminal requests refused or failed (permission refusals are in the
        ledger)."""
        self.refused = 0
        self.failed = 0
        """Of those, how many were refused and how many failed (all counted, kept or not)."""
        self._mcp_calls = 0

    @property
    def acp_methods(self) -> bool:
        """Whether files and terminals are served as ACP methods (``services: acp | both``)."""
        return self.profile.services != "mcp"

    def capabilities(self) -> ClientCapabilities:
        fs, acp = self.profile.fs, self.acp_methods
        unstable = Empty() if self.profile.unstable else None
        return ClientCapabilities(
            fs=FsCapabilities(read_text_file=fs.read and acp, write_text_file=fs.write and acp),
            terminal=self.profile.terminal.enabled and acp,
            session=ClientSessionCapabilities(
                config_options=ConfigOptionsCapabilities(boolean=Empty()),
                notices=Empty(),
                compaction=Empty(),
            ),
            elicitation=self.elicitation.capabilities(),
            subagents=unstable,
            plan=unstable,
        )

    def notification(self, method: str, params: Any) -> None:
        """The agent's notifications other than ``session/update`` (unknown ones: ignored)."""
        if method == "elicitation/complete" and isinstance(params, dict):
            try:
                self.elicitation.complete(CompleteElicitationParams.model_validate(params))
            except ValueError:  # malformed: nothing to complete
                return

    def router(self) -> Router:
        routes: list[Route[Any]] = [
            Route("session/request_permission", RequestPermissionParams, self.request_permission),
            Route("elicitation/create", CreateElicitationParams, self.elicitation.create),
        ]
        if self.profile.fs.read and self.acp_methods:
            routes.append(
                self._served(
                    "fs/read_text_file", "read", ReadTextFileParams, describe_read,
                    self.files.read_text_file,
                )
            )  # fmt: skip
        if self.profile.fs.write and self.acp_methods:
            routes.append(
                self._served(
                    "fs/write_text_file", "edit", WriteTextFileParams, describe_write,
                    self.files.write_text_file,
                )
            )  # fmt: skip
        if self.profile.terminal.enabled and self.acp_methods:
            terminals = self.terminals
            routes += [
                self._served(
                    "terminal/create", "execute", CreateTerminalParams, self.describe_command,
                    terminals.create,
                ),
                self._recorded("terminal/output", terminals.output),
                self._recorded("terminal/wait_for_exit", terminals.wait_for_exit),
                self._recorded("terminal/kill", terminals.kill),
                self._recorded("terminal/release", terminals.release),
            ]  # fmt: skip
        return Router(routes)

    def describe_command(self, request: CreateTerminalParams) -> Described:
        """A terminal request as the policy judges it (:func:`describe_command`)."""
        return describe_command(request, self.cwd)

    def _recorded(
        self, method: str, serve: Callable[[TerminalIdParams], Awaitable[Reply]]
    ) -> Route[TerminalIdParams]:
        """A request about a terminal: served, its failure (an id never given, say)
        recorded."""

        async def recorded(request: TerminalIdParams) -> Reply:
            try:
                return await serve(request)
            except Exception as exc:
                self._not_served(method, request.terminal_id, exc)
                raise

        return Route(method, TerminalIdParams, recorded)

    def _refuse(self, method: str, target: str, reason: str) -> None:
        self.refused += 1
        self.refusals.add(RefusalRecord(method=method, target=target[:TARGET_CHARS], reason=reason))

    def _not_served(self, method: str, target: str, exc: Exception) -> None:
        """Record why a request judged and allowed was not served: a refusal of the confined
        services (outside the roots, over a limit), or a failure (the OS's, the request's)."""
        if isinstance(exc, SandboxViolation | LimitExceeded):
            self._refuse(method, target, str(exc)[:TARGET_CHARS])
            return
        self.failed += 1
        reason = f"failed: {rpc_error(exc)[1]}"[:TARGET_CHARS]
        self.refusals.add(RefusalRecord(method=method, target=target[:TARGET_CHARS], reason=reason))

    async def _judge(
        self, kind: str, title: str, locations: tuple[str, ...], command: Command | None, name: str
    ) -> tuple[bool, str]:
        """The policy's verdict; a policy that cannot judge (a bug, an error it did not
        expect) refuses, saying so — the request is never served unjudged."""
        try:
            return await self.policy.judge_served(kind, title, locations, command, name)
        except Exception as exc:
            log.warning("the permission policy could not judge a request", exc_info=True)
            return False, f"it could not be judged ({rpc_error(exc)[1]}), refused"

    def _served(
        self,
        method: str,
        kind: str,
        params: type[ParamsT],
        describe: Callable[[ParamsT], Described],
        serve: Callable[[ParamsT], Awaitable[Reply]],
    ) -> Route[ParamsT]:
        """``serve`` behind the permission policy, its refusals recorded."""

        async def judged(request: ParamsT) -> Reply:
            title, target, locations, command = describe(request)
            allowed, reason = await self._judge(kind, title, locations, command, "")
            if not allowed:
                self._refuse(method, target, reason)
                raise _permission_denied(reason)
            try:
                return await serve(request)
            except Exception as exc:
                self._not_served(method, target, exc)
                raise

        return Route(method, params, judged)

    async def serve_tool(
        self,
        tool: str,
        kind: str,
        request: ParamsT,
        describe: Callable[[ParamsT], Described],
        serve: Callable[[ParamsT], Awaitable[Reply]],
    ) -> Reply:
        """``serve`` for a call of the bridge's MCP tool ``tool``: judged by the same policy
        and rules as the ACP method it mirrors, and — since the agent asked nobody first —
        recorded in the ledger (``meta.permissions``) by the service itself."""
        title, target, locations, command = describe(request)
        allowed, reason = await self._judge(kind, title, locations, command, tool)
        self._tool_call_decided(tool, kind, title, allowed, reason)
        method = f"mcp {tool}"
        if not allowed:
            self._refuse(method, target, reason)
            raise _permission_denied(reason)
        try:
            return await serve(request)
        except Exception as exc:
            self._not_served(method, target, exc)
            raise

    def tool_call_refused(self, tool: str, kind: str, title: str, reason: str) -> None:
        """A call of the bridge's MCP tool ``tool`` refused before it could be judged (its
        arguments do not fit, or no such tool is offered): recorded like any other."""
        tool, title = tool[:NAME_CHARS], title[:TARGET_CHARS]
        self._tool_call_decided(tool, kind, title, False, reason)
        self._refuse(f"mcp {tool}", title, reason)

    def _tool_call_decided(
        self, tool: str, kind: str, title: str, allowed: bool, reason: str
    ) -> None:
        self._mcp_calls += 1
        record = PermissionRecord(
            tool_call_id=f"mcp-{self._mcp_calls}",
            title=title,
            name=tool,
            kind=kind,
            decision="allowed" if allowed else "rejected",
            reason=reason,
        )
        self.ledger.add(record)
        self._decided({}, record)

    async def request_permission(self, request: RequestPermissionParams) -> Reply:
        """The answer to a permission request, decided and recorded; one that cannot be
        decided (an error the policy did not expect) is refused, recorded as such."""
        try:
            return await self._request_permission(request)
        except Exception as exc:
            log.warning("a permission request could not be decided", exc_info=True)
            return self._undecidable(request, exc)

    def _undecidable(self, request: RequestPermissionParams, exc: Exception) -> Reply:
        reason = f"it could not be judged ({rpc_error(exc)[1]}), rejected"
        option = choose_option(tuple(request.options), False)
        tool = request.tool_call
        record = PermissionRecord(
            tool_call_id=tool.tool_call_id,
            title=tool.title or "",
            name=tool.name,
            kind=tool.kind or "",
            decision="rejected",
            option_id=option.option_id if option else "",
            reason=reason,
        )
        self.ledger.add(record)
        answer = permission_selected(option.option_id) if option else PERMISSION_CANCELLED
        return self._decided(answer, record)

    async def _request_permission(self, request: RequestPermissionParams) -> Reply:
        if self._announced is not None:
            # Judge the whole tool call: the request laid over what the turn announced of it
            # (claude-code-acp's request leaves out the kind its tool_call update gave).
            known = self._announced(request.tool_call.tool_call_id)
            request = request.model_copy(update={"tool_call": overlay(known, request.tool_call)})
        if self._on_tool_call is not None:
            self._on_tool_call(request.tool_call)
        cancelled = self.signals.cancelled
        if cancelled.is_set():
            return self._decided(*self.policy.answer_cancelled(request))
        try:
            raced = await race(lambda: self.policy.answer(request), cancelled.wait)
        except anyio.get_cancelled_exc_class():
            # The agent's $/cancel_request: the connection answers -32800; the ledger
            # still says what became of the request.
            self._decided(*self.policy.answer_cancelled(request, "cancelled by the agent"))
            raise
        if raced.value is None:  # the turn was cancelled while the host was deciding
            return self._decided(*self.policy.answer_cancelled(request))
        return self._decided(*raced.value)

    def _decided(self, answer: Reply, record: PermissionRecord) -> Reply:
        self.sink.emit(
            "permission",
            tool_call_id=record.tool_call_id,
            title=record.title,
            tool_kind=record.kind,
            tool_name=record.name,
            decision=record.decision,
            reason=record.reason,
        )
        return answer

    def next_turn(self) -> None:
        """A follow-up turn begins in this session: what it records is its own (its
        envelope lists its decisions, terminals, files and refusals, not the earlier turns')."""
        self.ledger.reset()
        self.terminals.records.reset()
        self.files.next_turn()
        self.elicitation.next_turn()
        self.refusals.reset()
        self.refused = self.failed = 0

    def summary_notes(self) -> list[str]:
        """What a run's summary must say about refusals and failures: never a silently
        limited run."""
        notes = [self.ledger.summary_note()]
        for n, what in ((self.refused, "refused"), (self.failed, "failed")):
            if n:
                notes.append(f"{n} file/terminal request{'s' if n > 1 else ''} {what}")
        return [note for note in notes if note]

    def warnings(self) -> list[str]:
        """What the services' records could not keep (``meta.warnings``)."""
        kept = (self.ledger.records, self.refusals, self.terminals.records)
        out = [w for w in (r.warning() for r in kept) if w]
        return out + self.files.warnings() + self.elicitation.warnings()

    async def aclose(self) -> None:
        await self.terminals.release_all()


def _permission_denied(reason: str) -> RequestError:
    return RequestError(
        INVALID_PARAMS,
        f"refused by the permission policy: {reason}",
        {"reason": "permission_denied"},
    )
