"""Live events on stderr: short human lines (message chunks inline), or NDJSON."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TextIO

from acp_bridge.events import Event, EventHandler


class HumanProgress:
    """Live events as short lines on stderr; message chunks stream inline."""

    def __init__(self, stream: TextIO) -> None:
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
                f"{k}={v}" for k, v in data.items() if k != "phase" and v not in (None, "")
            )
            self._line(f"· {data['phase']} {details}".rstrip())
        elif kind == "tool_call":
            self._line(f"⚙ {data.get('title') or data['tool_call_id']} [{data.get('tool_kind')}]")
        elif kind == "tool_update":
            self._line(f"  {data.get('title') or data['tool_call_id']}: {data.get('status')}")
        elif kind == "permission":
            self._line(f"⚑ {data['decision']}: {data.get('title')} ({data.get('reason')})")
        elif kind == "terminal":
            if data.get("state") == "started":
                self._line(f"$ {data['command']}")
            else:
                status = data.get("signal") or f"exit {data.get('exit_code')}"
                self._line(f"  {data['command']}: {status}")
        elif kind == "terminal_output":
            self._stream.write(data["text"])
        elif kind == "plan":
            for entry in data.get("entries", []):
                self._line(f"  [{entry.get('status')}] {entry.get('content')}")
        elif kind in ("warning", "stderr"):
            self._line(f"! {data.get('message') or data.get('line')}")

    def close(self) -> None:
        if self._mid_message:
            self._stream.write("\n")
            self._stream.flush()


def event_printer(mode: str) -> tuple[EventHandler | None, Callable[[], None]]:
    if mode == "ndjson":

        def ndjson(event: Event) -> None:
            sys.stderr.write(json.dumps(event.to_dict(), ensure_ascii=False) + "\n")
            sys.stderr.flush()

        return ndjson, lambda: None
    if mode == "human":
        human = HumanProgress(sys.stderr)
        return human, human.close
    return None, lambda: None
