"""An ACP agent that floods its client in one way (stdlib only), for ``floods.py``.

    python benchmarks/flood_agent.py KIND N

It answers ``initialize`` and ``session/new``; on ``session/prompt`` it writes, as fast as the
pipe takes it, then answers ``end_turn``:

- ``updates N``: N ``agent_message_chunk`` notifications of a few characters each;
- ``answer N``: an answer of N MiB, in 1 MiB chunks (one line each);
- ``line N``: one ``agent_message_chunk`` line of N MiB (past the transport's ceiling: the
  run fails as a protocol error, and the memory it held until then is what is measured);
- ``noise N``: one line of N MiB that is not JSON (a log line on stdout), then ``OK``;
- ``plan N``: one ``plan`` update of N entries (``{}``: 3 bytes each on the wire, a dict
  each once decoded), then ``OK``;
- ``locations N``: a permission request whose tool call names N locations, then ``OK``.
- ``wideplan N``: one ``plan`` update of N entries of 16 bytes each (a million: a 15 MB line
  refused before it is decoded), then ``OK``;
- ``replies N``: N ``fs/read_text_file`` requests for a 4 MiB file in its cwd, not reading
  a reply until all are sent and a second has passed (what waits to be written to it is
  what is measured), then ``OK`` once every reply is in.

The answer texts are known (``floods.py`` checks them); the lines are built in blocks so
the agent's own memory stays out of the way (it is a separate process anyway).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

SESSION = "flood-1"
MIB = 1 << 20
OUT = sys.stdout.fileno()


def write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(OUT, view[:MIB]) :]


def send(message: dict[str, object]) -> None:
    write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")


def chunk_line(text: str) -> bytes:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    message = {"jsonrpc": "2.0", "method": "session/update"}
    message["params"] = {"sessionId": SESSION, "update": update}  # type: ignore[assignment]
    return json.dumps(message).encode() + b"\n"


def answer_text(kind: str, n: int) -> str:
    """What the bridge should answer (``floods.py`` checks the head of it)."""
    if kind == "updates":
        return "".join(f"t{i} " for i in range(n))
    if kind == "answer":
        return "".join(block(i) for i in range(n))
    return "OK"


def block(i: int) -> str:
    head = f"[block {i}]\n"
    return head + "x" * (MIB - len(head) - 1) + "\n"


def read_replies(n: int) -> None:
    """Wait, then read the agent's stdin until ``n`` replies to its requests are in."""
    time.sleep(1.0)  # the bridge builds what it will while nobody reads: the peak
    seen = 0
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if "method" not in message and str(message.get("id", "")).startswith("r"):
            seen += 1
            if seen == n:
                return


def flood(kind: str, n: int, cwd: str = ".") -> None:
    if kind == "replies":
        big = Path(cwd) / "big.txt"
        big.write_text("z" * (4 * MIB))
        path = str(big)
        for i in range(n):
            params = {"sessionId": SESSION, "path": path}
            send({"id": f"r{i}", "method": "fs/read_text_file", "params": params})
        read_replies(n)
        write(chunk_line("OK"))
    elif kind == "wideplan":
        head = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"flood-1",'
        entries = b",".join([b'{"content":"x"}'] * n)
        write(head + b'"update":{"sessionUpdate":"plan","entries":[' + entries)
        write(b"]}}}\n" + chunk_line("OK"))
    elif kind == "updates":
        batch: list[bytes] = []
        for i in range(n):
            batch.append(chunk_line(f"t{i} "))
            if len(batch) == 10_000:
                write(b"".join(batch))
                batch.clear()
        write(b"".join(batch))
    elif kind == "answer":
        for i in range(n):
            write(chunk_line(block(i)))
    elif kind == "line":
        head = chunk_line("")[: -len('"}}}}\n')]
        write(head)
        for _ in range(n):
            write(b"y" * MIB)
        write(b'"}}}}\n')
    elif kind == "noise":
        for _ in range(n):
            write(b"log " * (MIB // 4))
        write(b"\n" + chunk_line("OK"))
    elif kind == "plan":
        head = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"flood-1",'
        write(head + b'"update":{"sessionUpdate":"plan","entries":[' + b",".join([b"{}"] * n))
        write(b"]}}}\n" + chunk_line("OK"))
    elif kind == "locations":
        head = b'{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{'
        head += b'"sessionId":"flood-1","options":[],"toolCall":{"toolCallId":"t1","locations":['
        write(head + b",".join([b"{}"] * n) + b"]}}}\n" + chunk_line("OK"))


def main() -> None:
    kind, n = sys.argv[1], int(sys.argv[2])
    cwd = "."
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if rid is None or method is None:
            continue
        if method == "initialize":
            send({"id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {}}})
        elif method == "session/new":
            cwd = message["params"].get("cwd", cwd)
            send({"id": rid, "result": {"sessionId": SESSION}})
        elif method == "session/prompt":
            flood(kind, n, cwd)
            send({"id": rid, "result": {"stopReason": "end_turn"}})
        else:
            send({"id": rid, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
