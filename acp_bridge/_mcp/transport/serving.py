"""Serving the MCP server: stdio (the default), or streamable HTTP behind a bearer token.

stdio: the SDK takes the process's stdin and stdout for the protocol and points file
descriptors 0 and 1 elsewhere (``/dev/null``, stderr), so a stray write of any library or
child process cannot corrupt the stream. The server ends when the host closes stdin.

HTTP: ``--http HOST:PORT`` serves ``http://HOST:PORT/mcp`` (uvicorn; stateful sessions, so
elicitations and progress ride each call's event stream). Every request must carry
``Authorization: Bearer TOKEN`` when a token is set (from ``--token-file`` or
``$ACP_BRIDGE_MCP_TOKEN`` — never the command line, where every user of the machine can read
it in ``ps``). Without a token it listens only on a loopback address; beyond loopback it
refuses to start. On loopback the SDK also refuses foreign ``Host``/``Origin`` headers (DNS
rebinding). A request must arrive within ``--request-timeout`` seconds — its headers
from when the connection opens or the last response ended (else the connection is closed:
:mod:`.connections`), then its whole body (else 408) — so a client that sends slowly, or
not at all, cannot hold a connection open forever. A body holds at most 4 MiB (else 413),
nested at most 64 levels deep (else 400, the bound of every JSON from outside:
``_os/bounded_json.py``). SIGINT/SIGTERM stop it gracefully: running tools are cancelled
the ACP way.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections import deque
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

from acp_bridge._mcp import logs
from acp_bridge._mcp.server import BridgeServer, Settings
from acp_bridge._mcp.transport.listen import PATH, Listen, check_listen, rebinding_rules
from acp_bridge._mcp.transport.stdio_repair import RepairedStream
from acp_bridge._os import bounded_json
from acp_bridge._os.bearer import BearerToken, http_error

SHUTDOWN_GRACE = 15
"""Seconds uvicorn gives open requests on shutdown (a running tool gets the ACP cancel)."""
REQUEST_TIMEOUT = 30.0
"""Seconds a client has for a request's headers, then for its body (``--request-timeout``)."""

Scope = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[dict[str, Any]], Any]


class BodyDeadline:
    """ASGI middleware: an HTTP request's body is read whole within ``timeout`` seconds
    (408 otherwise) before the app sees it, and at most ``limit`` bytes of it (413), so a
    client that trickles its body cannot hold a request — and its session — open forever."""

    def __init__(
        self, app: Any, timeout: float, limit: int = DEFAULT_MAX_REQUEST_BODY_SIZE
    ) -> None:
        self.app = app
        self.timeout = timeout
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        read: deque[dict[str, Any]] = deque()
        size = 0
        with anyio.move_on_after(self.timeout) as reading:
            while True:
                message = await receive()
                read.append(message)
                if message["type"] != "http.request":  # the client went away
                    break
                size += len(message.get("body", b""))
                if size > self.limit:
                    await http_error(send, 413, f"request body over {self.limit} bytes")
                    return
                if not message.get("more_body", False):
                    break
        if reading.cancelled_caught:
            await http_error(send, 408, f"request body not received within {self.timeout:g}s")
            return
        if (deep := _too_deep(read)) is not None:
            await http_error(send, 400, f"request body: {deep}")
            return

        async def replay() -> Any:
            return read.popleft() if read else await receive()

        await self.app(scope, replay, send)


def _too_deep(read: deque[dict[str, Any]]) -> str | None:
    """Why a body nests deeper than every other JSON from outside may (None: it does not,
    or it is not JSON: the SDK answers that). The SDK's parser stops at 200 levels; this is
    the bound every other parse of outside JSON keeps. Parsed here only when it holds more
    brackets than the bound at all: one count over at most ``limit`` bytes otherwise."""
    body = b"".join(message.get("body", b"") for message in read)
    if body.count(b"[") + body.count(b"{") <= bounded_json.MAX_DEPTH:
        return None
    try:
        bounded_json.loads(body)
    except bounded_json.JsonRefused as exc:
        return str(exc) if str(exc).startswith("nested") else None
    return None


def _quiet_sdk() -> None:
    # The SDK warns when a deprecated (2026-07-28) feature is used; the handshake hosts we
    # serve still rely on logging. Only this process's entry point sets filters.
    from mcp.shared.exceptions import MCPDeprecationWarning

    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
    logging.basicConfig(level=logging.WARNING, format="acp-bridge mcp: %(name)s: %(message)s")


def serve_stdio(settings: Settings) -> None:
    """Serve on stdin/stdout until the host closes stdin."""
    from mcp.server.stdio import stdio_server

    _quiet_sdk()
    logs.install()
    server = BridgeServer(settings).build()

    async def main() -> None:
        async with stdio_server() as (read, write):
            repaired = RepairedStream(read, write)
            await server.run(repaired, write, server.create_initialization_options())

    anyio.run(main)


def serve_http(
    settings: Settings,
    listen: Listen,
    token: str | None,
    on_listening: Callable[[str], None],
    *,
    request_timeout: float = REQUEST_TIMEOUT,
) -> None:
    """Serve streamable HTTP at ``listen`` until SIGINT/SIGTERM; ``on_listening`` gets the
    URL once the socket is bound (port 0 resolved)."""
    from acp_bridge._mcp.transport.connections import bound_socket, serve_on

    check_listen(listen, token)
    _quiet_sdk()
    logs.install()
    server = BridgeServer(settings).build()
    app: Any = server.streamable_http_app(
        streamable_http_path=PATH,
        host=listen.host,
        transport_security=rebinding_rules(listen.host),
    )
    app = BodyDeadline(app, request_timeout)
    if token is not None:
        app = BearerToken(app, token)
    with contextlib.closing(bound_socket(listen.host, listen.port, "--http")) as sock:
        on_listening(listen.url(sock.getsockname()[1]))
        serve_on(sock, app, request_timeout, shutdown_grace=SHUTDOWN_GRACE, lifespan="on")
