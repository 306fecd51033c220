"""A bearer token in front of an ASGI app (the MCP face over HTTP, and the services the
bridge offers an agent as MCP tools): 401 for a request without it, compared in constant
time."""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from typing import Any

Scope = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[dict[str, Any]], Any]


class BearerToken:
    """ASGI middleware: 401 for an HTTP request without ``Authorization: Bearer TOKEN``."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
            if not hmac.compare_digest(given, self._expected):
                await http_error(
                    send,
                    401,
                    "unauthorized: send Authorization: Bearer TOKEN",
                    (b"www-authenticate", b'Bearer realm="acp-bridge"'),
                )
                return
        await self.app(scope, receive, send)


async def http_error(send: Send, status: int, error: str, *extra: tuple[bytes, bytes]) -> None:
    """A JSON error response that ends the request (and its connection)."""
    body = json.dumps({"error": error}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
