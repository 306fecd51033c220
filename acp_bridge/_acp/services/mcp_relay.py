"""The stdio face of the bridge's services for an agent that takes only stdio MCP servers:
``python -m acp_bridge._acp.services.mcp_relay TARGET`` (standard library only; the agent starts it,
inside its sandbox). ``TARGET`` is where the bridge serves its MCP endpoint: ``unix:PATH``, a
socket in the run's private ``/tmp`` (a sandboxed run: a path reaches the bridge whatever
the sandbox's network setting), or ``http://127.0.0.1:PORT/mcp`` (no sandbox).

Each JSON-RPC line on stdin is posted to the endpoint with the token from
``$ACP_BRIDGE_SERVICES_TOKEN``; each reply goes out on stdout as one line. The bridge decides
and records everything; this only carries lines. When the bridge cannot be reached, a
request is answered with a JSON-RPC error saying so (a notification is dropped): the agent
is told, never left waiting.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import urllib.parse

from acp_bridge._acp.services.mcp_endpoint import ENDPOINT, TOKEN_VARIABLE
from acp_bridge._os import bounded_json
from acp_bridge._os.fs.unix_sockets import connect_unix

TIMEOUT = 3600.0  # a run_command may take the terminal's whole timeout
# The endpoint checks the Host header against loopback names (DNS rebinding protection);
# over a unix socket there is no host, so the relay names the one it stands for.
UNIX_HOST = "localhost:0"


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=TIMEOUT)
        self.socket_path = path

    def connect(self) -> None:
        self.sock = connect_unix(self.socket_path, self.timeout)


def connection(target: str) -> tuple[http.client.HTTPConnection, str, dict[str, str]]:
    """A connection to ``target``, the request path, and the headers it needs."""
    if target.startswith("unix:"):
        return _UnixConnection(target.removeprefix("unix:")), ENDPOINT, {"host": UNIX_HOST}
    url = urllib.parse.urlsplit(target)
    if url.scheme != "http" or not url.hostname:
        raise SystemExit(f"acp-bridge services relay: not a target: {target!r}")
    return http.client.HTTPConnection(url.hostname, url.port, timeout=TIMEOUT), url.path, {}


def _unreachable(line: bytes, why: Exception) -> bytes | None:
    """The error reply to ``line`` when the bridge cannot be reached (None: nobody waits)."""
    try:
        message = bounded_json.loads(line)
    except ValueError:  # not JSON, or nested past the bound (json itself would recurse)
        return None
    if not isinstance(message, dict) or "id" not in message:
        return None
    error = {"code": -32603, "message": f"acp-bridge services unreachable: {why}"}
    return json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode()


def main(target: str) -> int:
    conn, path, fixed = connection(target)
    token = os.environ.get(TOKEN_VARIABLE, "")
    session: str | None = None
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        headers = {
            **fixed,
            # One connection per message: a kept-alive one goes stale while the agent thinks
            # (the server drops it after seconds), and a message is never sent twice.
            "connection": "close",
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "authorization": f"Bearer {token}",
        }
        if session:
            headers["mcp-session-id"] = session
        body: bytes | None
        try:
            conn.request("POST", path, body=line, headers=headers)
            response = conn.getresponse()
            session = response.getheader("mcp-session-id") or session
            body = response.read()
        except (OSError, http.client.HTTPException) as exc:
            body = _unreachable(line, exc)
        finally:
            conn.close()
        if body and body.strip():
            sys.stdout.buffer.write(body.strip() + b"\n")
            sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
