"""Everything the bridge serves to one session, and the capabilities that say so.

Only what the profile enables and the bridge fully serves is advertised in ``initialize``;
a method that is not advertised is not answered either (-32601).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from acp_bridge._acp.connection import RequestHandler, RpcFailure
from acp_bridge._acp.schema import (
    INVALID_PARAMS,
    ClientCapabilities,
    FsCapabilities,
    RequestPermissionParams,
    ToolCallUpdate,
)
from acp_bridge._acp.services.files import FileService
from acp_bridge._acp.services.permissions import PermissionHook, PermissionLedger, PermissionPolicy
from acp_bridge._acp.services.terminals import TerminalService
from acp_bridge._acp.session import TurnSignals
from acp_bridge._os.roots import Roots
from acp_bridge.config import AgentProfile
from acp_bridge.envelope import RefusalRecord
from acp_bridge.events import EventSink


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
        hook: PermissionHook | None = None,
        on_tool_call: Callable[[ToolCallUpdate], None] | None = None,
    ) -> None:
        self.profile = profile
        self.signals = signals
        self.sink = sink
        self.ledger = PermissionLedger()
        self.policy = PermissionPolicy(
            profile.permissions, roots, hook=hook, ledger=self.ledger, cwd=cwd
        )
        self.files = FileService(
            roots,
            max_read_bytes=profile.fs.max_read_bytes,
            max_write_bytes=profile.fs.max_write_bytes,
        )
        self.terminals = TerminalService(
            roots=roots, cwd=cwd, env=env, settings=profile.terminal, tg=tg, sink=sink
        )
        self._on_tool_call = on_tool_call
        self._policy_refusals: list[RefusalRecord] = []

    def capabilities(self) -> ClientCapabilities:
        fs = self.profile.fs
        return ClientCapabilities(
            fs=FsCapabilities(read_text_file=fs.read, write_text_file=fs.write),
            terminal=self.profile.terminal.enabled,
        )

    def methods(self) -> dict[str, RequestHandler]:
        table: dict[str, RequestHandler] = {"session/request_permission": self.request_permission}
        if self.profile.fs.read:
            table["fs/read_text_file"] = self._judged(
                "fs/read_text_file", self.files.read_text_file
            )
        if self.profile.fs.write:
            table["fs/write_text_file"] = self._judged(
                "fs/write_text_file", self.files.write_text_file
            )
        if self.profile.terminal.enabled:
            terminals = self.terminals
            table.update(
                {
                    "terminal/create": self._judged("terminal/create", terminals.create),
                    "terminal/output": terminals.output,
                    "terminal/wait_for_exit": terminals.wait_for_exit,
                    "terminal/kill": terminals.kill,
                    "terminal/release": terminals.release,
                }
            )
        return table

    def _judged(self, method: str, serve: RequestHandler) -> RequestHandler:
        """``serve`` behind the permission policy: what we serve is judged like a tool call,
        whether or not the agent asked for permission first."""
        kind = _SERVED_KINDS[method]

        async def judged(**params: Any) -> Any:
            title, target, locations = _describe(method, params)
            allowed, reason = await self.policy.judge_served(kind, title, locations)
            if not allowed:
                self._policy_refusals.append(
                    RefusalRecord(method=method, target=target, reason=reason)
                )
                raise RpcFailure(
                    INVALID_PARAMS,
                    f"refused by the permission policy: {reason}",
                    {"reason": "permission_denied"},
                )
            return await serve(**params)

        return judged

    async def request_permission(self, **params: Any) -> dict[str, Any]:
        request = RequestPermissionParams.model_validate(params)
        if self._on_tool_call is not None:
            self._on_tool_call(request.tool_call)
        cancelled = self.signals.cancelled
        if cancelled.is_set():
            return self._decided(self.policy.record_cancelled(request))
        answer: dict[str, Any] | None = None
        async with anyio.create_task_group() as tg:

            async def decide() -> None:
                nonlocal answer
                answer = await self.policy.answer(request)
                tg.cancel_scope.cancel()

            async def on_cancel() -> None:
                await cancelled.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(decide)
            tg.start_soon(on_cancel)
        return self._decided(answer or self.policy.record_cancelled(request))

    def _decided(self, answer: dict[str, Any]) -> dict[str, Any]:
        record = self.ledger.records[-1]
        self.sink.emit(
            "permission",
            tool_call_id=record.tool_call_id,
            title=record.title,
            tool_kind=record.kind,
            decision=record.decision,
            reason=record.reason,
        )
        return answer

    @property
    def refusals(self) -> list[RefusalRecord]:
        """File and terminal requests refused (permission refusals are in the ledger)."""
        return [*self._policy_refusals, *self.files.refusals, *self.terminals.refusals]

    def summary_notes(self) -> list[str]:
        """What a run's summary must say about refusals: never a silently limited run."""
        notes = [self.ledger.summary_note()]
        n = len(self.refusals)
        if n:
            notes.append(f"{n} file/terminal request{'s' if n > 1 else ''} refused")
        return [note for note in notes if note]

    async def aclose(self) -> None:
        await self.terminals.release_all()


_SERVED_KINDS = {
    "fs/read_text_file": "read",
    "fs/write_text_file": "edit",
    "terminal/create": "execute",
}


def _describe(method: str, params: dict[str, Any]) -> tuple[str, str, tuple[str, ...]]:
    """(title, target, locations) of a served request, as the policy sees it. Malformed
    params are left to the service, which answers them with -32602."""
    if method == "terminal/create":
        args = params.get("args") or []
        line = " ".join(str(part) for part in [params.get("command", ""), *args])
        return line, line, ()
    path = str(params.get("path", ""))
    verb = "Read" if method == "fs/read_text_file" else "Write"
    return f"{verb} {path}", path, (path,) if path else ()
