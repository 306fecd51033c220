"""A minimal synthetic ACP agent for the stream benchmark (stdlib only).

    python benchmarks/stream_agent.py N [WIDTH]

It answers ``initialize`` and ``session/new``; on ``session/prompt`` it writes N
``agent_message_chunk`` notifications as fast as it can, then the prompt reply. The lines
are serialized once, at startup, and written in big blocks, so the agent's own cost stays
out of the client's measurement: what is measured is how fast a client reads.

Chunk ``i`` carries the text ``chunk_text(i)``: a client that got every chunk, in order, has
their concatenation as its answer. With WIDTH, each text is padded with dots to WIDTH
characters (``WIDTH=1048576`` and ``N=100``: a 100 MB answer). No ``messageId``: none of
the real agents we recorded sends one, so this is the common path. Unknown requests get
-32601; notifications (``session/cancel``) are ignored. The agent exits when its stdin closes.
"""

from __future__ import annotations

import json
import os
import sys

SESSION_ID = "stream-1"
BLOCK = 1 << 20  # bytes per os.write: big writes, few system calls
_LINE = (
    '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"'
    + SESSION_ID
    + '","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%s"}}}}\n'
)


def chunk_text(i: int, width: int = 0) -> str:
    """A short, token-sized, distinct text per chunk (so order and loss are detectable),
    padded to ``width`` characters."""
    return f"t{i} ".ljust(width, ".")


def stream_payload(n: int, width: int = 0) -> bytes:
    """The N notification lines, serialized once."""
    return "".join([_LINE % chunk_text(i, width) for i in range(n)]).encode()


def _reply(request_id: object, result: object) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n").encode()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view[:BLOCK])
        view = view[written:]


def serve(n: int, width: int = 0) -> None:
    payload = stream_payload(n, width)
    out = sys.stdout.fileno()
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            continue  # notifications and replies: nothing to answer
        method, request_id = message["method"], message["id"]
        if method == "initialize":
            result: object = {
                "protocolVersion": 1,
                "agentCapabilities": {},
                "authMethods": [],
                "agentInfo": {"name": "stream-agent", "version": "1"},
            }
        elif method == "session/new":
            result = {"sessionId": SESSION_ID}
        elif method == "session/prompt":
            _write_all(out, payload)
            result = {"stopReason": "end_turn"}
        else:
            error = {"code": -32601, "message": "Method not found", "data": {"method": method}}
            reply = {"jsonrpc": "2.0", "id": request_id, "error": error}
            _write_all(out, (json.dumps(reply) + "\n").encode())
            continue
        _write_all(out, _reply(request_id, result))


if __name__ == "__main__":
    serve(
        int(sys.argv[1]) if len(sys.argv) > 1 else 100_000,
        int(sys.argv[2]) if len(sys.argv) > 2 else 0,
    )
