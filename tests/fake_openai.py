"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

Each POST to ``/v1/chat/completions`` is recorded and answered by a script function that
gets the request body and returns the assistant message (``content`` and/or
``tool_calls``), or an ``(status, body)`` pair to answer with an HTTP error.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Script = Callable[[dict[str, Any]], "dict[str, Any] | tuple[int, dict[str, Any]]"]


@dataclass
class FakeOpenAI:
    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)


def tool_call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    """An assistant message that calls one tool."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


def text(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


@contextmanager
def fake_openai(script: Script) -> Iterator[FakeOpenAI]:
    state = FakeOpenAI(base_url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            state.headers.append({k.lower(): v for k, v in self.headers.items()})
            answer = script(body)
            if isinstance(answer, tuple):
                self._send(*answer)
                return
            finish = "tool_calls" if answer.get("tool_calls") else "stop"
            self._send(
                200,
                {
                    "id": f"chatcmpl-{len(state.requests)}",
                    "object": "chat.completion",
                    "created": 1_700_000_000,
                    "model": body["model"],
                    "choices": [{"index": 0, "message": answer, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
                },
            )

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    # A short poll interval: shutdown() waits up to one interval.
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
