"""The transport's line handling: what is a message, what is skipped, framing across reads."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from acp_bridge._acp.rpc.connection import JsonRpcConnection
from acp_bridge._acp.rpc.router import Router
from tests.helpers import ChunkStream, NullSink


def update(text: str) -> bytes:
    params = {
        "sessionId": "s",
        "update": {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": text},
        },
    }
    return json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": params}).encode()


def read_all(chunks: list[bytes]) -> tuple[list[str], JsonRpcConnection]:
    texts: list[str] = []

    def on_update(params: dict[str, Any]) -> None:
        texts.append(params["update"]["content"]["text"])

    async def main() -> JsonRpcConnection:
        conn = JsonRpcConnection(
            ChunkStream(chunks), NullSink(), on_update=on_update, router=Router()
        )
        with anyio.fail_after(5):
            async with conn:
                await conn.wait_closed()
        return conn

    return texts, anyio.run(main)


def test_lines_split_across_reads_are_reassembled() -> None:
    data = b"\n".join(update(f"t{i}") for i in range(50)) + b"\n"
    chunks = [data[i : i + 7] for i in range(0, len(data), 7)]
    texts, conn = read_all(chunks)
    assert texts == [f"t{i}" for i in range(50)]
    assert conn.stats.lines == 50 and conn.stats.non_json == 0


@pytest.mark.parametrize(
    "data",
    [
        b"  " + update("spaced") + b" \t\n",
        update("crlf") + b"\r\n",
        update("no newline at the end"),
    ],
    ids=["surrounding-whitespace", "crlf", "last-line-without-newline"],
)
def test_accepted_variants(data: bytes) -> None:
    texts, conn = read_all([data])
    assert len(texts) == 1
    assert conn.stats.non_json == 0


@pytest.mark.parametrize(
    "line",
    [
        b"starting server on port 1234",
        b"{not json at all",
        update("x") + b" trailing garbage",
        update("x") + update("y"),  # two values on one line
        b'{"text": "\xff\xfe not utf-8"}',
        b"[1, 2, 3]",
        b'"just a string"',
        b"\xef\xbb\xbf" + update("bom"),
    ],
    ids=["log", "broken", "trailing", "two-values", "bad-utf8", "array", "string", "bom"],
)
def test_non_messages_are_skipped_and_counted(line: bytes) -> None:
    texts, conn = read_all([line + b"\n" + update("after") + b"\n"])
    assert texts == ["after"]
    assert conn.stats.non_json == 1
    assert conn.stats.non_json_samples


def test_blank_lines_are_neither_messages_nor_noise() -> None:
    texts, conn = read_all([b"\n\n  \n" + update("a") + b"\n\n"])
    assert texts == ["a"]
    assert conn.stats.non_json == 0
