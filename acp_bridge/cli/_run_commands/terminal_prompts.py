"""Asking the person at the terminal: ``ask`` permission decisions and the agent's questions
(elicitation), or fixed answers for scripts (``--yes`` / ``--no``).

Which hooks ``acp-bridge run`` gets (:func:`hooks_for`):

- ``--yes`` / ``--no``: every ``ask`` is allowed / rejected, nobody is prompted, and the
  agent's questions are refused (not advertised): a script has nobody to answer them;
- else, with stdin and stderr on a terminal: a prompt on stderr for each, read from stdin;
- else (headless): no hooks — ``ask`` is rejected and recorded, questions are refused.

A prompt shows the options as the agent offers them and waits ``--ask-timeout`` seconds;
no answer (or an empty one) takes the default, which is the safe one: reject, and ``cancel``
for a question. One prompt at a time: concurrent requests wait their turn. Reading never
blocks the event loop (the terminal is watched with ``wait_readable``), so a run that is
cancelled while a prompt is open answers ``cancelled`` and goes on.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from acp_bridge._acp.services.elicitation import (
    ElicitationAnswer,
    ElicitationHook,
    ElicitationQuestion,
)
from acp_bridge._acp.services.permissions import PermissionHook, PermissionQuestion
from acp_bridge.cli._printing import HumanStream, human_stream
from acp_bridge.cli._safe_text import one_line
from acp_bridge.cli._streams import is_interactive

DEFAULT_ASK_TIMEOUT = 60.0
_YES = frozenset({"y", "yes"})
_NO = frozenset({"n", "no"})


def fixed_answer(allow: bool) -> PermissionHook:
    """``--yes`` / ``--no``: the same answer to every ``ask``."""

    async def hook(question: PermissionQuestion) -> bool:
        return allow

    return hook


class TerminalPrompter:
    """Prompts on ``out`` and reads answers from the terminal file descriptor ``fd``. What
    the agent wrote (titles, options, messages, URLs) is shown on one line each, its control
    characters made visible."""

    def __init__(self, *, timeout: float, fd: int = 0, out: HumanStream | None = None) -> None:
        self.timeout = timeout
        self._fd = fd
        self._out = out or human_stream()
        self._lock = anyio.Lock()
        self._buffer = b""

    def _say(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()

    async def _line(self) -> str | None:
        """One line typed at the terminal; None when the time is up or input ended."""
        with anyio.move_on_after(self.timeout):
            while b"\n" not in self._buffer:
                await anyio.wait_readable(self._fd)
                chunk = os.read(self._fd, 4096)
                if not chunk:
                    return None
                self._buffer += chunk
            line, _, self._buffer = self._buffer.partition(b"\n")
            return line.decode("utf-8", "replace").strip()
        self._say(f"\n  (no answer within {self.timeout:g}s)\n")
        return None

    # --- permissions ------------------------------------------------------------------

    async def permission(self, question: PermissionQuestion) -> bool | str:
        async with self._lock:
            return await self._permission(question)

    async def _permission(self, question: PermissionQuestion) -> bool | str:
        kind = f" [{one_line(question.kind)}]" if question.kind else ""
        title = one_line(question.title or question.tool_call_id)
        lines = [f"\n⚑ the agent asks permission: {title}{kind}"]
        if question.locations:
            lines.append(f"  at: {one_line(', '.join(question.locations))}")
        for number, option in enumerate(question.options, 1):
            name = one_line(option.name or option.option_id)
            lines.append(f"  {number}) {name} ({one_line(option.kind)})")
        choices = f"1-{len(question.options)}, " if question.options else ""
        lines.append(f"  answer {choices}y = allow, n = reject [default: n in {self.timeout:g}s]: ")
        self._say("\n".join(lines))
        answer = (await self._line() or "").lower()
        if answer.isdigit() and 1 <= int(answer) <= len(question.options):
            return question.options[int(answer) - 1].option_id
        return answer in _YES

    # --- elicitation ------------------------------------------------------------------

    async def elicitation(self, question: ElicitationQuestion) -> ElicitationAnswer:
        async with self._lock:
            if question.mode == "url":
                return await self._consent(question)
            return await self._form(question)

    async def _consent(self, question: ElicitationQuestion) -> ElicitationAnswer:
        from urllib.parse import urlsplit

        host = urlsplit(question.url or "").hostname or "?"
        self._say(
            f"\n? the agent asks you to open a web page: {one_line(question.message)}\n"
            f"  host: {one_line(host)}\n  url:  {one_line(question.url or '')}\n"
            f"  open it yourself in a browser? y/n [default: cancel in {self.timeout:g}s]: "
        )
        return _choice(await self._line())

    async def _form(self, question: ElicitationQuestion) -> ElicitationAnswer:
        schema = question.requested_schema or {}
        properties: dict[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        names = one_line(", ".join(properties) or "nothing")
        self._say(
            f"\n? the agent asks: {one_line(question.message)}\n  fields: {names}\n"
            f"  answer? y/n [default: cancel in {self.timeout:g}s]: "
        )
        start = _choice(await self._line())
        if start.action != "accept":
            return start
        content: dict[str, Any] = {}
        for name, field in properties.items():
            value = await self._field(
                name, field if isinstance(field, dict) else {}, name in required
            )
            if value is _CANCEL:
                return ElicitationAnswer("cancel")
            if value is not None:
                content[name] = value
        return ElicitationAnswer("accept", content)

    async def _field(self, name: str, field: dict[str, Any], required: bool) -> Any:
        kind = str(field.get("type", "string"))
        choices = _enum_values(field)
        hint = f" one of {' | '.join(choices)}" if choices else f" ({kind})"
        default = field.get("default")
        shown = f" [default: {default}]" if default is not None else ""
        label = f"{field.get('title') or name}"
        hint, shown, label = one_line(hint), one_line(shown), one_line(label)
        for _ in range(2):  # one more try after a value that does not convert
            self._say(f"  {label}{'*' if required else ''}{hint}{shown}: ")
            line = await self._line()
            if line is None:
                return _CANCEL
            if not line:
                if default is not None or not required:
                    return default
                continue
            value = _convert(line, kind, choices)
            if value is not None:
                return value
            self._say(f"  not a valid {kind}\n")
        return _CANCEL


_CANCEL = object()


def _choice(line: str | None) -> ElicitationAnswer:
    answer = (line or "").lower()
    if answer in _YES:
        return ElicitationAnswer("accept")
    return ElicitationAnswer("decline" if answer in _NO else "cancel")


def _enum_values(field: dict[str, Any]) -> list[str]:
    if isinstance(field.get("enum"), list):
        return [str(v) for v in field["enum"]]
    for key in ("oneOf", "anyOf"):
        if isinstance(field.get(key), list):
            return [str(v["const"]) for v in field[key] if isinstance(v, dict) and "const" in v]
    items = field.get("items")
    return _enum_values(items) if isinstance(items, dict) else []


def _convert(line: str, kind: str, choices: list[str]) -> Any:
    """A typed value from what was typed; None when it does not convert."""
    try:
        if kind == "integer":
            return int(line)
        if kind == "number":
            return float(line)
    except ValueError:
        return None
    if kind == "boolean":
        low = line.lower()
        return True if low in _YES | {"true"} else False if low in _NO | {"false"} else None
    if kind == "array":
        values = [v.strip() for v in line.split(",") if v.strip()]
        return values if not choices or all(v in choices for v in values) else None
    return line if not choices or line in choices else None


def hooks_for(
    *, yes: bool, no: bool, ask_timeout: float | None
) -> tuple[PermissionHook | None, ElicitationHook | None]:
    """The permission and elicitation hooks of one ``run`` (see the module docstring)."""
    if yes or no:
        return fixed_answer(yes), None
    if not is_interactive():
        return None, None
    prompter = TerminalPrompter(timeout=ask_timeout or DEFAULT_ASK_TIMEOUT)
    permission: Callable[[PermissionQuestion], Awaitable[bool | str]] = prompter.permission
    return permission, prompter.elicitation
