"""How the agent reaches the bridge's files-and-terminals MCP server (mcp_tools.py), whatever
its sandbox allows (docs/explanation/acp.md, two wire versions, one turn model; security.md).

The server runs in the bridge — decisions and the ledger stay there — and the agent reaches
it by a transport it advertised, chosen by what its sandbox lets through:

- **HTTP** (streamable, JSON responses) on a fresh loopback port, each request carrying a
  random bearer token: for an agent that takes HTTP servers and whose sandbox reaches the
  host's loopback (no sandbox, or the network on);
- **stdio**: a relay the agent starts (``python -m acp_bridge._acp.services.mcp_relay TARGET``,
  standard library only) that carries its lines to the server — over a unix socket in the
  run's private ``/tmp`` when the run is sandboxed (a path crosses bubblewrap's
  ``--unshare-net`` and Landlock's TCP ban alike; the socket is the sandbox's own ``/tmp``,
  so nothing is widened), over the loopback port when it is not.

HTTP is preferred where it works (no extra process). What cannot work is said, never
silent: an agent that takes only HTTP servers under ``network: off`` gets nothing — the
bridge would have to widen the sandbox (Landlock can allow a TCP port only to every host)
or put a process of its own inside the agent's — and ``meta.warnings`` names
``sandbox.network``; a v2 agent that takes no MCP servers at all is told about the same way.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from acp_bridge._acp.services.client import ClientServices
from acp_bridge._acp.services.mcp_endpoint import ENDPOINT, TOKEN_VARIABLE
from acp_bridge._acp.services.mcp_tools import SERVER_NAME, ServicesMcp
from acp_bridge._acp.wire.initialize_schema import InitializeResult
from acp_bridge._acp.wire.schema import McpServerHttp, McpServerStdio, NameValue
from acp_bridge._os.bearer import BearerToken
from acp_bridge._os.fs.unix_sockets import listen_unix
from acp_bridge._os.sandbox import RunSandbox
from acp_bridge.errors import BridgeError

STOP_GRACE = 2.0

McpEntry = McpServerHttp | McpServerStdio
Offered = tuple[McpEntry | None, str | None]
"""The ``mcpServers`` entry (None: none), and why nothing could be offered (None: fine)."""

ONLY_HTTP = (
    "services: the agent takes only HTTP MCP servers, which cannot reach the bridge from "
    "a sandbox with sandbox.network: off; it gets no files or commands from the bridge "
    "(set sandbox.network: on, or use an agent that takes stdio MCP servers)"
)
NO_MCP = (
    "services: the agent takes no MCP servers (capabilities.session.mcp), so it gets no "
    "files or commands from the bridge"
)


class ServicesReach:
    """What the agent's sandbox lets through to the bridge."""

    # A plain class, not a dataclass: those compile their methods as every command starts.
    __slots__ = ("loopback", "socket")

    def __init__(self, loopback: bool, socket: tuple[Path, str] | None) -> None:
        self.loopback = loopback  # the host's loopback is reachable (no sandbox, or network on)
        # A socket path in the run's private ``/tmp``: the bridge's, the agent's (None: no
        # sandbox).
        self.socket = socket

    @classmethod
    def of(cls, box: RunSandbox) -> ServicesReach:
        name = f"acp-bridge-services-{secrets.token_hex(6)}.sock"  # unguessable: never planted
        return cls(box.host_loopback, box.shared_path(name))


UNSANDBOXED = ServicesReach(loopback=True, socket=None)


class ServicesOffer:
    """The run's files and terminals as an MCP server, started when a session will offer
    it: to a v2 agent (v2 has no fs/* or terminal/*), or a v1 agent under ``services: mcp |
    both``. The MCP SDK and uvicorn are imported only then."""

    def __init__(
        self, services: ClientServices, tg: TaskGroup, reach: ServicesReach = UNSANDBOXED
    ) -> None:
        self._services, self._tg, self._reach = services, tg, reach
        self._tools = ServicesMcp(services)
        self.token = secrets.token_urlsafe(24)
        self._target: str | None = None
        """Where the server listens: its URL, or ``unix:`` and the agent's socket path."""
        self._server: Any = None
        self._stopped = anyio.Event()

    async def __call__(self, agent: InitializeResult, v2: bool) -> Offered:
        if not v2 and self._services.profile.services == "acp":
            return None, None
        if not self._tools.tools():
            return None, None
        mcp = agent.agent_capabilities.mcp_capabilities
        if mcp.http and self._reach.loopback:
            return self._http(await self._listen(unix=False)), None
        if mcp.stdio:
            return self._relay(await self._listen(unix=self._reach.socket is not None), v2), None
        return None, ONLY_HTTP if mcp.http else NO_MCP

    def _http(self, url: str) -> McpServerHttp:
        auth = NameValue(name="Authorization", value=f"Bearer {self.token}")
        return McpServerHttp(type="http", name=SERVER_NAME, url=url, headers=[auth])

    def _relay(self, target: str, v2: bool) -> McpServerStdio:
        return McpServerStdio(
            type="stdio" if v2 else None,
            name=SERVER_NAME,
            command=sys.executable,
            args=["-m", "acp_bridge._acp.services.mcp_relay", target],
            env=[NameValue(name=TOKEN_VARIABLE, value=self.token)],
        )

    # --- serving ---------------------------------------------------------------------------

    async def _listen(self, *, unix: bool) -> str:
        """Serve in the run's task group until :meth:`stop`, on a unix socket in the run's
        private ``/tmp`` or a fresh loopback port; the target the agent is given."""
        if self._target is not None:  # a session opened again (a follow-up): same server
            return self._target
        import uvicorn

        app = BearerToken(self._tools.app().streamable_http_app(
            streamable_http_path=ENDPOINT, json_response=True, host="127.0.0.1"
        ), self.token)  # fmt: skip
        if unix:
            assert self._reach.socket is not None
            host, inside = self._reach.socket
            try:
                sock = listen_unix(str(host))
            except OSError as exc:
                raise BridgeError(f"services: cannot listen on {host}: {exc}") from exc
            self._target = f"unix:{inside}"
        else:
            sock = socket.create_server(("127.0.0.1", 0))
            self._target = f"http://127.0.0.1:{sock.getsockname()[1]}{ENDPOINT}"
        config = uvicorn.Config(app, log_config=None, log_level="warning", lifespan="on")
        self._server = server = _server_class()(config)

        async def serve() -> None:
            try:
                with contextlib.closing(sock):
                    await server.serve([sock])
            finally:
                self._stopped.set()

        self._tg.start_soon(serve)
        return self._target

    async def stop(self) -> None:
        """Ask uvicorn to finish (its lifespan ends cleanly), waiting at most STOP_GRACE."""
        if self._server is not None:
            self._server.should_exit = True
            with anyio.move_on_after(STOP_GRACE):
                await self._stopped.wait()


def _server_class() -> Any:
    import uvicorn

    class Quiet(uvicorn.Server):
        """uvicorn without its signal handlers: the bridge's own stay in charge."""

        @contextlib.contextmanager
        def capture_signals(self) -> Any:
            yield

    return Quiet
