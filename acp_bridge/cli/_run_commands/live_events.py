"""Live events on stderr: short human lines (message chunks inline), or NDJSON.

Every value in a line (a title, a command, a plan entry) is shown on one line with its
control characters made visible (``one_line``); streamed text (message, thought, terminal
output) keeps its newlines. The stream itself shows what is left (``human_stream``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acp_bridge.cli._printing import HumanStream, err_json, human_stream
from acp_bridge.cli._safe_text import one_line
from acp_bridge.events import Event, EventHandler


def _field(value: Any) -> str:
    return one_line(str(value))


FLUSH_EVERY = 0.05
"""Seconds between writes of coalesced message chunks (see :class:`HumanProgress`)."""


class HumanProgress:
    """Live events as short lines on stderr; message chunks stream inline.

    With ``coalesce``, message chunks are held and written together (stderr is unbuffered:
    a write system call per token-sized chunk cost a 100 000-chunk turn 1.6x its time);
    the caller then calls :meth:`flush_pending` every :data:`FLUSH_EVERY` seconds, and any
    line, a newline in the text, or :meth:`close` writes what is held at once."""

    def __init__(self, stream: HumanStream, *, coalesce: bool = False) -> None:
        self._stream = stream
        self._coalesce = coalesce
        self._held: list[str] = []  # chunk text not written yet
        self._mid_message = False
        self._inline: str | None = None  # which inline stream is being written: message, thought

    def flush_pending(self) -> None:
        if self._held:
            self._write("")
            self._stream.flush()

    def _write(self, text: str) -> None:
        """``text``, after what is held (in order)."""
        if self._held:
            self._held.append(text)
            text = "".join(self._held)
            self._held.clear()
        self._stream.write(text)

    def _line(self, text: str) -> None:
        if self._mid_message:
            self._write("\n")
            self._mid_message = False
        self._inline = None
        self._write(text + "\n")
        self._stream.flush()

    def _inline_text(self, kind: str, text: str) -> None:
        """Message and thought chunks stream inline; a switch between them starts a line."""
        if self._inline != kind:
            if self._mid_message:
                self._write("\n")
            if kind == "thought":
                self._write("~ ")
            self._inline = kind
        if self._coalesce and "\n" not in text:
            self._held.append(text)
        else:
            self._write(text)
            self._stream.flush()
        self._mid_message = not text.endswith("\n")
        if not self._mid_message:
            self._inline = None

    def __call__(self, event: Event) -> None:
        data = event.data
        kind = event.kind
        if kind in ("message", "thought"):
            self._inline_text(kind, data["text"])
        elif kind == "status":
            details = " ".join(
                f"{_field(k)}={_field(v)}"
                for k, v in data.items()
                if k != "phase" and v not in (None, "")
            )
            self._line(f"· {_field(data['phase'])} {details}".rstrip())
        elif kind == "tool_call":
            title = _field(data.get("title") or data["tool_call_id"])
            self._line(f"⚙ {title} [{_field(data.get('tool_kind'))}]")
        elif kind == "tool_update":
            title = _field(data.get("title") or data["tool_call_id"])
            self._line(f"  {title}: {_field(data.get('status'))}")
        elif kind == "permission":
            what = (_field(data.get(k)) for k in ("decision", "title", "reason"))
            self._line("⚑ {}: {} ({})".format(*what))
        elif kind == "terminal":
            if data.get("state") == "started":
                self._line(f"$ {_field(data['command'])}")
            else:
                status = data.get("signal") or f"exit {data.get('exit_code')}"
                self._line(f"  {_field(data['command'])}: {_field(status)}")
        elif kind == "terminal_output":
            self._write(data["text"])
        elif kind == "plan":
            for entry in data.get("entries", []):
                self._line(f"  [{_field(entry.get('status'))}] {_field(entry.get('content'))}")
        elif kind in ("warning", "stderr"):
            self._line(f"! {_field(data.get('message') or data.get('line'))}")

    def close(self) -> None:
        if self._mid_message:
            self._write("\n")
        self.flush_pending()
        self._stream.flush()


def event_printer(
    mode: str, *, coalesce: bool = False
) -> tuple[EventHandler | None, Callable[[], None], Callable[[], None] | None]:
    """The handler for ``--events MODE``, what ends it, and (``coalesce``, human mode) what
    to call every :data:`FLUSH_EVERY` seconds while it runs."""
    if mode == "ndjson":

        def ndjson(event: Event) -> None:
            err_json(event.to_dict())

        return ndjson, lambda: None, None
    if mode == "human":
        human = HumanProgress(human_stream(), coalesce=coalesce)
        return human, human.close, human.flush_pending if coalesce else None
    return None, lambda: None, None
