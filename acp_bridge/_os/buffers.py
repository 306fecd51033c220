"""Bounded capture of a process stream: the head and the tail, the middle cut.

A command's first lines usually say what it is doing and its last lines how it ended, so
both ends are worth more than either alone. :class:`HeadTail` keeps at most ``limit`` bytes
whatever the stream's size (memory stays flat for a command that prints gigabytes) and
renders them with a marker that says how much was cut.
"""

from __future__ import annotations

MARKER = "[... {count} bytes omitted ...]"


class HeadTail:
    """The first and the last bytes of a stream, at most ``limit`` in all."""

    def __init__(self, limit: int) -> None:
        if limit < 2:
            raise ValueError(f"limit must be at least 2 bytes, got {limit}")
        self._head_limit = limit - limit // 2
        self._tail_limit = limit // 2
        self._head = bytearray()
        self._tail = bytearray()
        self._total = 0

    @property
    def total(self) -> int:
        """Bytes seen so far."""
        return self._total

    @property
    def truncated(self) -> bool:
        return self._total > self._head_limit + self._tail_limit

    def feed(self, data: bytes) -> None:
        self._total += len(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        self._tail += data
        # Trim only once the tail has doubled: one copy per ``tail_limit`` bytes fed, not
        # one per chunk.
        if len(self._tail) > 2 * self._tail_limit:
            del self._tail[: len(self._tail) - self._tail_limit]

    def text(self) -> str:
        """What was kept, decoded; a marker between head and tail when bytes were cut.

        The cut never splits a UTF-8 character: a partial character at either edge of the
        gap counts as omitted. Bytes that are not UTF-8 at all are replaced, not fatal.
        """
        tail = bytes(self._tail[-self._tail_limit :])
        if not self.truncated:
            return (bytes(self._head) + tail).decode("utf-8", errors="replace")
        head = _without_partial_end(bytes(self._head))
        tail = _without_partial_start(tail)
        omitted = self._total - len(head) - len(tail)
        head_text = head.decode("utf-8", errors="replace")
        joint = "" if not head_text or head_text.endswith("\n") else "\n"
        marker = MARKER.format(count=omitted)
        return f"{head_text}{joint}{marker}\n{tail.decode('utf-8', errors='replace')}"


def _is_continuation(byte: int) -> bool:
    return byte & 0b1100_0000 == 0b1000_0000


def _without_partial_end(data: bytes) -> bytes:
    """``data`` less a UTF-8 character cut short at its end."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if _is_continuation(byte):
            continue
        if byte < 0x80:  # ASCII: nothing was cut
            return data
        needed = 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4
        return data if back >= needed else data[:-back]
    return data


def _without_partial_start(data: bytes) -> bytes:
    """``data`` less the continuation bytes of a character whose start was cut off."""
    skip = 0
    while skip < min(3, len(data)) and _is_continuation(data[skip]):
        skip += 1
    return data[skip:]
