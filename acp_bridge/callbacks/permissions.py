"""Answering ``session/request_permission``: policy, host hook, option choice, ledger.

Order of decision: the profile's rules, first match wins (by tool kind and a case-insensitive
glob on the title); then the mode:

- ``deny-all``: reject everything;
- ``read-only``: allow tool calls that only look (kinds read, search, think) when every
  location is inside the read roots; reject the rest;
- ``workspace-write``: allow when every location of the tool call is inside the write roots
  (for read, search, think: the read roots); reject when any is outside;
- ``approve-all``: allow everything.

A rule may say ``ask``: the host hook decides; with no hook (headless) the request is
rejected and the ledger says why. The answer is always one of the offered options,
``*_once`` preferred; when the turn is cancelled, pending requests are answered
``cancelled`` as the protocol requires.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from acp_bridge.config import PermissionRule, Permissions
from acp_bridge.envelope import PermissionRecord
from acp_bridge.errors import SandboxViolation
from acp_bridge.protocol import (
    PERMISSION_CANCELLED,
    PermissionOption,
    RequestPermissionParams,
    permission_selected,
)
from acp_bridge.sandbox import Roots

Verdict = Literal["allow", "reject", "ask"]
LOOKING_KINDS = frozenset({"read", "search", "think"})


@dataclass(frozen=True)
class PermissionQuestion:
    """What a host hook is asked about: one tool call the agent wants to make."""

    tool_call_id: str
    title: str
    kind: str
    locations: tuple[str, ...]
    options: tuple[PermissionOption, ...]
    raw_input: Any = None


PermissionHook = Callable[[PermissionQuestion], Awaitable[bool]]
"""Host callback for ``ask``: return True to allow, False to reject."""


@dataclass
class PermissionLedger:
    """Every decision of a run, in order; it becomes ``meta.permissions``."""

    records: list[PermissionRecord] = field(default_factory=list)

    @property
    def refused(self) -> int:
        return sum(r.decision == "rejected" for r in self.records)

    def summary_note(self) -> str | None:
        """The note a run's summary carries when anything was refused."""
        n = self.refused
        if not n:
            return None
        return f"{n} permission request{'s' if n > 1 else ''} refused"


def _rule_matches(rule: PermissionRule, kind: str, title: str) -> bool:
    if rule.kind is not None and rule.kind != kind:
        return False
    return rule.title is None or fnmatch.fnmatchcase(title.lower(), rule.title.lower())


def _locations(question: PermissionQuestion) -> list[Path]:
    return [Path(p) for p in question.locations]


def _mode_verdict(
    settings: Permissions, roots: Roots, question: PermissionQuestion
) -> tuple[Verdict, str]:
    mode = settings.mode
    if mode == "approve-all":
        return "allow", "mode approve-all"
    if mode == "deny-all":
        return "reject", "mode deny-all"
    looking = question.kind in LOOKING_KINDS
    if mode == "read-only" and not looking:
        return "reject", f"mode read-only: kind {question.kind or 'unknown'} changes things"
    check = roots.check_read if looking else roots.check_write
    for location in _locations(question):
        try:
            check(location)
        except SandboxViolation:
            where = "read" if looking else "write"
            return "reject", f"mode {mode}: {location} is outside the {where} roots"
    return "allow", f"mode {mode}: every location inside the roots"


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
        hook: PermissionHook | None = None,
        ledger: PermissionLedger | None = None,
    ) -> None:
        self.settings = settings
        self.roots = roots
        self.hook = hook
        self.ledger = ledger or PermissionLedger()

    async def verdict(self, question: PermissionQuestion) -> tuple[bool, str]:
        """(allow?, reason) for one question: rules, then mode, then the hook for ``ask``."""
        for index, rule in enumerate(self.settings.rules):
            if _rule_matches(rule, question.kind, question.title):
                decision: Verdict = rule.decision
                reason = f"rule {index + 1} ({rule.decision})"
                break
        else:
            decision, reason = _mode_verdict(self.settings, self.roots, question)
        if decision != "ask":
            return decision == "allow", reason
        if self.hook is None:
            return False, f"{reason}: no host hook to ask (headless), rejected"
        allowed = await self.hook(question)
        return allowed, f"{reason}: host {'allowed' if allowed else 'rejected'}"

    async def answer(self, params: RequestPermissionParams) -> dict[str, Any]:
        """The reply to one ``session/request_permission``, recorded in the ledger."""
        tool = params.tool_call
        question = PermissionQuestion(
            tool_call_id=tool.tool_call_id,
            title=tool.title or "",
            kind=tool.kind or "",
            locations=tuple(str(loc.get("path", "")) for loc in tool.locations or []),
            options=tuple(params.options),
            raw_input=tool.raw_input,
        )
        allowed, reason = await self.verdict(question)
        option = choose_option(question.options, allowed)
        if option is None and allowed:
            # Only reject options offered: we cannot say yes, so we say the closest no.
            allowed, reason = False, f"{reason}; no allow option offered"
            option = choose_option(question.options, False)
        self.record(
            question,
            "allowed" if allowed else "rejected",
            option.option_id if option else "",
            reason,
        )
        if option is None:
            # Nothing offered that means "no": the only refusal left is the cancelled outcome.
            return PERMISSION_CANCELLED
        return permission_selected(option.option_id)

    def record_cancelled(self, params: RequestPermissionParams) -> dict[str, Any]:
        """The reply for a request pending when the turn was cancelled."""
        tool = params.tool_call
        question = PermissionQuestion(
            tool.tool_call_id, tool.title or "", tool.kind or "", (), tuple(params.options)
        )
        self.record(question, "cancelled", "", "turn cancelled")
        return PERMISSION_CANCELLED

    def record(
        self,
        question: PermissionQuestion,
        decision: Literal["allowed", "rejected", "cancelled"],
        option_id: str,
        reason: str,
    ) -> None:
        self.ledger.records.append(
            PermissionRecord(
                tool_call_id=question.tool_call_id,
                title=question.title,
                kind=question.kind,
                decision=decision,
                option_id=option_id,
                reason=reason,
            )
        )
