"""The viewer served: a token made for this start, a socket bound first, uvicorn on it.

The socket is bound before the URL is told (port 0 resolved), with uvicorn's HTTP/1.1
protocol that wants a request's headers in time and frames strictly (the MCP face's:
:mod:`acp_bridge._mcp.transport.connections`). SIGINT/SIGTERM end it; the live streams
close with it.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable
from pathlib import Path

from acp_bridge._mcp.transport.connections import bound_socket, serve_on
from acp_bridge._mcp.transport.listen import Listen, rebinding_rules
from acp_bridge._ui.access import TOKEN_PARAMETER, Access
from acp_bridge._ui.pages import Settings, build_app

REQUEST_TIMEOUT = 30.0
"""Seconds a browser has for a request's headers (from connecting, or the last response)."""
SHUTDOWN_GRACE = 2
"""Seconds open requests (live streams) get when the viewer stops."""


def new_token() -> str:
    """This start's token: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def serve(
    listen: Listen,
    on_listening: Callable[[str], None],
    *,
    store: Path | None = None,
    token: str | None = None,
) -> None:
    """Serve the viewer at ``listen`` until SIGINT/SIGTERM; ``on_listening`` gets the URL
    to open (the token in it) once the socket is bound."""
    token = token or new_token()
    with contextlib.closing(bound_socket(listen.host, listen.port, "ui")) as sock:
        port = sock.getsockname()[1]
        app = Access(build_app(Settings(store, token)), token, port, rebinding_rules(listen.host))
        host = f"[{listen.host}]" if ":" in listen.host else listen.host
        on_listening(f"http://{host}:{port}/?{TOKEN_PARAMETER}={token}")
        serve_on(sock, app, REQUEST_TIMEOUT, shutdown_grace=SHUTDOWN_GRACE, lifespan="off")
