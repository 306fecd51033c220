"""``acp-bridge mcp --http``: one streamable-HTTP server behind a bearer token, two clients
(the official ``mcp`` client on the 2025 handshake protocol, and on 2026-07-28 — where a
question to the host ends a round with ``input_required`` and the next call carries the
answer), and the refusals."""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.mcp import scenarios
from tests.mcp.conftest import ACP_BRIDGE, Bridge, bounded, server_pids

pytestmark = pytest.mark.anyio
TOKEN = "test-token-7f3a9c1e"
REQUEST_TIMEOUT = 2


@pytest.fixture(scope="module")
def server(bridge: Bridge) -> Iterator[str]:
    """The server's URL; it is stopped with SIGTERM after the module, and must leave nothing."""
    token_file = bridge.root / "token"
    token_file.write_text(TOKEN + "\n")
    log = bridge.root / "http.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            bridge.command(
                "--http",
                "127.0.0.1:0",
                "--token-file",
                str(token_file),
                "--request-timeout",
                str(REQUEST_TIMEOUT),
            ),
            env=bridge.env(),
            cwd=bridge.workspace,
            stdin=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        yield _url_from(log, process)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert not bridge.leftovers(set()), "processes left behind"


def _url_from(log: Path, process: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        if found := re.search(r"serving (http://\S+)", log.read_text()):
            return found.group(1)
        time.sleep(0.02)  # the server says where it listens on stderr: nothing to wait on
    raise AssertionError(f"the server did not start: {log.read_text()}")


@pytest.fixture(scope="module")
async def clients(bridge: Bridge, server: str) -> AsyncIterator[dict[str, Client]]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        bridge.client(streamable_http_client(server, http_client=http), "legacy") as legacy,
        bridge.client(streamable_http_client(server, http_client=http), "auto") as modern,
    ):
        assert (legacy.protocol_version, modern.protocol_version) == ("2025-11-25", "2026-07-28")
        yield {"legacy": legacy, "modern": modern}


@pytest.fixture
def nothing_left(bridge: Bridge) -> Iterator[None]:
    yield
    assert not bridge.leftovers(server_pids(bridge.marker)), "processes left behind"


@pytest.mark.parametrize("header", [None, "Bearer wrong", f"Basic {TOKEN}"])
async def test_a_request_without_the_token_is_refused(server: str, header: str | None) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if header is not None:
        headers["Authorization"] = header
    async with httpx2.AsyncClient(timeout=10) as http:
        reply = await http.post(
            server, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}
        )
    assert reply.status_code == 401
    assert reply.headers["www-authenticate"].startswith("Bearer")


async def test_a_body_sent_too_slowly_is_answered_408(
    server: str, clients: dict[str, Client]
) -> None:
    """A client that trickles its body (slowloris) gets 408 once --request-timeout passes; it
    does not hold the request open, and the server goes on serving."""
    url = httpx2.URL(server)
    head = (
        f"POST {url.path} HTTP/1.1\r\nHost: {url.host}:{url.port}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{"
    )
    async with await anyio.connect_tcp(url.host, url.port) as stream, bounded(REQUEST_TIMEOUT + 5):
        await stream.send(head.encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            with anyio.move_on_after(0.2):
                reply += await stream.receive()
            if b"\r\n\r\n" not in reply:
                await stream.send(b" ")  # one more byte: never the whole body
    assert reply.startswith(b"HTTP/1.1 408"), reply
    assert (await clients["legacy"].list_tools()).tools


def _call(arguments: str) -> bytes:
    return (
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", '
        f'"params": {{"name": "acp_spawn", "arguments": {arguments}}}}}'
    ).encode()


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        (
            _call('{"task": ' + "[" * 65 + "]" * 65 + "}"),
            400,
            "request body: nested deeper than 64 levels",
        ),
        (_call("[" * 100_000 + "]" * 100_000), 400, "request body: nested deeper than 64 levels"),
        (_call("[" * 100_000), 400, "request body: nested deeper than 64 levels"),
        (_call('{"task": "' + "x" * (4 << 20) + '"}'), 413, "request body over 4194304 bytes"),
    ],
    ids=["65 deep", "100000 deep", "100000 open", "over 4 MiB"],
)
async def test_a_body_too_deep_or_too_big_is_refused_and_the_server_goes_on(
    server: str, clients: dict[str, Client], body: bytes, status: int, says: str
) -> None:
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    async with httpx2.AsyncClient(timeout=30) as http:
        reply = await http.post(server, headers=headers, content=body)
    assert (reply.status_code, reply.json()) == (status, {"error": says})
    assert (await clients["legacy"].list_tools()).tools


