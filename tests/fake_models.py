"""Fake model APIs on 127.0.0.1, so real coding agents run offline against a script.

One server answers every API the built-in agents speak, each at its usual path:

- OpenAI chat completions, ``POST /v1/chat/completions`` (SSE or JSON): qwen-code, kimi,
  opencode, goose, fast-agent, and Mistral's API, which has the same shape (vibe);
- OpenAI Responses, ``POST /v1/responses`` (SSE with named events): codex;
- Anthropic Messages, ``POST /v1/messages`` (SSE with named events and ``tool_use`` blocks,
  or JSON) and ``/v1/messages/count_tokens``: Claude Code;
- Gemini, ``POST /v1beta/models/<m>:streamGenerateContent`` (SSE), ``:generateContent``
  and ``:countTokens`` (JSON): gemini-cli;
- ``GET /v1/models``, in a shape both OpenAI and Anthropic clients read.

Every API is scripted the same way, by the text of the last user message (a message that is
only the agent's own ``<system-reminder>``, or only tool results, does not count):

- one ``CALLTOOL <name> <json args>`` per tool call (:func:`call_tool`): the model makes
  them in order, one per model request, counting the tool results that came back since
  that message; then it says :data:`TOOL_DONE`. ``CALLCUSTOM <name> <<<text>>>``
  (:func:`call_custom`) is a freeform call (the Responses API's custom tools: codex's
  ``apply_patch``). A tool is named as the model sees it, or by the part after ``__`` of
  an MCP tool's name (``Read`` calls ``mcp__acp__Read``);
- ``SLOW <seconds>`` (:func:`slow`): the first answer of the turn comes that late (a turn
  to cancel); the wait ends early when the server stops;
- anything else gets :data:`REPLY`.

Side calls are answered by their shape, not by the script: a request that offers no tools
(a session title, a summary) gets :data:`REPLY` at once; a Gemini call that wants JSON of a
schema (gemini-cli's model router, "who speaks next") gets an instance of the schema; an
OpenAI call that forces a tool (qwen-code's action classifier) calls it with its schema
filled in. A test of the bridge's own model loop scripts OpenAI chat request by request
instead (``FakeModels(chat_script=...)``).

Requests are recorded (:attr:`FakeModels.requests`) and can be waited for. Only loopback: the
server binds 127.0.0.1 and stops when the ``with`` block ends. Standalone, for trying an
agent by hand: ``python -m tests.fake_models [--port N] [--log FILE]`` prints its URL.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

REPLY = "fake-model says hi"
TOOL_DONE = "fake-model: tool done"

_CALL = re.compile(r"CALLTOOL (\S+) (?=\{)")
_CUSTOM = re.compile(r"CALLCUSTOM (\S+) <<<(.*?)>>>", re.DOTALL)
_SLOW = re.compile(r"\bSLOW (\d+(?:\.\d+)?)")

ChatScript = Callable[[dict[str, Any]], "dict[str, Any] | tuple[int, dict[str, Any]]"]
"""Answers one OpenAI chat request body: the assistant message, or (HTTP status, body)."""


def call_tool(tool: str, **args: Any) -> str:
    """The prompt line that makes the fake model call ``tool`` with ``args``."""
    return f"CALLTOOL {tool} {json.dumps(args)}"


def call_custom(tool: str, text: str) -> str:
    """The prompt line that makes the fake model call the freeform tool ``tool``."""
    return f"CALLCUSTOM {tool} <<<{text}>>>"


def slow(seconds: float) -> str:
    """The prompt line that makes the turn's first answer come ``seconds`` late."""
    return f"SLOW {seconds:g}"


@dataclass(frozen=True)
class ToolCall:
    name: str
    args: dict[str, Any] | None = None  # a function call's arguments
    text: str | None = None  # a freeform (custom) call's input


@dataclass(frozen=True)
class Request:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]  # names in lower case
    body: dict[str, Any]

    def text(self) -> str:
        """The whole body as text, for a test that looks for a token anywhere in it."""
        return json.dumps(self.body, ensure_ascii=False)


