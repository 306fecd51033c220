"""What the parse boundary saw of one agent's output — lines, what was not JSON, what was
skipped, repaired, cut or read as null — counted while the stream runs and told in plain
words in the envelope's ``meta.warnings`` (inbound.py decodes; this keeps the tally)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from acp_bridge._acp.inbound import MAX_ITEMS

__all__ = ["MAX_REASONS", "NON_JSON_SAMPLES", "InboundStats"]

NON_JSON_SAMPLES = 3
MAX_REASONS = 32


class InboundStats:
    """What the boundary saw of one agent's output, for ``meta.warnings``."""

    # A plain class, not a dataclass: those compile their methods as every command starts.
    __slots__ = (
        "cut_collections", "late_replies", "lines", "non_json", "non_json_samples", "numbers",
        "repaired", "skipped", "unknown_replies",
    )  # fmt: skip

    def __init__(
        self,
        lines: int = 0,
        non_json: int = 0,
        non_json_samples: list[str] | None = None,
        skipped: Counter[str] | None = None,
        repaired: int = 0,
        cut_collections: int = 0,
        numbers: int = 0,
        unknown_replies: int = 0,
        late_replies: int = 0,
    ) -> None:
        self.lines = lines
        self.non_json = non_json
        self.non_json_samples: list[str] = [] if non_json_samples is None else non_json_samples
        # Messages that did not fit, by reason (at most MAX_REASONS distinct reasons).
        self.skipped: Counter[str] = Counter() if skipped is None else skipped
        self.repaired = repaired
        self.cut_collections = cut_collections  # arrays and objects cut to MAX_ITEMS
        # Numbers read as null (NaN, Infinity, overflowing floats, integers past 64 bits).
        self.numbers = numbers
        self.unknown_replies = unknown_replies
        self.late_replies = late_replies

    def skip(self, reason: str) -> None:
        if reason in self.skipped or len(self.skipped) < MAX_REASONS:
            self.skipped[reason] += 1
        else:
            self.skipped["other"] += 1

    def sample(self, line: bytes) -> None:
        self.non_json += 1
        if len(self.non_json_samples) < NON_JSON_SAMPLES:
            self.non_json_samples.append(line[:200].decode("utf-8", "replace"))

    def warnings(self, redact: Any = str) -> list[str]:
        """Plain-words warnings; ``redact`` hides secrets in the samples."""
        out = []
        if self.non_json:
            first = redact(self.non_json_samples[0]) if self.non_json_samples else ""
            out.append(
                f"skipped {self.non_json} non-JSON line(s) on the agent's stdout (first: {first!r})"
            )
        if self.skipped:
            total = sum(self.skipped.values())
            reasons = "; ".join(f"{r} ({n})" for r, n in self.skipped.most_common(5))
            out.append(f"skipped {total} malformed message(s) from the agent: {reasons}")
        if self.repaired:
            out.append(f"repaired {self.repaired} message(s) holding lone UTF-16 surrogates")
        if self.cut_collections:
            out.append(
                f"cut {self.cut_collections} list(s) or object(s) of the agent's to their "
                f"first {MAX_ITEMS} items"
            )
        if self.numbers:
            out.append(
                f"read {self.numbers} number(s) as null: NaN, Infinity, or beyond what a "
                "64-bit integer or a float holds"
            )
        if self.unknown_replies:
            out.append(f"ignored {self.unknown_replies} reply(ies) to requests never sent")
        if self.late_replies:
            out.append(f"ignored {self.late_replies} duplicate or late reply(ies)")
        return out