@pytest.mark.parametrize("trickle", [False, True])
async def test_a_connection_without_a_request_in_time_is_closed(server: str, trickle: bool) -> None:
    """Connecting and sending nothing, or headers a byte at a time, needs no token: such a
    connection is closed once --request-timeout passes (it held a descriptor forever)."""
    url = httpx2.URL(server)
    async with await anyio.connect_tcp(url.host, url.port) as stream:
        started = time.monotonic()
        if trickle:
            await stream.send(f"POST {url.path} HTTP/1.1\r\nHost: {url.host}\r\nX-Slow: ".encode())
        async with bounded(REQUEST_TIMEOUT + 5):
            with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                while True:
                    with anyio.move_on_after(0.3):
                        await stream.receive()
                        raise AssertionError("a reply: the connection should just close")
                    if trickle:
                        await stream.send(b"a")
    assert time.monotonic() - started > REQUEST_TIMEOUT - 0.5


async def test_lists_the_tools(clients: dict[str, Client]) -> None:
    await scenarios.lists_the_tools(clients["modern"])


async def test_acp_spawn_returns_the_envelope(
    clients: dict[str, Client], nothing_left: None
) -> None:
    await scenarios.acp_spawn_returns_the_envelope(clients["modern"])


async def test_a_bad_argument_gets_an_error_naming_the_field(
    clients: dict[str, Client], nothing_left: None
) -> None:
    with pytest.raises(MCPError) as caught:
        await clients["legacy"].call_tool("acp_spawn", {"agent": "nobody", "task": "hi"})
    assert caught.value.code == types.INVALID_PARAMS
    assert caught.value.message.startswith("acp_spawn: agent: no profile 'nobody'; ready: ")


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_an_ask_rule_is_answered_through_elicitation(
    bridge: Bridge, clients: dict[str, Client], era: str, nothing_left: None
) -> None:
    await scenarios.an_ask_is_answered_through_elicitation(bridge, clients[era], "allow")


async def test_the_agents_own_question_goes_to_the_host(
    bridge: Bridge, clients: dict[str, Client], nothing_left: None
) -> None:
    await scenarios.the_agents_own_question_goes_to_the_host(bridge, clients["modern"])


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_progress_arrives_during_a_long_run_and_a_host_cancel_stops_it(
    bridge: Bridge, clients: dict[str, Client], era: str, nothing_left: None
) -> None:
    # 2026-07-28 over HTTP: no stream is left to tell the host after its cancel.
    told = era == "legacy"
    await scenarios.progress_arrives_and_a_host_cancel_stops_the_run(
        bridge, clients[era], told=told
    )


async def test_start_then_wait_status_and_list(
    clients: dict[str, Client], nothing_left: None
) -> None:
    await scenarios.start_then_wait_status_and_list(clients["modern"])


