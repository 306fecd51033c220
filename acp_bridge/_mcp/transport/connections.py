"""HTTP connections that must say what they want in time (slowloris, the header half).

uvicorn bounds the wait between requests on a kept-alive connection, but not the wait for a
request's headers: a client that connects and sends nothing — or a header a byte at a time — holds a
connection, a file descriptor, forever, and needs no token to do it (the token is checked once the
headers are in). Enough of them and the server cannot open the pipes an agent needs.
:class:`TimelyH11` is uvicorn's HTTP/1.1 protocol with one more timer: from the moment a connection
opens, and again after each response, the next request's headers must arrive within ``timeout``
seconds, else the connection is closed. (The body has its own deadline:
:class:`~acp_bridge._mcp.transport.serving.BodyDeadline`.) A request in progress — a tool call, a
long event stream — is never cut.

It uses uvicorn's protocol hooks (``connection_made``, ``on_response_complete``,
``connection_lost``, and ``cycle``: the request in progress), which uvicorn's own shutdown
relies on too.

Framing is strict (:class:`StrictFraming`): a request that says both ``Content-Length`` and
``Transfer-Encoding`` is the shape of request smuggling — a proxy in front may frame it one
way and we the other — and RFC 9112 §6.1 says to close the connection after answering it.
h11 alone would frame it by ``Transfer-Encoding`` and go on; here it is a protocol error like
h11's own (a bad ``Content-Length``, a second one that differs, a ``Transfer-Encoding``
other than ``chunked``, a malformed chunk): uvicorn answers 400 and closes the connection,
and nothing after the error on that connection is read as a request.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import anyio
import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from acp_bridge.errors import ConfigError


class StrictFraming(h11.Connection):
    """h11's server side, refusing a request with both Content-Length and Transfer-Encoding."""

    def next_event(self) -> Any:
        event = super().next_event()
        if isinstance(event, h11.Request):
            names = {name for name, _ in event.headers}  # lower-cased by h11
            if b"content-length" in names and b"transfer-encoding" in names:
                raise h11.RemoteProtocolError(
                    "both Content-Length and Transfer-Encoding (RFC 9112 6.1)", 400
                )
        return event


class TimelyH11(H11Protocol):
    """uvicorn's h11 protocol; headers due ``timeout`` seconds after a connection opens or a
    response ends (set on the subclass: uvicorn builds the protocol itself)."""

    timeout: float = 30.0
    _due: asyncio.TimerHandle | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        limit = self.conn._max_incomplete_event_size  # as uvicorn configured it
        self.conn = StrictFraming(h11.SERVER, max_incomplete_event_size=limit)

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._due is not None:
            self._due.cancel()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._due is not None:
            self._due.cancel()
        self._due = self.loop.call_later(self.timeout, self._overdue)

    def _overdue(self) -> None:
        if self.cycle is None or self.cycle.response_complete:  # no request under way
            self.transport.close()


def timely(timeout: float) -> type[TimelyH11]:
    """The protocol class with this ``timeout``."""
    return type("TimelyH11", (TimelyH11,), {"timeout": timeout})


def bound_socket(host: str, port: int, option: str) -> socket.socket:
    """A socket listening at ``host``:``port``, bound before anything is told (port 0
    resolved, a port in use refused at once); ``option``: what the user gave it with, for
    the error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        raise ConfigError(f"{option}: cannot listen on {host}:{port}: {exc}") from None


def serve_on(
    sock: socket.socket, app: Any, request_timeout: float, *, shutdown_grace: int, lifespan: str
) -> None:
    """uvicorn on ``sock`` with :func:`timely` HTTP/1.1 until SIGINT/SIGTERM; open requests
    get ``shutdown_grace`` seconds then. The caller closes the socket (it owns it from
    :func:`bound_socket` on, whatever happens before this)."""
    import uvicorn

    config = uvicorn.Config(
        app,
        http=timely(request_timeout),
        log_config=None,
        log_level="warning",
        timeout_graceful_shutdown=shutdown_grace,
        lifespan=lifespan,  # type: ignore[arg-type]
    )
    anyio.run(uvicorn.Server(config).serve, [sock])
