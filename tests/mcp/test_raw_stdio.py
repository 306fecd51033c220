"""``acp-bridge mcp`` on stdio fed lines no well-behaved client sends (raw JSON-RPC: the SDK
client cannot write them): each request gets an answer, and the server goes on serving."""

from __future__ import annotations

import json
import select
import subprocess
from typing import Any

from tests.mcp.conftest import Bridge

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


def _replies(bridge: Bridge, lines: list[bytes], expected: int) -> dict[Any, dict[str, Any]]:
    """The replies (by id) to ``lines``, sent after the handshake, once ``expected`` of them
    came; then stdin closes and the server must end."""
    head = [
        json.dumps(INITIALIZE).encode(),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
    ]
    process = subprocess.Popen(
        bridge.command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=bridge.env(),
        cwd=bridge.workspace,
    )
    assert process.stdin is not None and process.stdout is not None
    replies: dict[Any, dict[str, Any]] = {}
    try:
        process.stdin.write(b"\n".join([*head, *lines, b""]))
        process.stdin.flush()
        while len(replies) < expected + 1:  # the handshake's too
            ready, _, _ = select.select([process.stdout], [], [], 20)
            assert ready, f"no reply within 20 s; so far: {replies}"
            message = json.loads(process.stdout.readline())
            if "method" not in message:
                replies[message.get("id")] = message
        process.stdin.close()
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return replies


def test_a_line_the_sdk_cannot_parse_is_repaired_or_answered(bridge: Bridge) -> None:
    # JSON.stringify writes half an emoji as a lone surrogate escape: sound JSON that the
    # SDK's strict parser refuses (the request was dropped, its host left waiting).
    clipped = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bash",'
    clipped += b'"arguments":{"command":"echo half \\ud83d"}}}'
    deep = b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"a":' + b"[" * 5000 + b"]}}"
    replies = _replies(
        bridge,
        [
            clipped,
            b'{"jsonrpc":"2.0","id":2,"method":"ping"',  # cut short: its id can still be read
            deep,
            b"\xff\xfe not JSON at all",
            b'{"jsonrpc":"2.0","id":4,"method":"ping"}',
        ],
        expected=5,
    )
    result = replies[1]["result"]["structuredContent"]
    assert result["output"]["stdout"] == "half \ufffd\n"
    assert replies[2]["error"]["code"] == -32700
    assert replies[3]["error"]["code"] == -32700
    assert replies[None]["error"] == {"code": -32700, "message": "Parse error"}
    assert replies[4]["result"] == {}  # and it goes on serving
