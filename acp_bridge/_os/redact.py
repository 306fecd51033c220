"""The one redaction policy: which values are secrets, and how they are hidden wherever the
bridge writes or shows something (transcripts, stderr tails, the CLI, ``profiles show``).

A secret is a *value* handed to an agent that comes from the host's environment (a
passed-through variable, a ``${VAR}`` expansion) or sits under a secret-looking name (``*KEY*``,
``*TOKEN*``, ``Authorization``, …) in its ``env`` or in the ``env`` and ``headers`` of its MCP
servers — and is at least four characters long and not a bare JSON token: flags such as
``GEMINI_CLI_NO_RELAUNCH: "true"`` are not secrets, and replacing every ``true`` would shred
the text. ``AgentProfile.secret_values`` applies the rule to a profile.

In JSON text (transcripts) a secret is replaced in each form it can take inside a JSON
string (escaped, and ASCII-escaped), so every line stays valid JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
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
            json.dumps(secret, ensure_ascii=ascii_only)[1:-1].encode()
            for secret in values
            for ascii_only in (False, True)
        }
        self._json_forms = sorted(forms, key=len, reverse=True)

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
        """Serialized JSON with every secret replaced inside its strings; stays valid JSON."""
        for form in self._json_forms:
            if form in data:
                data = data.replace(form, REDACTED.encode())
        return data
