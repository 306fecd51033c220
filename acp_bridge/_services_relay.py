"""The stdio face of the bridge's services for an agent that takes only stdio MCP servers:
``python -m acp_bridge._services_relay URL`` (standard library only; the agent starts it,
inside its sandbox). Each JSON-RPC line on stdin is posted to the bridge's MCP endpoint
(``URL``, with the token from ``$ACP_BRIDGE_SERVICES_TOKEN``); each reply goes out on stdout
as one line. The bridge decides and records everything; this only carries lines.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request


def main(url: str) -> int:
    token = os.environ.get("ACP_BRIDGE_SERVICES_TOKEN", "")
    session: str | None = None
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "authorization": f"Bearer {token}",
        }
        if session:
            headers["mcp-session-id"] = session
        request = urllib.request.Request(url, data=line, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=3600) as response:
                session = response.headers.get("mcp-session-id") or session
                body = response.read()
        except urllib.error.HTTPError as exc:
            body = exc.read()
        except OSError as exc:  # the bridge is gone: say so to whoever waits for a reply
            message = json.loads(line)
            if "id" in message:
                error = {"code": -32603, "message": f"acp-bridge services unreachable: {exc}"}
                body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode()
            else:
                continue
        if body.strip():
            sys.stdout.buffer.write(body.strip() + b"\n")
            sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
