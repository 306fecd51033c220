"""The agent's stdout cut into lines (newline-delimited JSON-RPC framing), for
:class:`~acp_bridge._acp.rpc.connection.JsonRpcConnection`.

Lines of any length up to ``max_message_bytes`` (a hard ceiling: past it the connection fails
with ProtocolError instead of the process running out of memory). A line that is not JSON (a
log line on stdout) is skipped as it streams, whatever its length: past :data:`NOISE_PROBE`
bytes only its head is kept, for the sample.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
from anyio.abc import ByteReceiveStream

from acp_bridge._acp.wire.inbound import not_json
from acp_bridge.errors import ProtocolError

READ_SIZE = 1 << 18
NOISE_PROBE = 1 << 16
"""An unfinished line this long that does not start with ``{`` is not JSON: from there on
only its first :data:`NOISE_HEAD` bytes are kept."""
NOISE_HEAD = 4096


async def read_lines(
    receive: ByteReceiveStream,
    max_message_bytes: int,
    handle_lines: Callable[[list[bytes]], Awaitable[None]],
) -> ProtocolError | None:
    """Hand the lines of each read to ``handle_lines``, in order, until the stream ends
    (None) or a line grows past ``max_message_bytes`` (that failure)."""
    parts: list[bytes] = []  # an unfinished line, kept as chunks: no O(n²) re-joining
    size = 0
    noise = False  # the unfinished line is not JSON: parts hold its head only
    while True:
        try:
            chunk = await receive.receive(READ_SIZE)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            break
        lines = chunk.split(b"\n")  # one C call, not a find and a slice per line
        rest = lines.pop()  # after the last newline: the start of the next line
        if lines:
            if parts:  # the first line began in an earlier read
                if not noise:
                    parts.append(lines[0])
                lines[0] = b"".join(parts)
                parts.clear()
                size, noise = 0, False
            await handle_lines(lines)
        if rest and not noise:
            parts.append(rest)
            size += len(rest)
            if size > NOISE_PROBE and (noise := not_json(parts)):
                head = b"".join(parts)[:NOISE_HEAD]
                parts[:] = [head]
            elif size > max_message_bytes:
                return ProtocolError(
                    f"agent sent a line longer than {max_message_bytes} bytes "
                    "(the transport's memory ceiling, the profile's max_message_bytes)"
                )
    if parts:  # a last line without its newline
        await handle_lines([b"".join(parts)])
    return None
