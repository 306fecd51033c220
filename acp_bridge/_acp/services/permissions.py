"""Answering ``session/request_permission``: policy, host hook, option choice, ledger.

Order of decision: the profile's rules, first match wins (by tool kind, a case-insensitive
glob on the title, and the leading words of its *parsed* command); then the mode. A
request's tool call is judged whole: the services lay it over what the turn announced for
its id first (``_acp/turn/tool_calls.py``). The command of a tool call is
``rawInput.command`` (a line or an argv), else an ``execute`` call's title; it is read by
``_os/cmdline.py``, never globbed raw: an ``allow`` rule (by ``command``, or by ``title`` on an
``execute`` call) never matches a line of several commands unless it says ``compound: true`` (and
then only when every command of the line matches it, and the line has no ``$(…)``, backticks,
subshell or assignment); a ``reject`` or ``ask`` rule matches when any command of the line does,
those inside ``$(…)`` included. A leading ``cd`` to the directory the line runs in (the
terminal's cwd; for a permission request, the session cwd) is no command of its own
(``without_cd_to``). The locations a tool call names are its ``locations``,
the paths of its ``diff`` content, and path-like fields of its ``rawInput`` (``path``,
``file_path``, … — agents such as fast-agent name the file only there); relative ones are
taken from the session cwd.

=================  =================  ==============================  ================
kind               read-only          workspace-write (the default)   approve-all
=================  =================  ==============================  ================
read, search       allow if every location is inside the read roots   allow
think, fetch       allow              allow                           allow
switch_mode        reject             allow                           allow
edit, delete,      reject             allow if it names a location    allow
move, other, …                        and every one is inside the
                                      write roots (see below)
execute            reject             reject                          allow
=================  =================  ==============================  ================

``deny-all`` rejects everything. Why ``execute`` is rejected by ``workspace-write``: a command
can change anything the user can, wherever it runs (in our terminal or inside the agent), so
no location check can hold it to the roots; a rule (``{kind: execute, decision: allow}``)
opts in. A changing tool call that names no location has nothing to check: rejected — except
an ``edit``, ``delete`` or ``move`` when the agent runs in an OS sandbox, which holds what
its own process writes to the write roots, its state paths and its private ``/tmp``
(pydantic-acp's approved tools and kimi's ``Write`` name no path); a write it then asks the
bridge to serve is judged by its path, as always. The reason in ``meta.permissions`` says
so. ``fetch`` changes nothing here; the network is not something the modes
govern (a rule can). ``switch_mode`` is refused by ``read-only`` because a mode switch may
turn off the agent's own permission requests.

A rule may say ``ask``: the host hook decides; with no hook (headless), or a hook that
fails, the request is rejected and the ledger says why. The hook answers True (allow) or
False (reject), or names one of the offered options by its id (a person at a terminal may
pick "allow always"): the option's kind says whether that allows. The answer is always one
of the offered options, ``*_once`` preferred; when the turn is cancelled, pending requests
are answered ``cancelled`` as the protocol requires.

The same policy judges what the bridge *serves*, whether or not the agent asked first
(:meth:`PermissionPolicy.judge_served`): a file read is a ``read`` of its path, a write an
``edit`` of its path, ``terminal/create`` an ``execute`` of its command. An agent that skips
``session/request_permission`` gains nothing. A permission request and the served request it
leads to are one decision (decisions.py): a served request about the command or path a request
was decided for gets that decision (so a host is not asked twice, and a title rule that
matched the request cannot be dodged by the terminal's different text).
"""

from __future__ import annotations

import fnmatch
import functools
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

from acp_bridge._acp.services.decisions import Decisions, command_keys, path_keys
from acp_bridge._acp.turn.tool_calls import command_of, named_locations, unquoted
from acp_bridge._acp.wire.schema import (
    PERMISSION_CANCELLED,
    PermissionOption,
    RequestPermissionParams,
    permission_selected,
)
from acp_bridge._os.cmdline import Command, parse_line, prefix_matches, without_cd_to
from acp_bridge._os.fs.roots import Roots
from acp_bridge._os.os_errors import OS_FAILURES, os_reason
from acp_bridge._records.bounded import BoundedList
from acp_bridge._records.frozen import FrozenRecord
from acp_bridge.config import PermissionRule, Permissions
from acp_bridge.envelope import PermissionRecord
from acp_bridge.errors import SandboxViolation

Decision = Literal["allow", "reject", "ask"]
LOOKING_KINDS = frozenset({"read", "search"})
HARMLESS_KINDS = frozenset({"think", "fetch"})
FILE_KINDS = frozenset({"edit", "delete", "move"})
"""The changing kinds that are file changes: what an OS sandbox confines (``execute`` and
``other`` may do anything else)."""
log = logging.getLogger("acp_bridge.permissions")


