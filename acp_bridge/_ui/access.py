"""Who may reach the viewer, and what its responses let a browser do.

The rules are the MCP HTTP face's, through the same code:

- ``Host``/``Origin``: on loopback, foreign values are refused by the MCP SDK's DNS-rebinding
  check, with the rules of :func:`~acp_bridge._mcp.transport.listen.rebinding_rules`;
- the token: every request carries it, compared in constant time by
  :class:`~acp_bridge._os.bearer.BearerToken`. A browser cannot send an ``Authorization``
  header when it follows a link, so the token arrives once in the URL the command prints
  (``?token=``), is moved into an ``HttpOnly``, ``SameSite=Strict`` cookie named for the
  port, and the browser is sent on to the same page without it (no ``Referer`` leaves for
  another site: ``Referrer-Policy: same-origin``; not ``no-referrer``, under which Chromium
  sends a form's ``Origin`` as ``null``, and the Origin rule refuses it). Each later
  request's cookie is handed to the bearer check as its ``Authorization`` header.

A new token is made at every start: a page of an earlier start is refused.

The one action that changes anything (stopping a run) is a ``POST`` that also carries a
value derived from the token (:func:`form_token`) in its form: another site can neither read
it nor send the cookie (``SameSite=Strict``), and a foreign ``Origin`` is refused above.

Every response says: no script but this server's files, no inline script or style, no
frames, no plugins (:data:`CSP`); not to guess content types; not to be cached.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request

from acp_bridge._os.bearer import BearerToken

Scope = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[Any], Any]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
"""The Content-Security-Policy of every response: nothing inline, nothing from elsewhere."""
SECURITY_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
)
TOKEN_PARAMETER = "token"
_FORM_PURPOSE = b"acp-bridge ui: a state-changing form"


def cookie_name(port: int) -> str:
    """The token's cookie: one per port, as cookies do not tell ports apart."""
    return f"acp_bridge_ui_{port}"


def form_token(token: str) -> str:
    """The value a state-changing form carries: derived from the token, not the token."""
    return hmac.new(token.encode(), _FORM_PURPOSE, hashlib.sha256).hexdigest()


def form_token_ok(token: str, given: str) -> bool:
    return hmac.compare_digest(form_token(token).encode(), given.encode())


class Access:
    """ASGI middleware in front of the viewer: the Host/Origin rules, the token (URL once,
    then the cookie, checked by the bearer check) and the security headers."""

    def __init__(
        self, app: Any, token: str, port: int, rules: TransportSecuritySettings | None
    ) -> None:
        self.app = BearerToken(app, token)
        self.token = token
        self.cookie = cookie_name(port)
        self.rebinding = TransportSecurityMiddleware(rules)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def secured(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        request = Request(scope)
        refused = await self.rebinding.validate_request(request, is_post=False)
        if refused is not None:
            await refused(scope, receive, secured)
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [value for name, value in query if name == TOKEN_PARAMETER]
        if given and hmac.compare_digest(given[-1].encode(), self.token.encode()):
            await self._into_cookie(scope, query, secured)
            return
        cookie = request.cookies.get(self.cookie)
        if cookie is not None and not given:
            headers = [(k, v) for k, v in scope["headers"] if k != b"authorization"]
            headers.append((b"authorization", f"Bearer {cookie}".encode("latin-1", "replace")))
            scope = {**scope, "headers": headers}
        await self.app(scope, receive, secured)

    async def _into_cookie(self, scope: Scope, query: list[tuple[str, str]], send: Send) -> None:
        """The token from the URL into the cookie; the same page again, without it."""
        rest = urlencode([(name, value) for name, value in query if name != TOKEN_PARAMETER])
        # The raw path (still percent-encoded: no control character reaches the header),
        # never scheme-relative ("//host": another site).
        path = scope.get("raw_path") or scope["path"].encode("utf-8")
        location = b"/" + path.lstrip(b"/") + (f"?{rest}".encode() if rest else b"")
        cookie = f"{self.cookie}={self.token}; HttpOnly; SameSite=Strict; Path=/"
        headers = [
            (b"location", location),
            (b"set-cookie", cookie.encode("latin-1")),
            (b"content-length", b"0"),
        ]
        await send({"type": "http.response.start", "status": 303, "headers": headers})
        await send({"type": "http.response.body", "body": b""})
