"""A minimal MCP client for the test agents (standard library only): the client's MCP server
from ``mcpServers`` — a stdio server it starts (the bridge's relay) or a streamable HTTP
URL with JSON responses — initialized, then its tools called one by one."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from typing import Any

PROTOCOL = "2025-06-18"


class McpClient:
    def __init__(self, server: dict[str, Any]) -> None:
        self._ids = 0
        self._session: str | None = None
        self._server = server
        self._child: subprocess.Popen[bytes] | None = None
        if "url" not in server:
            env = {**os.environ, **{e["name"]: e["value"] for e in server.get("env", [])}}
            self._child = subprocess.Popen(
                [server["command"], *server.get("args", [])],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
            )
        self.call("initialize", {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "test-agent", "version": "1"},
        })  # fmt: skip
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The reply to one request: ``{"result": …}`` or ``{"error": …}``."""
        self._ids += 1
        reply = self._send({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params})
        assert reply is not None
        return reply

    def tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.call("tools/call", {"name": name, "arguments": arguments})

    def close(self) -> None:
        if self._child is not None:
            assert self._child.stdin is not None
            self._child.stdin.close()
            self._child.wait(timeout=10)

    def _send(self, message: dict[str, Any]) -> dict[str, Any] | None:
        data = json.dumps(message).encode()
        if self._child is not None:
            assert self._child.stdin is not None and self._child.stdout is not None
            self._child.stdin.write(data + b"\n")
            self._child.stdin.flush()
            if "id" not in message:
                return None
            line = self._child.stdout.readline()
            if not line:
                raise ConnectionError("the stdio MCP server closed its output")
            reply: dict[str, Any] = json.loads(line)
            return reply
        headers = {h["name"]: h["value"] for h in self._server.get("headers", [])}
        headers |= {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": PROTOCOL,
        }
        if self._session:
            headers["mcp-session-id"] = self._session
        request = urllib.request.Request(self._server["url"], data=data, headers=headers)
        with urllib.request.urlopen(request, timeout=60) as response:
            self._session = response.headers.get("mcp-session-id") or self._session
            body = response.read()
        return json.loads(body) if "id" in message else None