class PermissionQuestion(FrozenRecord):
    """What a host hook is asked about: one tool call the agent wants to make."""

    tool_call_id: str
    title: str
    kind: str
    locations: tuple[str, ...]
    options: tuple[PermissionOption, ...]
    raw_input: Any
    command: str
    """The command line it runs, as judged ("" when it names no command)."""
    parsed: Command | None
    """The command as parsed (not compared, hashed nor shown)."""
    name: str
    """The tool's programmatic name (ACP ``ToolCall.name``; "" when not given)."""
    __slots__ = (
        "command", "kind", "locations", "name", "options", "parsed", "raw_input", "title",
        "tool_call_id",
    )  # fmt: skip
    _compared = (
        "tool_call_id", "title", "kind", "locations", "options", "raw_input", "command", "name",
    )  # fmt: skip

    def __init__(
        self,
        tool_call_id: str,
        title: str,
        kind: str,
        locations: tuple[str, ...],
        options: tuple[PermissionOption, ...],
        raw_input: Any = None,
        command: str = "",
        parsed: Command | None = None,
        name: str = "",
    ) -> None:
        put = object.__setattr__  # frozen: set once, here
        put(self, "tool_call_id", tool_call_id)
        put(self, "title", title)
        put(self, "kind", kind)
        put(self, "locations", locations)
        put(self, "options", options)
        put(self, "raw_input", raw_input)
        put(self, "command", command)
        put(self, "parsed", parsed)
        put(self, "name", name)


PermissionHook = Callable[[PermissionQuestion], Awaitable[bool | str]]
"""Host callback for ``ask``: return True to allow, False to reject, or the ``option_id`` of
one of the question's options (for a request the bridge serves unasked, there are none).
Raising ``TimeoutError`` says nobody answered in time: a rejection, recorded as such."""


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


@functools.lru_cache(maxsize=256)
def _pattern(command: str) -> tuple[str, ...]:
    return parse_line(command).words


def _rule_matches(rule: PermissionRule, question: PermissionQuestion) -> bool:
    if rule.kind is not None and rule.kind != question.kind:
        return False
    if rule.name is not None and not (
        question.name and fnmatch.fnmatchcase(question.name, rule.name)
    ):
        return False
    command, allow = question.parsed, rule.decision == "allow"
    if not allow and command is not None and command.unread and (rule.command or rule.title):
        return True  # too long to read: it may run what a reject or ask rule is about
    whole = command is None or command.simple or (rule.compound and command.only_operators)
    if rule.command is not None:
        if command is None:
            return False
        pattern = _pattern(rule.command)
        if allow:  # every command of the line, and a line that can be judged at all
            return whole and all(prefix_matches(pattern, words) for words in command.parts)
        return any(prefix_matches(pattern, words) for words in command.every_part())
    if rule.title is None:
        return True
    glob = rule.title.lower()
    if fnmatch.fnmatchcase(question.title.lower(), glob):
        # A title glob allows an execute call only when its command is one command.
        return not (allow and question.kind == "execute" and not whole)
    if not allow and command is not None:  # reject / ask: any command of the line
        return any(
            fnmatch.fnmatchcase(" ".join(words).lower(), glob) for words in command.every_part()
        )
    return False


def _outside(paths: tuple[str, ...], check: Callable[[Path], Path], roots: str) -> str | None:
    """Why the first of ``paths`` that ``check`` refuses is refused, if one is: outside the
    ``roots``, or not resolvable to tell (an OS error on its way: EACCES, ELOOP, …)."""
    for location in paths:
        try:
            check(Path(location))
        except SandboxViolation as exc:
            cause = exc.__cause__
            if isinstance(cause, OS_FAILURES):
                return f"{location} cannot be resolved to check it ({os_reason(cause)})"
            return f"{location} is outside the {roots} roots"
    return None


def _mode_verdict(
    settings: Permissions, roots: Roots, question: PermissionQuestion, sandbox: str = "off"
) -> tuple[Decision, str]:
    mode, kind = settings.mode, question.kind or "unknown"
    if mode == "approve-all":
        return "allow", "mode approve-all"
    if mode == "deny-all":
        return "reject", "mode deny-all"
    if kind in LOOKING_KINDS:
        outside = _outside(question.locations, roots.check_read, "read")
        if outside is not None:
            return "reject", f"mode {mode}: {outside}"
        return "allow", f"mode {mode}: {kind} inside the read roots"
    if kind in HARMLESS_KINDS:
        return "allow", f"mode {mode}: {kind} changes nothing here"
    if mode == "read-only":
        return "reject", f"mode read-only: kind {kind} may change things"
    if kind == "switch_mode":
        return "allow", f"mode {mode}: switch_mode"
    if kind == "execute":
        return "reject", (
            f"mode {mode}: a command can change anything, inside the roots or not; "
            "allow it with a rule"
        )
    if not question.locations:
        if kind in FILE_KINDS and sandbox != "off":
            return "allow", (
                f"mode {mode}: kind {kind} names no location; allowed because the {sandbox} "
                "sandbox keeps the agent's own writes to its write roots, state paths and "
                "private /tmp (a write it asks the bridge for is judged by its path)"
            )
        fix = (
            " (with the sandbox off nothing holds the agent's own writes to the roots)"
            if kind in FILE_KINDS
            else ""
        )
        return "reject", (
            f"mode {mode}: kind {kind} names no location to check{fix}; "
            "allow it with a rule by its title or name"
        )
    outside = _outside(question.locations, roots.check_write, "write")
    if outside is not None:
        return "reject", f"mode {mode}: {outside}"
    return "allow", f"mode {mode}: every location inside the write roots"


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
        for index, rule in enumerate(self.settings.rules):
            if _rule_matches(rule, question):
                return rule.decision, f"rule {index + 1} ({rule.decision})"
        return _mode_verdict(self.settings, self.roots, question, self.sandbox)

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
