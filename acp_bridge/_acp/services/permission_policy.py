"""The permission policy of one run: each ``session/request_permission`` and each request the
bridge serves judged by the rules and the mode (permissions.py), the host hook asked for
``ask``, an offered option chosen, and every decision recorded in the run's ledger
(``meta.permissions``)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal

from acp_bridge._acp.services.decisions import Decisions, command_keys, path_keys
from acp_bridge._acp.services.permissions import (
    Decision,
    PermissionHook,
    PermissionQuestion,
    static_verdict,
)
from acp_bridge._acp.turn.tool_calls import command_of, named_locations, unquoted
from acp_bridge._acp.wire.schema import (
    PERMISSION_CANCELLED,
    PermissionOption,
    RequestPermissionParams,
    permission_selected,
)
from acp_bridge._os.cmdline import Command, without_cd_to
from acp_bridge._os.fs.roots import Roots
from acp_bridge._records.bounded import BoundedList
from acp_bridge.config import Permissions
from acp_bridge.envelope import PermissionRecord

log = logging.getLogger("acp_bridge.permissions")


def _allows(kind: str) -> bool:
    return kind.startswith("allow")


MAX_RECORDS = 10_000
"""Decisions kept for ``meta.permissions``; later ones are counted (refusals by decision)."""
RECORD_CHARS = 4096
"""A record's title and reason are cut to this (a title may be a whole command or file)."""


class PermissionLedger:
    """Every decision of a run, in order; it becomes ``meta.permissions``. Bounded: past
    :data:`MAX_RECORDS` decisions are counted, not kept (``_records/bounded.py``)."""

    # A plain class, not a dataclass: those compile their methods as every command starts.
    __slots__ = ("records", "refused_dropped")

    def __init__(self) -> None:
        self.records: BoundedList[PermissionRecord] = BoundedList(
            "permission decisions", MAX_RECORDS
        )
        self.refused_dropped = 0

    def add(self, record: PermissionRecord) -> None:
        if len(record.title) > RECORD_CHARS or len(record.reason) > RECORD_CHARS:
            cut = {"title": record.title[:RECORD_CHARS], "reason": record.reason[:RECORD_CHARS]}
            record = record.model_copy(update=cut)
        if not self.records.add(record) and record.decision == "rejected":
            self.refused_dropped += 1

    def reset(self) -> None:
        """A new turn's decisions (its envelope lists its own)."""
        self.records.reset()
        self.refused_dropped = 0

    @property
    def refused(self) -> int:
        return sum(r.decision == "rejected" for r in self.records) + self.refused_dropped

    def summary_note(self) -> str | None:
        """The note a run's summary carries when anything was refused."""
        n = self.refused
        if not n:
            return None
        return f"{n} permission request{'s' if n > 1 else ''} refused"


def choose_option(options: tuple[PermissionOption, ...], allow: bool) -> PermissionOption | None:
    """The offered option that says ``allow`` (or reject), ``*_once`` preferred."""
    wanted = ("allow_once", "allow_always") if allow else ("reject_once", "reject_always")
    for kind in wanted:
        for option in options:
            if option.kind == kind:
                return option
    return None