@dataclass(frozen=True)
class Conversation:
    """What one model request says, whatever its API: the last user text, the tool results
    since, and the tools it offers (None: the request offers none)."""

    user_text: str
    results: int
    tools: list[str] | None


def script(text: str) -> list[ToolCall]:
    """The tool calls a user text asks for, in the order written."""
    found: list[tuple[int, ToolCall]] = []
    for match in _CALL.finditer(text):
        try:  # the JSON object that starts there, however nested; the rest is left alone
            args, _ = json.JSONDecoder().raw_decode(text, match.end())
        except ValueError:
            continue
        if isinstance(args, dict):
            found.append((match.start(), ToolCall(match.group(1), args=args)))
    found += [(m.start(), ToolCall(m.group(1), text=m.group(2))) for m in _CUSTOM.finditer(text)]
    return [call for _, call in sorted(found, key=lambda item: item[0])]


_WRAPPED = re.compile(r"<([A-Za-z_-]+)>.*</\1>", re.DOTALL)


def _reminder(text: str) -> bool:
    """Empty, or one block the agent wrapped in a tag of its own (kimi's
    ``<system-reminder>`` after the prompt, codex's ``<environment_context>``): not the user
    speaking, so it neither chooses nor resets the script."""
    text = text.strip()
    return not text or _WRAPPED.fullmatch(text) is not None


def _offered(name: str, tools: list[str]) -> str | None:
    """The offered tool ``name`` means: itself, else the one MCP tool ``<server>__name``."""
    if name in tools:
        return name
    suffixed = [tool for tool in tools if tool.endswith(f"__{name}")]
    return suffixed[0] if len(suffixed) == 1 else None


def fill_schema(schema: Any) -> Any:
    """A minimal instance of a JSON (or Gemini) schema: its first enum value, "fake", 1,
    false, an empty list, an object of its properties."""
    if not isinstance(schema, dict):
        return "fake"
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        return {name: fill_schema(sub) for name, sub in (schema.get("properties") or {}).items()}
    return {"array": [], "integer": 1, "number": 1, "boolean": False}.get(kind, "fake")


def _text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text"))
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def _dicts(items: Any) -> list[dict[str, Any]]:
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


# --- reading each API's request into a Conversation ------------------------------------------


def _chat_conversation(body: dict[str, Any]) -> Conversation:
    user_text, results = "", 0
    for message in _dicts(body.get("messages")):
        if message.get("role") == "user" and not _reminder(_text_of(message.get("content"))):
            user_text, results = _text_of(message.get("content")), 0
        elif message.get("role") == "tool":
            results += 1
    names = [str(t.get("function", {}).get("name")) for t in _dicts(body.get("tools"))]
    return Conversation(user_text, results, names or None)


def _responses_conversation(body: dict[str, Any]) -> Conversation:
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    user_text, results = "", 0
    for item in _dicts(items):
        kind = str(item.get("type", "message"))
        if kind == "message" and item.get("role") == "user":
            text = _text_of(item.get("content"))
            if not _reminder(text):
                user_text, results = text, 0
        elif kind.endswith("_call_output"):
            results += 1
    names = [str(t.get("name")) for t in _dicts(body.get("tools")) if t.get("name")]
    return Conversation(user_text, results, names or None)


def _anthropic_conversation(body: dict[str, Any]) -> Conversation:
    user_text, results = "", 0
    for message in _dicts(body.get("messages")):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if not isinstance(content, list):
            content = [{"type": "text", "text": content}]
        blocks = _dicts(content)
        answered = sum(block.get("type") == "tool_result" for block in blocks)
        text = "\n".join(str(b.get("text")) for b in blocks if b.get("type") == "text")
        if answered:
            results += answered
        elif not _reminder(text):
            user_text, results = text, 0
    names = [str(t.get("name")) for t in _dicts(body.get("tools"))]
    return Conversation(user_text, results, names or None)


