"""The stdio relay of the bridge's services (``python -m acp_bridge._acp.services.mcp_relay``) as a
real process, against an HTTP endpoint on a unix socket: what it carries, how, and what it
says when the bridge cannot be reached."""

from __future__ import annotations

import json
import os
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from acp_bridge._os.fs.unix_sockets import MAX_PATH_BYTES

TOKEN = "relay-test-token"


class Endpoint(socketserver.ThreadingUnixStreamServer):
    """An MCP-like endpoint: echoes each request's id, 202 for a notification; counts the
    connections and keeps each message's headers."""

    daemon_threads = True

    def __init__(self, path: str) -> None:
        self.connections = 0
        self.seen: list[dict[str, Any]] = []
        super().__init__(path, Handler)

    def get_request(self) -> Any:
        self.connections += 1
        return super().get_request()


class Handler(BaseHTTPRequestHandler):
    server: Endpoint
    protocol_version = "HTTP/1.1"  # keeps a connection open unless the client closes it

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.server.seen.append(
            {"message": message, **{k.lower(): v for k, v in self.headers.items()}}
        )
        body = b""
        if "id" in message:
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}}).encode()
        self.send_response(200 if body else 202)
        self.send_header("mcp-session-id", "session-1")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Endpoint, str]]:
    # Deeper than sun_path holds: the relay must reach it through its directory.
    folder = tmp_path.joinpath(*["d" * 40] * 3)
    folder.mkdir(parents=True)
    path = str(folder / "services.sock")
    assert len(path) > MAX_PATH_BYTES
    monkeypatch.chdir(
        folder
    )  # the server binds by the short relative name; the relay gets the long one
    server = Endpoint("services.sock")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, path
    server.shutdown()
    server.server_close()


def relay(target: str, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "acp_bridge._acp.services.mcp_relay", target],
        input="".join(json.dumps(line) + "\n" for line in lines).encode(),
        env={**os.environ, "ACP_BRIDGE_SERVICES_TOKEN": TOKEN},
        capture_output=True, timeout=30, check=True,
    )  # fmt: skip
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_each_message_is_carried_on_a_connection_of_its_own(endpoint: tuple[Endpoint, str]) -> None:
    server, path = endpoint
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {}},
    ]
    replies = relay(f"unix:{path}", lines)
    assert [r["id"] for r in replies] == [1, 2]  # a notification gets no reply line
    assert [s["message"] for s in server.seen] == lines
    # Never a kept-alive connection: one the server dropped while the agent was thinking
    # would lose the next call.
    assert server.connections == 3
    assert {s["authorization"] for s in server.seen} == {f"Bearer {TOKEN}"}
    assert all(s["host"].startswith("localhost:") for s in server.seen)  # the endpoint's check
    assert [s.get("mcp-session-id") for s in server.seen] == [None, "session-1", "session-1"]


def test_an_unreachable_bridge_answers_requests_with_an_error(tmp_path: Path) -> None:
    lines = [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "a", "method": "tools/list"},
    ]
    (reply,) = relay(f"unix:{tmp_path / 'gone.sock'}", lines)
    assert reply["id"] == "a" and reply["error"]["code"] == -32603
    assert "acp-bridge services unreachable" in reply["error"]["message"]