class PermissionPolicy:
    """Decides each permission request of one run and records the decision."""

    def __init__(
        self,
        settings: Permissions,
        roots: Roots,
        *,
        permission_hook: PermissionHook | None = None,
        ledger: PermissionLedger | None = None,
        cwd: Path | None = None,
        sandbox: str = "off",
    ) -> None:
        self.settings = settings
        self.roots = roots
        self.sandbox = sandbox
        """The OS sandbox mode the agent runs in (``off``: none): a file change that names
        no location is allowed only inside one."""
        self.permission_hook = permission_hook
        self.ledger = ledger or PermissionLedger()
        self.cwd = cwd
        self.decisions = Decisions()
        """Decided permission requests, for the served requests they lead to (decisions.py)."""

    def static_verdict(self, question: PermissionQuestion) -> tuple[Decision, str]:
        """Rules, then the mode: allow, reject, or ask (the hook is not called here)."""
        return static_verdict(self.settings, self.roots, question, self.sandbox)

    async def verdict(self, question: PermissionQuestion) -> tuple[bool, str]:
        """(allow?, reason) for one question: rules, then mode, then the hook for ``ask``."""
        allowed, reason, _ = await self._verdict(question)
        return allowed, reason

    async def _verdict(self, question: PermissionQuestion) -> tuple[bool, str, str | None]:
        """(allow?, reason, the option the host picked, if it picked one)."""
        decision, reason = self.static_verdict(question)
        if decision != "ask":
            return decision == "allow", reason, None
        return await self._ask_host(question, reason)

    async def judge_served(
        self,
        kind: str,
        title: str,
        locations: tuple[str, ...],
        command: Command | None = None,
        name: str = "",
    ) -> tuple[bool, str]:
        """(allow?, reason) for a request the bridge is about to serve, asked for or not:
        the decision of the permission request it follows, if any, else the policy
        (``name``: the MCP tool it came through, for rules by tool name)."""
        keys = command_keys(command) if command is not None else path_keys(kind, locations)
        linked = self.decisions.decide(keys)
        if linked is not None:
            return linked
        line = command.line if command is not None else ""
        question = PermissionQuestion("", title, kind, locations, (), None, line, command, name)
        decision, reason = self.static_verdict(question)
        if decision != "ask":
            return decision == "allow", reason
        allowed, reason, _ = await self._ask_host(question, reason)
        return allowed, reason

    async def _ask_host(
        self, question: PermissionQuestion, reason: str
    ) -> tuple[bool, str, str | None]:
        if self.permission_hook is None:
            return False, f"{reason}: no host hook to ask (headless), rejected", None
        try:
            said = await self.permission_hook(question)
        except TimeoutError:  # the hook's way to say nobody answered (MCP: --ask-timeout)
            return False, f"{reason}: the host gave no answer in time, rejected", None
        except Exception as exc:  # the host's bug must not become the agent's permission
            log.warning("permission hook failed", exc_info=True)
            failed = f"{reason}: the host hook failed ({type(exc).__name__}), rejected"
            return False, failed, None
        if isinstance(said, str):
            option = next((o for o in question.options if o.option_id == said), None)
            if option is None:  # not one of the offered options: a host bug, not a yes
                return False, f"{reason}: the host picked {said!r}, not offered; rejected", None
            allowed = _allows(option.kind)
            return allowed, f"{reason}: host picked {option.name or said}", said
        allowed = bool(said)
        return allowed, f"{reason}: host {'allowed' if allowed else 'rejected'}", None

    def question(self, params: RequestPermissionParams) -> PermissionQuestion:
        tool = params.tool_call
        command = command_of(tool)
        if command is not None and self.cwd is not None:  # `cd <cwd> && CMD` is CMD
            command = without_cd_to(command, str(self.cwd))
        return PermissionQuestion(
            tool_call_id=tool.tool_call_id,
            title=tool.title or "",
            kind=tool.kind or "",
            locations=named_locations(tool, self.cwd),
            options=tuple(params.options),
            raw_input=tool.raw_input,
            command=command.line if command is not None else "",
            parsed=command,
            name=tool.name or "",
        )

    async def answer(
        self, params: RequestPermissionParams
    ) -> tuple[dict[str, Any], PermissionRecord]:
        """The reply to one ``session/request_permission`` and its record in the ledger."""
        question = self.question(params)
        allowed, reason, picked = await self._verdict(question)
        option = next((o for o in question.options if o.option_id == picked), None)
        option = option or choose_option(question.options, allowed)
        if option is None and allowed:
            # Only reject options offered: we cannot say yes, so we say the closest no.
            allowed, reason = False, f"{reason}; no allow option offered"
            option = choose_option(question.options, False)
        title = unquoted(question.title) if question.kind == "execute" else ""
        keys = command_keys(question.parsed, title)
        keys |= path_keys(question.kind, question.locations)
        self.decisions.remember(keys, allowed, reason, question.tool_call_id)
        record = self.record(
            question,
            "allowed" if allowed else "rejected",
            option.option_id if option else "",
            reason,
        )
        if option is None:
            # Nothing offered that means "no": the only refusal left is the cancelled outcome.
            return PERMISSION_CANCELLED, record
        return permission_selected(option.option_id), record

    def answer_cancelled(
        self, params: RequestPermissionParams, why: str = "turn cancelled"
    ) -> tuple[dict[str, Any], PermissionRecord]:
        """The reply for a request pending when the turn was cancelled, and its record."""
        record = self.record(self.question(params), "cancelled", "", why)
        return PERMISSION_CANCELLED, record

    def record(
        self,
        question: PermissionQuestion,
        decision: Literal["allowed", "rejected", "cancelled"],
        option_id: str,
        reason: str,
    ) -> PermissionRecord:
        record = PermissionRecord(
            tool_call_id=question.tool_call_id,
            title=question.title,
            name=question.name or None,
            kind=question.kind,
            decision=decision,
            option_id=option_id,
            reason=reason,
        )
        self.ledger.add(record)
        return record
