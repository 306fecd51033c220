"""Framing, message grouping and transcripts, without processes (in-memory streams)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream
from pydantic import BaseModel, ConfigDict

from acp_bridge._acp.rpc.connection import JsonRpcConnection
from acp_bridge._acp.rpc.router import RequestError, Route, Router
from acp_bridge._acp.turn.turn_collector import TurnCollector
from acp_bridge._acp.wire.transcript import Transcript
from acp_bridge._os.redact import Redactor
from acp_bridge.errors import AgentExitedError, AgentRequestError, ProtocolError
from acp_bridge.events import EventSink
from tests.helpers import ChunkStream


class Sink:
    def __init__(self, expect: int = 0) -> None:
        self.sent: list[dict[str, Any]] = []
        self.expect = expect
        self.enough = anyio.Event()

    async def send(self, data: bytes) -> None:
        # The outbox may write several queued messages at once, one line each.
        self.sent += [json.loads(line) for line in data.splitlines() if line.strip()]
        if len(self.sent) >= self.expect:
            self.enough.set()

    async def aclose(self) -> None:
        return None


def read_all(chunks: list[bytes], **kwargs: Any) -> tuple[list[dict[str, Any]], JsonRpcConnection]:
    updates: list[dict[str, Any]] = []

    async def main() -> JsonRpcConnection:
        conn = JsonRpcConnection(
            ChunkStream(chunks),
            Sink(),
            on_update=updates.append,  # type: ignore[arg-type]
            router=Router(),
            **kwargs,
        )
        async with conn:
            await conn.wait_closed()
        return conn

    return updates, anyio.run(main)


def update_line(text: str) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": "s",
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": text},
                },
            },
        }
    ).encode()


def test_lines_split_anywhere_across_reads() -> None:
    data = b"\n".join(update_line(str(i)) for i in range(50)) + b"\n"
    chunks = [data[i : i + 7] for i in range(0, len(data), 7)]
    updates, conn = read_all(chunks)
    assert [u["update"]["content"]["text"] for u in updates] == [str(i) for i in range(50)]
    assert conn.stats.non_json == 0


def test_crlf_blank_lines_and_a_last_line_without_newline() -> None:
    updates, conn = read_all([update_line("a") + b"\r\n\r\n\n" + update_line("b")])
    assert [u["update"]["content"]["text"] for u in updates] == ["a", "b"]
    assert conn.stats.non_json == 0


def test_non_json_lines_are_counted_with_samples() -> None:
    updates, conn = read_all([b"hello\n[1,2]\n{broken\n" + update_line("x") + b"\n"])
    assert len(updates) == 1
    assert conn.stats.non_json == 3
    assert conn.stats.non_json_samples == ["hello", "[1,2]", "{broken"]


def test_ceiling_fails_the_connection_not_the_process() -> None:
    updates, conn = read_all([b"{" + b"x" * 5000, b"x" * 5000], max_message_bytes=8000)
    assert isinstance(conn.failure, ProtocolError)
    assert not updates


def test_pending_requests_fail_when_the_agent_goes_away() -> None:
    async def main() -> None:
        conn = JsonRpcConnection(
            ChunkStream([]),
            Sink(),
            on_update=lambda _: None,  # type: ignore[arg-type]
            router=Router(),
        )
        async with conn:
            await conn.wait_closed()
            with pytest.raises(AgentExitedError):
                await conn.request("initialize", {})

    anyio.run(main)


def test_replies_error_replies_and_requests_from_the_agent() -> None:
    async def main() -> None:
        send, receive = anyio.create_memory_object_stream[bytes](100)
        sink = Sink(expect=6)

        class EchoParams(BaseModel):
            model_config = ConfigDict(extra="allow")
            k: int | None = None
            fail: bool = False

        async def echo(params: EchoParams) -> dict[str, Any]:
            if params.fail:
                raise RequestError(-32002, "Resource not found: x")
            return {"echo": params.model_dump(exclude_defaults=True)}

        class Receive:
            def __init__(self, stream: MemoryObjectReceiveStream[bytes]) -> None:
                self.stream = stream

            async def receive(self, max_bytes: int = 65536) -> bytes:
                return await self.stream.receive()

        conn = JsonRpcConnection(
            Receive(receive),
            sink,
            on_update=lambda _: None,  # type: ignore[arg-type]
            router=Router([Route("x/echo", EchoParams, echo)]),
        )
        async with conn:
            pending = await conn.start_request("session/new", {"cwd": "/"})
            await send.send(
                json.dumps(
                    {"jsonrpc": "2.0", "id": pending.id, "result": {"sessionId": "s1"}}
                ).encode()
                + b"\n"
            )
            assert (await pending.wait()).unwrap() == {"sessionId": "s1"}
            failing = await conn.start_request("session/prompt", {})
            await send.send(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": failing.id,
                        "error": {"code": -32602, "message": "Invalid params"},
                    }
                ).encode()
                + b"\n"
            )
            with pytest.raises(AgentRequestError, match="-32602 Invalid params"):
                (await failing.wait()).unwrap()
            # The agent's own requests: string and integer ids, unknown methods, notifications.
            for message in [
                {"jsonrpc": "2.0", "id": "a", "method": "x/echo", "params": {"k": 1}},
                {"jsonrpc": "2.0", "id": 7, "method": "x/echo", "params": {"fail": True}},
                {"jsonrpc": "2.0", "id": 8, "method": "x/unknown", "params": {}},
                {"jsonrpc": "2.0", "method": "x/echo", "params": {}},
                {"jsonrpc": "2.0", "id": 9, "method": "x/echo", "params": [1, 2]},
            ]:
                await send.send(json.dumps(message).encode() + b"\n")
            with anyio.fail_after(5):
                await sink.enough.wait()
            await send.aclose()
        replies = {m.get("id"): m for m in sink.sent if "method" not in m}
        assert replies["a"]["result"] == {"echo": {"k": 1}}
        assert replies[7]["error"]["code"] == -32002
        assert replies[8]["error"]["code"] == -32601
        assert replies[9]["error"]["code"] == -32602
        assert len(replies) == 4  # the notification got no answer

    anyio.run(main)


def collect(*updates: dict[str, Any]) -> TurnCollector:
    collector = TurnCollector(EventSink(None))
    collector.session_known("s")
    collector.begin_turn()
    for update in updates:
        collector({"sessionId": "s", "update": update})
    return collector


def chunk(text: str, message_id: str | None = None) -> dict[str, Any]:
    update: dict[str, Any] = {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": text},
    }
    if message_id is not None:
        update["messageId"] = message_id
    return update


def test_last_message_wins_and_ids_group_interleaved_chunks() -> None:
    c = collect(chunk("plan ", "m1"), chunk("A", "m2"), chunk("more plan", "m1"), chunk("B", "m2"))
    assert c.answer() == "AB"


def test_without_ids_a_tool_call_ends_a_message() -> None:
    c = collect(
        chunk("Looking"),
        chunk(" around."),
        {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "ls"},
        chunk("The "),
        chunk("answer"),
        {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"},
    )
    assert c.answer() == "The answer"
    assert c.tool_call_records()[0].status == "completed"


def test_blank_last_message_falls_back_and_non_text_is_ignored() -> None:
    c = collect(
        chunk("real", "m1"),
        chunk("  \n", "m2"),
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "image", "data": "", "mimeType": "image/png"},
        },
    )
    assert c.answer() == "real"


def test_chunks_before_the_turn_are_not_the_answer() -> None:
    collector = TurnCollector(EventSink(None))
    collector.session_known("s")
    collector({"sessionId": "s", "update": chunk("greeting")})
    collector.begin_turn()
    assert collector.answer() == ""


def test_usage_from_updates_and_prompt_reply() -> None:
    c = collect(
        {
            "sessionUpdate": "usage_update",
            "used": 1200,
            "size": 200000,
            "cost": {"amount": 0.01, "currency": "USD"},
        }
    )
    c.add_prompt_usage({"inputTokens": 10, "outputTokens": 3, "totalTokens": 13})
    assert c.usage == {
        "context_used": 1200,
        "context_size": 200000,
        "cost": {"amount": 0.01, "currency": "USD"},
        "input_tokens": 10,
        "output_tokens": 3,
        "total_tokens": 13,
    }


def test_transcript_redacts_secrets_everywhere(tmp_path: Path) -> None:
    transcript = Transcript(tmp_path / "t.jsonl", Redactor(["sk-live-123456", "1"]))
    transcript.incoming(b'{"key":"sk-live-123456"}')
    transcript.outgoing(b'{"env":[{"name":"K","value":"sk-live-123456"}]}')
    transcript.non_json(b"token sk-live-123456 leaked")
    transcript.note("killed after sk-live-123456")
    transcript.incoming(b'{"id":1,"result":{}}')  # "1" is too short to be a secret
    transcript.close()
    text = (tmp_path / "t.jsonl").read_text()
    assert "sk-live-123456" not in text and text.count("[REDACTED]") == 4
    assert all(json.loads(line) for line in text.splitlines())
    assert text.splitlines()[-1].endswith('"msg":{"id":1,"result":{}}}')
    assert (tmp_path / "t.jsonl").stat().st_mode & 0o777 == 0o600


def test_transcript_never_raises_on_io_errors(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    transcript = Transcript(blocked / "sub" / "t.jsonl")
    transcript.incoming(b"{}")
    assert transcript.error.startswith("transcript disabled")
