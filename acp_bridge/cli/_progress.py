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


class HumanProgress:
    """Live events as short lines on stderr; message chunks stream inline."""

    def __init__(self, stream: HumanStream) -> None:
        self._stream = stream
        self._mid_message = False
        self._inline: str | None = None  # which inline stream is being written: message, thought

    def _line(self, text: str) -> None:
        if self._mid_message:
            self._stream.write("\n")
            self._mid_message = False
        self._inline = None
        self._stream.write(text + "\n")
        self._stream.flush()

    def _inline_text(self, kind: str, text: str) -> None:
        """Message and thought chunks stream inline; a switch between them starts a line."""
        if self._inline != kind:
            if self._mid_message:
                self._stream.write("\n")
            self._stream.write("~ " if kind == "thought" else "")
            self._inline = kind
        self._stream.write(text)
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
            self._stream.write(data["text"])
        elif kind == "plan":
            for entry in data.get("entries", []):
                self._line(f"  [{_field(entry.get('status'))}] {_field(entry.get('content'))}")
        elif kind in ("warning", "stderr"):
            self._line(f"! {_field(data.get('message') or data.get('line'))}")

    def close(self) -> None:
        if self._mid_message:
            self._stream.write("\n")
            self._stream.flush()


def event_printer(mode: str) -> tuple[EventHandler | None, Callable[[], None]]:
    if mode == "ndjson":

        def ndjson(event: Event) -> None:
            err_json(event.to_dict())

        return ndjson, lambda: None
    if mode == "human":
        human = HumanProgress(human_stream())
        return human, human.close
    return None, lambda: None
