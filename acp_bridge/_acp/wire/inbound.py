"""The one parse boundary: every line the agent writes on stdout is checked here, once.

A line becomes exactly one of: a :class:`ReplyMessage` to one of our requests (an integer id, a
result or a well-formed error), a :class:`RequestMessage` from the agent (a string method, an
integer or string id, object params), a :class:`NotificationMessage` (a string method, object
params), or a :class:`Skipped` with the reason it does not fit. Nothing past this point sees
raw agent data of the wrong type: no ``"id": true`` taken for request 1 (``bool`` is an
``int`` in Python, not in JSON-RPC), no list where a string is expected, no object nested
100 000 deep (``json`` raises ``RecursionError`` for that, which is not a ``ValueError``).

What a line may not be:

- not UTF-8, not one JSON object: non-JSON (counted, sampled, kept in the transcript);
- a number the bridge cannot hold — ``NaN``/``Infinity`` (not JSON, but agents write them),
  a float that overflows (``1e400``), an integer outside 64 bits (``10^400``; past 4300 digits
  Python would not even read it) — is read as ``null`` and counted (a warning): the rest of
  the message still counts, so a reply whose ``usage`` holds ``NaN`` still ends its turn. A
  *request* holding one is answered -32602 (its handler never sees a number it did not send);
- nested deeper than :data:`MAX_DEPTH` objects and arrays: skipped (a value that deep would
  make every later ``json.dumps`` or model validation recurse past the interpreter's limit);
- holding more than :data:`MAX_VALUES` values: refused *before* it is decoded. Memory is
  counted in what a line decodes to, not in its bytes: ``{},`` is 3 bytes on the wire and a
  64-byte dict once decoded, so a 3 MB line can be a million plan entries (and a GB once
  every later step has copied them). A reply refused so still resolves its request, as an
  error: a turn never waits for a reply that was read and thrown away;
- a collection (array or object) longer than :data:`MAX_ITEMS`: cut to that length in a
  notification or a reply (counted, a warning), refused -32602 in a request (whose handler
  would otherwise act on a different list than the agent sent);
- strings holding lone UTF-16 surrogates (``"\\ud800"``, legal in JSON text, not encodable
  as UTF-8): repaired to U+FFFD, so the envelope can always be written.

The checks cost almost nothing on the hot path (``session/update``): one pass over a line
bounds its commas and opening brackets together (``bytes.translate``), and the exact counts,
the depth walk and the collection lengths are looked at only when that bound passes a limit;
surrogates are only looked for when the line holds a ``\\uD8..\\uDF`` escape. An update
comes back as its params alone, with no message object made for it; any other message as
what :func:`.jsonrpc_messages.classify` tells it is.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from acp_bridge._acp.wire.json_numbers import raw_decode, replaced_numbers
from acp_bridge._acp.wire.jsonrpc_messages import (
    Inbound,
    ReplyMessage,
    RequestMessage,
    Skipped,
    classify,
)
from acp_bridge._acp.wire.schema import INVALID_REQUEST
from acp_bridge._os.bounded_json import MAX_DEPTH, too_deep

UPDATE = "session/update"
# MAX_DEPTH: the deepest nesting of objects and arrays accepted in one message (ACP needs
# about 8), the same as every other JSON from outside.
MAX_VALUES = 100_000
"""Most values (array items, object members) one message may hold: ~10 MB once decoded."""
MAX_ITEMS = 4096
"""Longest array or object kept (plan entries, locations, options, content blocks …)."""


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
_DEEP_CHARS = 2 * MAX_DEPTH + 1
"""A value nested deeper than MAX_DEPTH needs more brackets, opened and closed, than this."""
_SHORT_LINE = 1 << 16
"""Lines up to this many bytes have their commas and brackets bounded in one pass."""


def parse_object(line: bytes) -> Any:
    """One JSON value spanning the whole (stripped) line, else None."""
    return _parse_text(line)[0]


def _parse_text(line: bytes) -> tuple[Any, str]:
    """The JSON value spanning the whole (stripped) line (else None), and the line's text.

    ``json.loads(bytes)`` sniffs the encoding and matches whitespace around the value on
    every call; ACP lines are UTF-8 and already stripped, so decoding and ``raw_decode``
    directly does the same job at about half the cost (this runs for every update).
    """
    try:
        text = line.decode()
        value, end = raw_decode(text)
    except (ValueError, RecursionError):  # UnicodeDecodeError, JSONDecodeError, too deep
        return None, ""
    return (value, text) if end == len(text) else (None, text)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _clean_text(text: str) -> str:
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate: JSON allows it, UTF-8 does not
        return _LONE_SURROGATE.sub("\ufffd", text)
    return text


def _repair_surrogates(value: Any) -> Any:
    """``value`` with every string (keys too) encodable as UTF-8."""
    if isinstance(value, str):
        return _clean_text(value)
    if isinstance(value, dict):
        return {_clean_text(k): _repair_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_repair_surrogates(v) for v in value]
    return value


def sound_object(line: bytes) -> dict[str, Any] | None:
    """The JSON object on one line held to this boundary's rules — not nested past
    :data:`MAX_DEPTH`, lone surrogates repaired — else None. For another JSON-RPC peer's
    lines (the MCP host's) that a stricter parser refused."""
    value = parse_object(line.strip()) if line.strip()[:1] == b"{" else None
    if not isinstance(value, dict) or too_deep(value, MAX_DEPTH):
        return None
    return _repair_surrogates(value)  # type: ignore[no-any-return]


def decode_line(line: bytes, stats: InboundStats) -> Inbound | dict[str, Any] | None:
    """The message on one stripped, non-empty line (None: not JSON; counted in ``stats``).
    A ``session/update`` notification with object params — the stream, nearly every line —
    comes back as those params alone (a dict): no message object is made for it."""
    message: Any = None
    text = ""
    commas = marks = replaced = 0
    if line[0] == 0x7B:  # b"{"; _parse_text inlined: this runs for every line
        # One pass bounds the commas and the brackets that open (each limit below needs
        # many of them); the exact counts only when the bound is past a limit.
        short = len(line) <= _SHORT_LINE  # translate copies the line: not a long one
        marks = len(line) - len(line.translate(None, b",{[")) if short else len(line)
        if marks >= MAX_ITEMS:
            commas = line.count(b",")  # at least the values past the first of each collection
            if commas > MAX_VALUES and _more_values_than(line, MAX_VALUES):
                return _too_many_values(line)
        replaced = replaced_numbers[0]
        try:
            text = line.decode()
            message, end = raw_decode(text)
        except (ValueError, RecursionError):
            message = None
        else:
            if end != len(text):
                message = None
    if type(message) is not dict:  # the decoder makes plain dicts
        stats.sample(line)
        return None
    if (
        marks > MAX_DEPTH
        and len(text) > _DEEP_CHARS
        and text.count("{") + text.count("[") > MAX_DEPTH
        and too_deep(message, MAX_DEPTH)
    ):
        return Skipped(f"nested deeper than {MAX_DEPTH} levels")
    if "\\" in text and _SURROGATE_ESCAPE.search(text):
        repaired = _repair_surrogates(message)
        if repaired != message:
            stats.repaired += 1
        message = repaired
    if commas >= MAX_ITEMS and (long := _long_collections(message)):
        checked = classify(message)
        if isinstance(checked, RequestMessage) and checked.params_ok:
            problem = f"params hold a list or object of more than {MAX_ITEMS} items"
            return RequestMessage(checked.id, checked.method, None, False, problem)
        for node in long:
            _cut(node)
        stats.cut_collections += len(long)
    if replaced_numbers[0] != replaced:
        stats.numbers += replaced_numbers[0] - replaced
        return _without_numbers(classify(message))
    params = message.get("params")
    if type(params) is dict and message.get("method") == UPDATE and "id" not in message:
        return params  # the stream: what classify would call an update notification
    return classify(message)


def _without_numbers(message: Inbound) -> Inbound:
    """A request whose params held a number read as null is not served: -32602."""
    if isinstance(message, RequestMessage) and message.params_ok:
        problem = "params hold a number that is NaN, Infinity or beyond 64 bits"
        return RequestMessage(
            message.id, message.method, None, params_ok=False, params_problem=problem
        )
    return message


_REPLY_ID = re.compile(rb'^\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,18})\s*,')
_REPLY_ID_LAST = re.compile(rb',\s*"id"\s*:\s*(-?\d{1,18})\s*\}$')


_WINDOW = 1 << 20
"""Bytes of a line looked at at once when counting its values (what the count may hold)."""


def _more_values_than(line: bytes, limit: int) -> bool:
    """Whether ``line`` would decode to more than ``limit`` values, bounded by its commas
    outside strings (called only when the line has more commas than that at all).

    Counted a window at a time, each by C routines over it alone: escapes dropped (they
    are only ever inside strings), split at quotes, the commas of the pieces outside
    strings counted; it stops once past ``limit``. A regex over the whole line made a copy
    of it in pieces, a million objects for a million plan entries: 640 MB to refuse 27."""
    count = start = 0
    inside = False  # whether ``start`` is inside a string
    while start < len(line) and count <= limit:
        end = min(start + _WINDOW, len(line))
        while end < len(line) and line[end - 1] == 0x5C:  # not between \ and what it escapes
            end += 1
        window = line[start:end].replace(b"\\\\", b"").replace(b'\\"', b"")
        pieces = window.split(b'"')
        count += b"".join(pieces[1 if inside else 0 :: 2]).count(b",")
        inside ^= len(pieces) % 2 == 0  # an odd count of quotes crosses a boundary
        start = end
    return count > limit


def _too_many_values(line: bytes) -> Inbound:
    """What a line too big to decode still is, told from its text: a request (answered
    -32600), a notification (skipped), or a reply to one of our requests (an error reply:
    whoever waits for it is told now, not at its deadline)."""
    reason = f"a message of over {MAX_VALUES} values (at most {MAX_VALUES} are read)"
    if b'"method"' in line:
        return Skipped(reason, answer=b'"id"' in line)
    found = _REPLY_ID.match(line) or _REPLY_ID_LAST.search(line)
    if found is None:
        return Skipped(reason)
    return ReplyMessage(int(found.group(1)), None, {"code": INVALID_REQUEST, "message": reason})


def _long_collections(value: Any) -> list[dict[str, Any] | list[Any]]:
    """The arrays and objects in ``value`` longer than :data:`MAX_ITEMS` (iterative)."""
    long: list[dict[str, Any] | list[Any]] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if len(node) > MAX_ITEMS:
            long.append(node)
        children = node.values() if isinstance(node, dict) else node
        stack.extend(c for c in children if isinstance(c, dict | list))
    return long


def _cut(node: dict[str, Any] | list[Any]) -> None:
    if isinstance(node, list):
        del node[MAX_ITEMS:]
    else:
        for key in list(node)[MAX_ITEMS:]:
            del node[key]


def not_json(parts: list[bytes]) -> bool:
    """Whether an unfinished line is surely not a JSON object: its first non-blank byte
    is not ``{`` (undecided while it is all blanks)."""
    for part in parts:
        first = part.lstrip()[:1]
        if first:
            return first != b"{"
    return False


# What the boundary saw, counted while the stream runs and told in meta.warnings.

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