def _gemini_conversation(body: dict[str, Any]) -> Conversation:
    user_text, results = "", 0
    for content in _dicts(body.get("contents")):
        parts = _dicts(content.get("parts"))
        answered = sum("functionResponse" in part for part in parts)
        text = "\n".join(str(p["text"]) for p in parts if isinstance(p.get("text"), str))
        if answered:
            results += answered
        elif content.get("role") == "user" and not _reminder(text):
            user_text, results = text, 0
    names = [
        str(declaration.get("name"))
        for tool in _dicts(body.get("tools"))
        for declaration in _dicts(tool.get("functionDeclarations"))
    ]
    return Conversation(user_text, results, names or None)


# --- the server ------------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, port: int, chat_script: ChatScript | None, log: str | None) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.requests: list[Request] = []
        self.arrived = threading.Condition()
        self.closing = threading.Event()
        self.chat_script = chat_script
        self.log = log
        self.calls = 0

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # a bug in the fake: show it
        # else a client that hung up mid-answer (a cancelled turn): nothing to report

    def record(self, request: Request) -> None:
        with self.arrived:
            self.requests.append(request)
            self.arrived.notify_all()
        if self.log is not None:
            with open(self.log, "a", encoding="utf-8") as out:
                out.write(json.dumps(request.__dict__) + "\n")

    def decide(self, said: Conversation) -> ToolCall | str:
        """The scripted model's answer: a tool call, or a text."""
        if said.tools is None:
            return REPLY  # a side call: titles and summaries answer at once
        calls = script(said.user_text)
        waited = _SLOW.search(said.user_text)
        if waited and not said.results:
            self.closing.wait(float(waited.group(1)))
        if said.results >= len(calls):
            return TOOL_DONE if said.results else REPLY
        call = calls[said.results]
        name = _offered(call.name, said.tools)
        if name is None:
            return f"fake-model: no tool {call.name} among {sorted(said.tools)}"
        return ToolCall(name, call.args, call.text)

    def call_id(self) -> str:
        with self.arrived:
            self.calls += 1
            return f"call_fake_{self.calls}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: the tests show what matters

    # --- plumbing

    def send_json(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_sse(self, events: list[tuple[str | None, Any]], done_marker: bool = False) -> None:
        """Server-sent events, each with its ``event:`` name when it has one."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, event in events:
            if name is not None:
                self.wfile.write(f"event: {name}\n".encode())
            self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
        if done_marker:
            self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def not_found(self) -> None:
        self.send_json(404, {"error": {"code": 404, "message": f"no such path: {self.path}"}})

    def arrive(self, body: dict[str, Any]) -> str:
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.server.record(Request(self.command, self.path, headers, body))
        return self.path.split("?")[0].rstrip("/")

    def do_GET(self) -> None:
        path = self.arrive({})
        if path.endswith("/models"):
            model = {"id": "fake-model", "object": "model", "type": "model"}
            model |= {"display_name": "Fake model", "created_at": "2026-01-01T00:00:00Z"}
            self.send_json(200, {"object": "list", "data": [model], "has_more": False})
        else:
            self.not_found()

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        path = self.arrive(body)
        if path.endswith("/chat/completions"):
            self.chat(body)
        elif path.endswith("/responses"):
            self.responses_api(body)
        elif path.endswith("/messages/count_tokens"):
            self.send_json(200, {"input_tokens": 8})
        elif path.endswith("/messages"):
            self.messages(body)
        elif ":streamGenerateContent" in path or ":generateContent" in path:
            self.gemini(body, stream=":streamGenerateContent" in path)
        elif ":countTokens" in path:
            self.send_json(200, {"totalTokens": 8})
        else:
            self.not_found()

    # --- OpenAI chat completions (and Mistral's, the same shape)

    def chat(self, body: dict[str, Any]) -> None:
        if self.server.chat_script is not None:
            answer = self.server.chat_script(body)
            if isinstance(answer, tuple):
                self.send_json(*answer)
                return
            message = answer
        else:
            forced = _forced_tool(body)
            decided = self.server.decide(_chat_conversation(body)) if forced is None else forced
            message = {"role": "assistant", "content": decided}
            if isinstance(decided, ToolCall):
                args = decided.args if decided.args is not None else {"input": decided.text}
                function = {"name": decided.name, "arguments": json.dumps(args)}
                call = {"id": self.server.call_id(), "type": "function", "function": function}
                message = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        base = {"id": "chatcmpl-fake", "created": int(time.time())}
        base["model"] = body.get("model", "fake-model")
        usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
        if not body.get("stream"):
            choice = {"index": 0, "message": message, "finish_reason": finish}
            self.send_json(
                200, base | {"object": "chat.completion", "choices": [choice]} | {"usage": usage}
            )
            return
        delta = dict(message)
        if "tool_calls" in delta:
            delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(delta["tool_calls"])]
        chunk = base | {"object": "chat.completion.chunk"}
        self.send_sse(
            [
                (None, chunk | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
                (None, chunk | {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
                (None, chunk | {"choices": [], "usage": usage}),
            ],
            done_marker=True,
        )

    # --- OpenAI Responses

    def responses_api(self, body: dict[str, Any]) -> None:
        # Not `responses`: BaseHTTPRequestHandler keeps its status phrases under that name.
        decided = self.server.decide(_responses_conversation(body))
        call_id = self.server.call_id()
        number = call_id.rsplit("_", 1)[1]
        if isinstance(decided, str):
            text = {"type": "output_text", "text": decided, "annotations": []}
            item: dict[str, Any] = {"type": "message", "role": "assistant", "id": f"msg_{number}"}
            item |= {"status": "completed", "content": [text]}
        elif decided.text is not None:
            item = {"type": "custom_tool_call", "id": f"ctc_{number}", "status": "completed"}
            item |= {"call_id": call_id, "name": decided.name, "input": decided.text}
        else:
            item = {"type": "function_call", "id": f"fc_{number}", "status": "completed"}
            item |= {"call_id": call_id, "name": decided.name}
            item |= {"arguments": json.dumps(decided.args)}
        response = {"id": f"resp_{number}", "object": "response", "created_at": int(time.time())}
        response |= {"model": body.get("model", "fake-model"), "status": "in_progress"}
        response |= {"output": []}
        usage = {"input_tokens": 11, "input_tokens_details": {"cached_tokens": 0}}
        usage |= {"output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 0}}
        usage |= {"total_tokens": 18}
        opened = dict(item, status="in_progress")
        if item["type"] == "message":
            opened["content"] = []
        events: list[tuple[str | None, Any]] = [
            ("response.created", {"response": response}),
            ("response.output_item.added", {"output_index": 0, "item": opened}),
        ]
        if isinstance(decided, str):
            delta = {"item_id": item["id"], "output_index": 0, "content_index": 0}
            events.append(("response.output_text.delta", delta | {"delta": decided}))
        done = dict(response, status="completed", output=[item], usage=usage)
        events += [
            ("response.output_item.done", {"output_index": 0, "item": item}),
            ("response.completed", {"response": done}),
        ]
        self.send_sse(
            [
                (name, {"type": name, "sequence_number": seq} | event)
                for seq, (name, event) in enumerate(events)
            ]
        )

    # --- Anthropic Messages

    def messages(self, body: dict[str, Any]) -> None:
        decided = self.server.decide(_anthropic_conversation(body))
        usage = {"input_tokens": 11, "output_tokens": 7}
        if isinstance(decided, str):
            block: dict[str, Any] = {"type": "text", "text": decided}
            stop = "end_turn"
        else:
            args = decided.args if decided.args is not None else {"input": decided.text}
            block = {"type": "tool_use", "id": "toolu_" + self.server.call_id()}
            block |= {"name": decided.name, "input": args}
            stop = "tool_use"
        message = {"id": "msg_fake", "type": "message", "role": "assistant"}
        message |= {"model": body.get("model", "claude-fake"), "content": [block]}
        message |= {"stop_reason": stop, "stop_sequence": None, "usage": usage}
        if not body.get("stream"):
            self.send_json(200, message)
            return
        start = dict(message, content=[], stop_reason=None, usage=dict(usage, output_tokens=0))
        if block["type"] == "text":
            opened, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": decided}
        else:
            opened = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        ending = {
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 7},
        }
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"message": start}),
            ("content_block_start", {"index": 0, "content_block": opened}),
            ("ping", {}),
            ("content_block_delta", {"index": 0, "delta": delta}),
            ("content_block_stop", {"index": 0}),
            ("message_delta", ending),
            ("message_stop", {}),
        ]
        self.send_sse([(name, {"type": name} | event) for name, event in events])

    # --- Gemini

    def gemini(self, body: dict[str, Any], *, stream: bool) -> None:
        config = body.get("generationConfig")
        config = config if isinstance(config, dict) else {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if schema and not stream:  # a side call that wants JSON of a schema
            parts: list[dict[str, Any]] = [{"text": json.dumps(fill_schema(schema))}]
        else:
            decided = self.server.decide(_gemini_conversation(body))
            if isinstance(decided, str):
                parts = [{"text": decided}]
            else:
                args = decided.args if decided.args is not None else {"input": decided.text}
                parts = [{"functionCall": {"name": decided.name, "args": args}}]
        candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}
        usage = {"promptTokenCount": 11, "candidatesTokenCount": 7, "totalTokenCount": 18}
        response = {"candidates": [candidate | {"index": 0}], "usageMetadata": usage}
        response["modelVersion"] = "fake"
        if stream:
            self.send_sse([(None, response)])
        else:
            self.send_json(200, response)


def _forced_tool(body: dict[str, Any]) -> ToolCall | None:
    """An OpenAI chat request that forces a tool (``tool_choice`` "required" or a named
    function): that tool, its schema filled in."""
    choice = body.get("tool_choice")
    tools = [t.get("function", {}) for t in _dicts(body.get("tools"))]
    if isinstance(choice, dict):
        wanted = choice.get("function", {}).get("name")
        tools = [tool for tool in tools if tool.get("name") == wanted]
    elif choice != "required":
        return None
    if not tools:
        return None
    return ToolCall(str(tools[0].get("name")), args=fill_schema(tools[0].get("parameters") or {}))


@dataclass
class FakeModels:
    """``with FakeModels() as models:`` → ``models.url`` (the APIs under ``/v1`` and
    ``/v1beta``); stops serving when the block ends."""

    port: int = 0
    chat_script: ChatScript | None = None
    log: str | None = None
    _server: _Server = field(init=False)
    _thread: threading.Thread = field(init=False)

    def __post_init__(self) -> None:
        self._server = _Server(self.port, self.chat_script, self.log)
        # A short poll interval: shutdown() waits up to one interval.
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, without a path."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[Request]:
        with self._server.arrived:
            return list(self._server.requests)

    def model_requests(self) -> Iterator[Request]:
        """The requests for a model's answer (every API), in order of arrival."""
        return (r for r in self.requests if r.method == "POST" and "count" not in r.path.lower())

    def wait_for(self, found: Callable[[Request], bool], within: float) -> Request | None:
        """The first request ``found`` accepts, waiting up to ``within`` seconds for it."""
        deadline = time.monotonic() + within
        with self._server.arrived:
            while True:
                match = next((r for r in self._server.requests if found(r)), None)
                left = deadline - time.monotonic()
                if match is not None or left <= 0:
                    return match
                self._server.arrived.wait(left)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.closing.set()  # SLOW answers end now
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tests.fake_models", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="default: a free port")
    parser.add_argument("--log", help="append every request to this file, one JSON a line")
    options = parser.parse_args()
    with FakeModels(options.port, log=options.log) as models:
        print(models.url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            return


if __name__ == "__main__":
    main()
