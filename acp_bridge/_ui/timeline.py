"""A run's recorded events as the items of a timeline, and a diff as lines to show.

The events are the run's live events as the store recorded them (``_runs/recorder.py``): a
message arrives in chunks, a tool call as one event and then its updates. Within one page
of events, consecutive chunks of a message (or of a thought, or of a terminal's output)
become one item, a tool call's updates are folded into its item (its latest status), and
so are a child session's (``subagent``: the agent's subagent, its state, usage and message
count, one item each under the turn that started it). An update whose call (or child) is on
an earlier page stays an item of its own; the page's script folds it into the one shown
(``static/ui.js``).

Everything here is data: the templates render it, escaped (autoescape), so what the agent
wrote is shown as text, whatever it holds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

TEXT_KINDS = frozenset({"message", "thought", "terminal_output", "stderr"})
"""Kinds whose consecutive events are chunks of one text."""
MAX_DIFF_LINES = 5000
"""Lines of a diff shown on the page; the whole file is a download away."""


@dataclass
class Item:
    """One thing on the timeline."""

    kind: str
    seq: int
    """The last event it holds (the next page, or the live follow, starts after it)."""
    elapsed: float
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def extra(self) -> str:
        """The event's other fields as JSON, for kinds shown as they are."""
        return json.dumps(self.data, ensure_ascii=False, indent=1, sort_keys=True)


def timeline(events: Iterable[tuple[int, str]]) -> list[Item]:
    """The items of a page of encoded events ``(seq, JSON)`` in order."""
    items: list[Item] = []
    calls: dict[str, Item] = {}
    children: dict[str, Item] = {}
    for seq, text in events:
        data = json.loads(text)
        kind = str(data.pop("kind", "warning"))
        data.pop("task_id", None)
        elapsed = float(data.pop("elapsed", 0.0))
        last = items[-1] if items else None
        if kind in TEXT_KINDS:
            chunk = str(data.get("text", data.get("line", "")))
            if last is not None and last.kind == kind and _same_stream(last, data):
                last.text += chunk if kind != "stderr" else "\n" + chunk
                last.seq = seq
                continue
            items.append(Item(kind, seq, elapsed, chunk, data))
            continue
        if kind == "subagent":
            child = str(data.get("id", ""))
            if child in children:
                children[child].data.update(data)
                children[child].seq = seq
                continue
            children[child] = Item(kind, seq, elapsed, str(data.get("title") or child), data)
            items.append(children[child])
            continue
        call_id = str(data.get("tool_call_id", ""))
        if kind == "tool_update" and call_id in calls:
            call = calls[call_id]
            call.data.update({k: v for k, v in data.items() if v is not None})
            call.seq = max(call.seq, seq)
            continue
        item = Item(kind, seq, elapsed, str(data.get("title") or data.get("message") or ""), data)
        if kind == "tool_call":
            data.setdefault("status", "pending")
            calls[call_id] = item
        items.append(item)
    return items


def _same_stream(last: Item, data: dict[str, Any]) -> bool:
    """A terminal's output continues only its own terminal's."""
    return last.data.get("terminal_id") == data.get("terminal_id")


@dataclass(frozen=True)
class DiffLine:
    text: str
    kind: str
    """``add``, ``del``, ``hunk``, ``file`` or ``context``: how the line is shown."""


def diff_lines(diff: str, limit: int = MAX_DIFF_LINES) -> tuple[list[DiffLine], bool]:
    """A unified diff's lines, each with how to show it, and whether it was cut at
    ``limit`` lines."""
    lines = diff.splitlines()
    shown = [DiffLine(line, _diff_kind(line)) for line in lines[:limit]]
    return shown, len(lines) > limit


def _diff_kind(line: str) -> str:
    if line.startswith(("diff ", "+++ ", "--- ", "index ", "new file", "deleted file")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "context"
