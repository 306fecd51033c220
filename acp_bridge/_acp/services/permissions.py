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
(:meth:`.permission_policy.PermissionPolicy.judge_served`): a file read is a ``read`` of its
path, a write an ``edit`` of its path, ``terminal/create`` an ``execute`` of its command. An
agent that skips ``session/request_permission`` gains nothing. A permission request and the
served request it leads to are one decision (decisions.py): a served request about the command
or path a request was decided for gets that decision (so a host is not asked twice, and a
title rule that matched the request cannot be dodged by the terminal's different text).

Here: the question, the host hook's type, and what the rules and the mode decide
(:func:`static_verdict`); the policy that applies them to a run's requests, asks the host
and records every decision in a ledger is permission_policy.py.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

from acp_bridge._acp.wire.schema import PermissionOption
from acp_bridge._os.cmdline import Command, parse_line, prefix_matches
from acp_bridge._os.fs.roots import Roots
from acp_bridge._os.os_errors import OS_FAILURES, os_reason
from acp_bridge._records.frozen import FrozenRecord
from acp_bridge.config import PermissionRule, Permissions
from acp_bridge.errors import SandboxViolation

Decision = Literal["allow", "reject", "ask"]
LOOKING_KINDS = frozenset({"read", "search"})
HARMLESS_KINDS = frozenset({"think", "fetch"})
FILE_KINDS = frozenset({"edit", "delete", "move"})
"""The changing kinds that are file changes: what an OS sandbox confines (``execute`` and
``other`` may do anything else)."""


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


def static_verdict(
    settings: Permissions, roots: Roots, question: PermissionQuestion, sandbox: str = "off"
) -> tuple[Decision, str]:
    """Rules, then the mode: allow, reject, or ask (the hook is not called here)."""
    for index, rule in enumerate(settings.rules):
        if _rule_matches(rule, question):
            return rule.decision, f"rule {index + 1} ({rule.decision})"
    return _mode_verdict(settings, roots, question, sandbox)
