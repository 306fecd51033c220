"""What an agent tells the user beside its answer: ``notice`` updates and context compaction
(stable v1 from schema 1.22 on, and v2).

Notices are live, fire-and-forget information (a rate limit hit, a model fallback): each
becomes a ``notice`` event and a bounded record in ``meta.notices``. Compaction is the
agent shrinking its own context: ``compaction_update`` (id, status, optional summary and
error) and ``compaction_summary_chunk`` (a piece of the retained summary) become
``compaction`` events and ``meta.compactions`` (id, status, error, the summary's size) —
never message text, so a summary is never mistaken for the turn's answer.

Everything kept is bounded: at most :data:`MAX_NOTICES` notices and :data:`MAX_COMPACTIONS`
compactions, their strings cut to :data:`TEXT_CHARS`. A compaction past the cap, or with an
id longer than :data:`MAX_ID_CHARS`, is dropped with its updates and counted
(``_records/bounded.py``): never kept under a cut id, which may be another's.
"""

from __future__ import annotations

from typing import Any

from acp_bridge._records.bounded import BoundedList, BoundedTable
from acp_bridge.events import EventSink

MAX_NOTICES = 256
MAX_COMPACTIONS = 64
MAX_ID_CHARS = 256
TEXT_CHARS = 1000


def _text(value: object) -> str | None:
    return value[:TEXT_CHARS] if isinstance(value, str) else None


class Notices:
    """The notices and compactions of one session."""

    def __init__(self, sink: EventSink) -> None:
        self._sink = sink
        self.notices: BoundedList[dict[str, Any]] = BoundedList("notices", MAX_NOTICES)
        self.compactions: BoundedTable[str, dict[str, Any]] = BoundedTable(
            "compactions", MAX_COMPACTIONS, MAX_ID_CHARS
        )

    def notice(self, update: dict[str, Any]) -> None:
        title, severity = update.get("title"), update.get("severity")
        if not isinstance(title, str) or not title or not isinstance(severity, str):
            raise TypeError("a notice needs a title and a severity")
        record = {"severity": severity[:32], "title": title[:TEXT_CHARS]}
        description = _text(update.get("description"))
        if description:
            record["description"] = description
        self.notices.add(record)
        self._sink.emit("notice", **record)

    def compaction(self, update: dict[str, Any]) -> None:
        compaction_id, status = update.get("compactionId"), update.get("status")
        if not isinstance(compaction_id, str) or not isinstance(status, str):
            raise TypeError("compaction_update needs a compactionId and a status")
        record = self._record(compaction_id)
        if record is None:
            return
        record["status"] = status[:32]
        if "error" in update:  # only changed fields are sent; null clears
            error = _text(update["error"])
            if error:
                record["error"] = error
            else:
                record.pop("error", None)
        if isinstance(update.get("summary"), list):  # the whole summary, replacing
            record["summary_chars"] = _chars(update["summary"])
        self._sink.emit("compaction", **record)

    def summary_chunk(self, update: dict[str, Any]) -> None:
        compaction_id = update.get("compactionId")
        if not isinstance(compaction_id, str):
            raise TypeError("compaction_summary_chunk needs a compactionId")
        record = self._record(compaction_id)
        if record is not None:
            record["summary_chars"] = record.get("summary_chars", 0) + _chars(
                [update.get("content")]
            )

    def _record(self, compaction_id: str) -> dict[str, Any] | None:
        return self.compactions.add(
            compaction_id, lambda: {"compaction_id": compaction_id, "status": "in_progress"}
        )

    def records(self) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]:
        """``meta.notices`` and ``meta.compactions``."""
        return list(self.notices) or None, list(self.compactions.values()) or None

    def warnings(self) -> list[str]:
        return [w for w in (self.notices.warning(), self.compactions.warning()) if w]


def _chars(blocks: list[Any]) -> int:
    return sum(
        len(block["text"])
        for block in blocks
        if isinstance(block, dict) and isinstance(block.get("text"), str)
    )
