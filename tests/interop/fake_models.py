"""Fake model APIs on 127.0.0.1, so real CLI agents (gemini-cli, qwen-code) run offline.

Each server is scripted the same way: the last user text ``CALLTOOL <name> <json args>``
makes the model call that tool once; after the tool's result it says ``TOOL_DONE``;
anything else gets ``REPLY``. Requests are recorded for the tests to inspect.

- :class:`FakeGemini`: ``POST /v1beta/models/<m>:streamGenerateContent`` (SSE) and
  ``:generateContent`` / ``:countTokens`` (JSON), for ``GOOGLE_GEMINI_BASE_URL``.
- :class:`FakeOpenAI`: ``POST /v1/chat/completions`` (SSE or JSON) and ``GET /v1/models``,
  for ``OPENAI_BASE_URL``.

Only loopback: the server binds 127.0.0.1 on a free port and stops when the ``with`` ends.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Self

REPLY = "fake-model says hi"
TOOL_DONE = "fake-model: tool done"
_CALL = re.compile(r"CALLTOOL (\S+) (\{.*\})", re.DOTALL)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: pytest shows what matters

    def send_json(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_sse(self, events: list[Any], done_marker: bool = False) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for event in events:
            self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
        if done_marker:
            self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def read_json(self) -> dict[str, Any]:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        return body if isinstance(body, dict) else {}

    def do_GET(self) -> None:
        self.server.requests.append({"method": "GET", "path": self.path})
        self.get()

    def do_POST(self) -> None:
        body = self.read_json()
        self.server.requests.append({"method": "POST", "path": self.path, "body": body})
        self.post(body)

    def get(self) -> None:
        self.send_json(404, {"error": {"code": 404, "message": "not found"}})

    def post(self, body: dict[str, Any]) -> None:
        self.send_json(404, {"error": {"code": 404, "message": "not found"}})


def call_tool(tool: str, **args: Any) -> str:
    """The prompt that makes the fake model call ``tool`` with ``args``."""
    return f"CALLTOOL {tool} {json.dumps(args)}"


def _decide(user_text: str, after_tool: bool) -> tuple[str, dict[str, Any]] | str:
    """The scripted model: a tool call (name, args) or a text reply."""
    match = _CALL.search(user_text)
    if match and not after_tool:
        return match.group(1), json.loads(match.group(2))
    return TOOL_DONE if after_tool else REPLY


class _GeminiHandler(_Handler):
    def post(self, body: dict[str, Any]) -> None:
        contents = [c for c in body.get("contents", []) if isinstance(c, dict)]
        last = contents[-1] if contents else {}
        parts = [p for p in last.get("parts", []) if isinstance(p, dict)]
        after_tool = any("functionResponse" in p for p in parts)
        user_text = "\n".join(
            p["text"]
            for c in contents
            if c.get("role") == "user"
            for p in c.get("parts", [])
            if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
        decided = _decide(user_text, after_tool)
        if isinstance(decided, str):
            reply_parts: list[dict[str, Any]] = [{"text": decided}]
        else:
            reply_parts = [{"functionCall": {"name": decided[0], "args": decided[1]}}]
        response = {
            "candidates": [
                {
                    "content": {"role": "model", "parts": reply_parts},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 5,
                "candidatesTokenCount": 3,
                "totalTokenCount": 8,
            },
            "modelVersion": "fake",
        }
        if ":streamGenerateContent" in self.path:
            self.send_sse([response])
        elif ":generateContent" in self.path:
            config = json.dumps(body.get("generationConfig", {}))
            if "responseSchema" in config or "responseJsonSchema" in config:
                # Side calls that want JSON (e.g. "who speaks next"): the user does.
                text = json.dumps({"next_speaker": "user", "reasoning": "fake"})
                response["candidates"][0]["content"]["parts"] = [{"text": text}]
            self.send_json(200, response)
        elif ":countTokens" in self.path:
            self.send_json(200, {"totalTokens": 8})
        else:
            self.send_json(404, {"error": {"code": 404, "message": "not found"}})


def _openai_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class _OpenAIHandler(_Handler):
    calls = 0

    def get(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self.send_json(
                200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]}
            )
        else:
            super().get()

    def post(self, body: dict[str, Any]) -> None:
        if not self.path.rstrip("/").endswith("/chat/completions"):
            super().post(body)
            return
        messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
        last = messages[-1] if messages else {}
        user_text = next(
            (_openai_text(m) for m in reversed(messages) if m.get("role") == "user"), ""
        )
        decided = _decide(user_text, after_tool=last.get("role") == "tool")
        base = {"id": "chatcmpl-fake", "created": 0, "model": body.get("model", "fake-model")}
        usage = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
        message: dict[str, Any] = {"role": "assistant"}
        if isinstance(decided, str):
            message["content"], finish = decided, "stop"
        else:
            _OpenAIHandler.calls += 1
            call = {
                "id": f"call_fake_{_OpenAIHandler.calls}",
                "type": "function",
                "function": {"name": decided[0], "arguments": json.dumps(decided[1])},
            }
            message["content"], message["tool_calls"], finish = None, [call], "tool_calls"
        if body.get("stream"):
            delta = dict(message)
            if "tool_calls" in delta:
                delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(delta["tool_calls"])]
            chunk = dict(base, object="chat.completion.chunk")
            self.send_sse(
                [
                    dict(chunk, choices=[{"index": 0, "delta": delta, "finish_reason": None}]),
                    dict(chunk, choices=[{"index": 0, "delta": {}, "finish_reason": finish}]),
                    dict(chunk, choices=[], usage=usage),
                ],
                done_marker=True,
            )
        else:
            choice = {"index": 0, "message": message, "finish_reason": finish}
            self.send_json(200, dict(base, object="chat.completion", choices=[choice], usage=usage))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    requests: list[dict[str, Any]]


class FakeModelServer:
    """``with FakeGemini() as server:`` → ``server.url``; stops serving when the block ends."""

    handler: ClassVar[type[_Handler]] = _Handler

    def __init__(self) -> None:
        self._server = _Server(("127.0.0.1", 0), self.handler)
        self._server.requests = []
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self._server.requests

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class FakeGemini(FakeModelServer):
    handler = _GeminiHandler


class FakeOpenAI(FakeModelServer):
    handler = _OpenAIHandler
