"""The one redaction policy: which values are secrets, and how they are hidden wherever the
bridge writes or shows something (transcripts, stderr tails, the CLI, ``profiles show``).

A secret is a *value* handed to an agent that comes from the host's environment (a
passed-through variable, a ``${VAR}`` expansion) or sits under a secret-looking name (``*KEY*``,
``*TOKEN*``, ``Authorization``, …) in its ``env`` or in the ``env`` and ``headers`` of its MCP
servers — and is at least four characters long and not a bare JSON token: flags such as
``GEMINI_CLI_NO_RELAUNCH: "true"`` are not secrets, and replacing every ``true`` would shred
the text. ``AgentProfile.secret_values`` applies the rule to a profile.

In JSON text (transcripts) a secret is replaced however it is written inside a JSON string:
JSON lets a writer escape *any* character as ``\\uXXXX`` (either case of hex, a surrogate
pair beyond U+FFFF), ``/`` as ``\\/``, and ``json.dumps``'s two forms are only two of those.
The common forms are found with a plain search. A line holding another escape is unescaped
(C codecs: ~1 µs for a chunk line) and searched for the secrets; only when one is there is
the line rewritten, by one pattern that accepts every spelling of every character of every
secret. Either way a secret is replaced only where a character of the text starts, never
from inside an escape (the digit ending ``\\u0030`` is also a ``0``), so every line stays
valid JSON. Events carry decoded text, so the plain-text rule covers them
(``EventSink.redact``).
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

REDACTED = "[REDACTED]"
MIN_SECRET_LENGTH = 4
_JSON_TOKEN = re.compile(r"true|false|null|-?[0-9][0-9.eE+-]*")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASS|CREDENTIAL|AUTH|COOKIE|SESSION", re.IGNORECASE)


def looks_secret(name: str) -> bool:
    """Whether a variable or header name says its value is a secret."""
    return _SECRET_NAME.search(name) is not None


def is_secret_value(value: str) -> bool:
    return len(value) >= MIN_SECRET_LENGTH and not _JSON_TOKEN.fullmatch(value)


def shown(value: str) -> str:
    """How a secret value is shown to people: its length, never its text."""
    return f"<redacted, {len(value)} chars>"


class Redactor:
    """Hides a fixed set of secret values; longer ones first, so a secret that contains a
    shorter one is hidden whole."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = {s for s in secrets if is_secret_value(s)}
        self._texts = sorted(values, key=len, reverse=True)
        forms = {
            json.dumps(secret, ensure_ascii=ascii_only)[1:-1].encode("utf-8", "surrogatepass")
            for secret in values
            for ascii_only in (False, True)
        }
        self._json_forms = sorted(forms, key=len, reverse=True)
        self._wide = any(ord(char) > 0xFFFF for secret in values for char in secret)
        self._escaped = (
            re.compile(
                rb"(?<!\\)((?:\\\\)*)(?:"
                + b"|".join(_spellings(secret) for secret in self._texts)
                + b")"
            )
            if values
            else None
        )

    def __bool__(self) -> bool:
        return bool(self._texts)

    def is_secret(self, value: object) -> bool:
        return isinstance(value, str) and value in self._texts

    def text(self, text: str) -> str:
        """Plain text (a stderr tail, a message) with every secret replaced."""
        for secret in self._texts:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def data(self, value: Any) -> Any:
        """JSON-like data (dicts, lists, strings) with every secret replaced in its strings,
        keys too; other values as they are."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(str(k)): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(item) for item in value]
        return value

    def json_bytes(self, data: bytes) -> bytes:
        """Serialized JSON with every secret replaced inside its strings, however escaped;
        stays valid JSON."""
        for form in self._json_forms:
            if form in data:
                data = _redact_where_characters_start(data, _occurrences(data, form))
        escaped = b"\\u" in data or b"\\/" in data
        if self._escaped is not None and escaped and self._in_unescaped(data):
            data = _redact_where_characters_start(data, _matches(self._escaped, data))
        return data

    def _in_unescaped(self, data: bytes) -> bool:
        """Whether a secret is in ``data`` once its JSON escapes are undone (a detector: the
        pattern that rewrites is ~30x slower, so it runs only where there is something)."""
        if b"\\/" in data:  # the one JSON escape Python's decoder does not know; NUL cannot
            data = data.replace(b"\\\\", b"\0\0").replace(b"\\/", b"/").replace(b"\0\0", b"\\\\")
        if not data.isascii():  # literal UTF-8 characters: as escapes too, for the decoder
            data = data.decode("utf-8", "replace").encode("ascii", "backslashreplace")
        try:
            plain = codecs.decode(data, "unicode_escape")
            if self._wide:  # a pair of \\uD8xx\\uDCxx escapes is one character
                plain = plain.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        except UnicodeError:
            return True  # cannot tell: let the pattern look
        return any(secret in plain for secret in self._texts)


_REDACTED_BYTES = REDACTED.encode()
_BACKSLASH, _U = ord("\\"), ord("u")


def _occurrences(data: bytes, form: bytes) -> Iterator[tuple[int, int, bytes]]:
    """Where ``form`` is in ``data``, each start tried (overlapping too): (start, end, kept
    prefix)."""
    at = data.find(form)
    while at >= 0:
        yield at, at + len(form), b""
        at = data.find(form, at + 1)


def _matches(pattern: re.Pattern[bytes], data: bytes) -> Iterator[tuple[int, int, bytes]]:
    """Where ``pattern`` (an even run of backslashes, kept, then a secret) matches, each
    start tried."""
    match = pattern.search(data)
    while match is not None:
        yield match.start(), match.end(), match.group(1)
        match = pattern.search(data, match.start() + 1)


def _redact_where_characters_start(data: bytes, found: Iterator[tuple[int, int, bytes]]) -> bytes:
    """``data`` with each found secret replaced, but only one that starts where a character
    of the JSON text starts. Why: a secret's spelling can also be read from the middle of
    an escape — ``\\u0030`` ends in the digit ``0``, ``\\n`` in the letter ``n`` — and
    replacing from there cut the escape in two: invalid JSON, and text that was not the
    secret. Overlapping finds after a replacement are skipped."""
    parts, done = [], 0
    for start, end, kept in found:
        if start >= done and _starts_character(data, start):
            parts += [data[done:start], kept, _REDACTED_BYTES]
            done = end
    return b"".join(parts) + data[done:] if parts else data


def _starts_character(data: bytes, at: int) -> bool:
    """Whether ``data[at]`` begins a character of JSON text: not the one after an escaping
    backslash, nor a hex digit of a ``\\uXXXX`` escape."""
    if _escaped_by_backslashes(data, at):
        return False
    for backslash in range(max(at - 5, 0), at - 1):  # a \u whose 4 digits would cover it
        if (
            data[backslash] == _BACKSLASH
            and data[backslash + 1] == _U
            and not _escaped_by_backslashes(data, backslash)
        ):
            return False
    return True


def _escaped_by_backslashes(data: bytes, at: int) -> bool:
    """Whether an odd run of backslashes stands right before ``data[at]``."""
    run = 0
    while at - run > 0 and data[at - run - 1] == _BACKSLASH:
        run += 1
    return run % 2 == 1


_SHORT_ESCAPES = {'"': b'\\"', "\\": b"\\\\", "/": b"\\/", "\b": b"\\b", "\f": b"\\f",
                  "\n": b"\\n", "\r": b"\\r", "\t": b"\\t"}  # fmt: skip


def _hex(code: int) -> bytes:
    """``\\uXXXX`` for ``code``, its hex letters in either case, as a pattern."""
    digits = b"".join(
        b"[%s%s]" % (d.encode(), d.upper().encode()) if d.isalpha() else d.encode()
        for d in f"{code:04x}"
    )
    return rb"\\u" + digits


def _spellings(secret: str) -> bytes:
    """A pattern for every way JSON text can spell ``secret`` inside a string."""
    parts = []
    for char in secret:
        code = ord(char)
        forms = [_hex(code)] if code <= 0xFFFF else []
        if code > 0xFFFF:  # a surrogate pair
            high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
            forms.append(_hex(high) + _hex(low))
        if char in _SHORT_ESCAPES:
            forms.append(re.escape(_SHORT_ESCAPES[char]))
        if char not in '"\\' and code >= 0x20:  # what may stand unescaped in a JSON string
            forms.append(re.escape(char.encode("utf-8", "surrogatepass")))
        parts.append(b"(?:" + b"|".join(forms) + b")")
    return b"".join(parts)