async def test_stop_ends_a_background_run_cancelled(
    clients: dict[str, Client], nothing_left: None
) -> None:
    await scenarios.stop_ends_a_background_run_cancelled(clients["modern"])


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--http", "0.0.0.0:0"], "refusing to listen beyond loopback without a bearer token"),
        (["--request-timeout", "5"], "--request-timeout goes with --http"),
        (
            ["--http", "127.0.0.1:0", "--request-timeout", "nan"],
            "--request-timeout must be a positive",
        ),
    ],
)
def test_what_cannot_serve_is_refused_at_once(bridge: Bridge, args: list[str], says: str) -> None:
    env = bridge.env()
    env.pop("ACP_BRIDGE_MCP_TOKEN", None)
    done = subprocess.run(
        [*ACP_BRIDGE, "mcp", *args],
        env=env,
        cwd=bridge.root,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert says in done.stderr
    assert done.stdout == ""


PING = '{"jsonrpc":"2.0","id":1,"method":"ping"}'
CHUNKED = f"{len(PING):x}\r\n{PING}\r\n0\r\n\r\n"  # the same request, chunked
N = len(CHUNKED)  # a Content-Length that frames the chunked body exactly: valid both ways
# Request framings a server must refuse: (headers, body). Each is followed on the same
# connection by a well-formed request, which must never be answered (RFC 9112 6.1: answer,
# then close the connection).
BAD_FRAMING = {
    "cl-then-te": (f"Content-Length: {N}\r\nTransfer-Encoding: chunked\r\n", CHUNKED),
    "te-then-cl": (f"Transfer-Encoding: chunked\r\nContent-Length: {N}\r\n", CHUNKED),
    "cl-zero-and-te": ("Content-Length: 0\r\nTransfer-Encoding: chunked\r\n", CHUNKED),
    "shouted-names": (f"CONTENT-LENGTH: {N}\r\nTRANSFER-ENCODING: CHUNKED\r\n", CHUNKED),
    "te-with-tab-and-cl": (f"Transfer-Encoding:\tchunked\r\nContent-Length: {N}\r\n", CHUNKED),
    "te-and-cl-mid-headers": (
        f"Transfer-Encoding: chunked\r\nX-Between: 1\r\ncontent-length: {N}\r\n",
        CHUNKED,
    ),
    "two-lengths": (f"Content-Length: {len(PING)}\r\nContent-Length: 7\r\n", PING),
    "length-list": (f"Content-Length: {len(PING)}, 7\r\n", PING),
    "signed-length": (f"Content-Length: +{len(PING)}\r\n", PING),
    "negative-length": ("Content-Length: -1\r\n", PING),
    "te-not-chunked-last": ("Transfer-Encoding: chunked, gzip\r\n", CHUNKED),
    "te-identity": ("Transfer-Encoding: identity\r\n", PING),
    "te-xchunked": ("Transfer-Encoding: xchunked\r\n", CHUNKED),
    "two-te": ("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", CHUNKED),
    "space-before-colon": (f"Content-Length : {len(PING)}\r\n", PING),
    "bad-chunk-size": ("Transfer-Encoding: chunked\r\n", "zz\r\n" + PING + "\r\n0\r\n\r\n"),
}


@pytest.mark.parametrize("shape", list(BAD_FRAMING))
async def test_a_bad_framing_is_refused_and_the_connection_closed(
    server: str, clients: dict[str, Client], shape: str
) -> None:
    url = httpx2.URL(server)
    head = (
        f"POST {url.path} HTTP/1.1\r\nHost: {url.host}:{url.port}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\n"
    )
    headers, body = BAD_FRAMING[shape]
    smuggled = (  # a complete, valid request: answering it would be reading past the error
        f"GET {url.path} HTTP/1.1\r\nHost: {url.host}:{url.port}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nAccept: text/event-stream\r\n\r\n"
    )
    reply = b""
    async with await anyio.connect_tcp(url.host, url.port) as stream, bounded(10):
        await stream.send((head + headers + "\r\n" + body + smuggled).encode())
        with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
            while True:  # to the end: the server closes the connection
                reply += await stream.receive()
    assert reply.startswith(b"HTTP/1.1 400 "), reply
    assert reply.count(b"HTTP/1.1 ") == 1, reply  # the smuggled request got no answer
    assert (await clients["legacy"].list_tools()).tools  # and the server goes on
