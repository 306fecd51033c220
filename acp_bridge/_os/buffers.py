"""Bounded buffers for process output, and the one set of UTF-8 boundary helpers.

- :class:`HeadTail` keeps the first and the last bytes of a stream (a command's first lines
  say what it is doing, its last lines how it ended) and renders them with a marker saying
  how much was cut: the ``bash`` entry's stdout and stderr.
- :class:`TailBuffer` keeps exactly the last ``limit`` bytes (a terminal's output as ACP
  defines it, an agent's stderr tail). Past a small size it moves into a ring allocated once
  and written in place: however much a command writes, nothing kept is copied again.

Both hand out text cut on character boundaries: a multi-byte character split by a cut (or
still arriving) is left out whole, never shown as U+FFFD; bytes that are not UTF-8 at all
become U+FFFD, never silently dropped.
"""

from __future__ import annotations

MARKER = "[... {count} bytes omitted ...]"
SMALL_OUTPUT = 1 << 16  # a TailBuffer grows a plain buffer up to this, then uses its ring


# --- UTF-8 boundaries ---------------------------------------------------------------------


def _is_continuation(byte: int) -> bool:
    return byte & 0b1100_0000 == 0b1000_0000


def _utf8_length(lead: int) -> int:
    """How many bytes the character starting with ``lead`` has (1 for anything invalid)."""
    for length, prefix, shift in ((2, 0b110, 5), (3, 0b1110, 4), (4, 0b11110, 3)):
        if lead >> shift == prefix:
            return length
    return 1


def char_start(data: bytes | memoryview) -> int:
    """Where the first whole character starts: past at most three continuation bytes left
    over from a character cut in half at the front."""
    skip = 0
    while skip < min(3, len(data)) and _is_continuation(data[skip]):
        skip += 1
    return skip


def complete_end(data: bytes | memoryview) -> int:
    """Where the last whole character ends: before a multi-byte character whose last bytes
    are missing (cut off, or not written yet)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if _is_continuation(byte):
            continue  # the lead byte is further back
        return len(data) - back if _utf8_length(byte) > back else len(data)
    return len(data)


def decode(data: bytes | memoryview) -> str:
    return str(data, "utf-8", "replace")


# --- head and tail ----------------------------------------------------------------------------


class HeadTail:
    """The first and the last bytes of a stream, at most ``limit`` in all."""

    def __init__(self, limit: int) -> None:
        if limit < 2:
            raise ValueError(f"limit must be at least 2 bytes, got {limit}")
        self._head_limit = limit - limit // 2
        self._tail_limit = limit // 2
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0
        """Bytes seen so far."""

    @property
    def truncated(self) -> bool:
        return self.total > self._head_limit + self._tail_limit

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        self._tail += data
        # Trim only once the tail has doubled: one copy per ``tail_limit`` bytes fed.
        if len(self._tail) > 2 * self._tail_limit:
            del self._tail[: len(self._tail) - self._tail_limit]

    def text(self) -> str:
        """What was kept, decoded; a marker between head and tail when bytes were cut."""
        tail = bytes(self._tail[-self._tail_limit :])
        if not self.truncated:
            return decode(bytes(self._head) + tail)
        head = bytes(self._head)
        head = head[: complete_end(head)]
        tail = tail[char_start(tail) :]
        omitted = self.total - len(head) - len(tail)
        head_text = decode(head)
        joint = "" if not head_text or head_text.endswith("\n") else "\n"
        return f"{head_text}{joint}{MARKER.format(count=omitted)}\n{decode(tail)}"


# --- the last bytes -------------------------------------------------------------------------


class TailBuffer:
    """The last ``limit`` bytes of a stream; its text is a suffix of the stream, at most
    ``limit`` bytes as UTF-8, starting and ending on character boundaries."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1 byte, got {limit}")
        self.limit = limit
        self.truncated = False
        self.total = 0
        self._buf = bytearray()
        self._ring = False
        self._head = 0  # in the ring: where the oldest kept byte is
        self._size = 0  # in the ring: how many bytes are kept

    def append(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if not self._ring:
            if len(self._buf) + len(chunk) <= min(self.limit, SMALL_OUTPUT):
                self._buf += chunk
                return
            small, self._buf = self._buf, bytearray(self.limit)
            self._ring = True
            self._write(small)
        self._write(chunk)

    def _write(self, chunk: bytes | bytearray) -> None:
        limit, size = self.limit, len(chunk)
        if size >= limit:
            self._buf[:] = chunk[size - limit :]  # same length: written in place
            self.truncated = self.truncated or self._size > 0 or size > limit
            self._head, self._size = 0, limit
            return
        at = (self._head + self._size) % limit
        first = min(size, limit - at)
        self._buf[at : at + first] = chunk[:first]
        self._buf[: size - first] = chunk[first:]
        excess = self._size + size - limit
        if excess > 0:
            self._head = (self._head + excess) % limit
            self.truncated = True
        self._size = min(limit, self._size + size)

    def kept(self) -> bytes:
        """The kept bytes, oldest first (one copy)."""
        view = memoryview(self._buf)
        if not self._ring:
            return bytes(view)
        if self._size < self.limit:
            return bytes(view[: self._size])
        return b"".join((view[self._head :], view[: self._head]))

    def text(self, *, complete: bool = False) -> str:
        """The kept bytes as text. Until the stream is ``complete``, a character whose last
        bytes are still to come is left out (a later call has it whole)."""
        data = self.kept()
        start = char_start(data) if self.truncated else 0
        end = len(data) if complete else complete_end(data)
        return decode(memoryview(data)[start:end])
