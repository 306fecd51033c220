"""Every file a user or an agent names, read within bounds: the one reader behind the tasks
file of a batch (and its stdin), a smoke suite, a config and a profile file, a results file
and its journal, a JSON Schema file, a compare patch, a token file.

A name can stand for anything: a FIFO (opening it blocks until someone writes), a device
(``/dev/zero`` never ends), a socket, a directory, a sparse file of a terabyte, a file that
grows while it is read. Reading such a thing whole before looking at it cost 10 GB in 25 s
(``acp-bridge batch /dev/zero``). Here:

- **Only regular files**, and nothing blocks on the way to knowing: the file is opened with
  ``O_NONBLOCK`` (a FIFO opens at once, a device's open has no wait) and ``fstat`` of the open
  file says what it is; anything else is refused before a byte is read. Standard input is
  what it is (a pipe is how stdin arrives): a regular file there is held to the size limit
  up front, anything else to the same count of bytes as it streams.
- **A limit in bytes per kind** (the caller's: a tasks file is not a token file), said in
  the error; a file larger than it is refused from its size before it is read, one that
  grows while it is read when it passes the limit.
- **Lines split at ``\\n`` only** (:func:`input_lines`): ``str.splitlines`` also splits at
  U+2028, U+0085, form feeds and more, all of which may stand raw inside a JSON string. A
  line is read as it streams, at most ``line_limit`` bytes of it held; JSON Lines refuse a
  line that cannot begin an object at its first byte, not at its end.
- **Errors name the file, and the line when one is at fault**: ``tasks.jsonl:3: not UTF-8
  (invalid start byte) at column 9``. They are :class:`InputRefused`, an ``OSError``, so a
  caller that already turns a missing file into its own error turns these the same way.

JSON parsed from these files goes through ``_os/bounded_json.py`` (nesting bounded).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Generator, Iterator
from pathlib import Path

READ_CHUNK = 1 << 16
STDIN = "-"
"""The name that stands for standard input where a command takes one."""
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}
_BLANK = b" \t\r\n\f\v"


class InputRefused(OSError):
    """A named input that cannot be read as what it was named for. ``str()`` is
    ``NAME[:LINE[:COLUMN]]: REASON``; ``strerror`` is the reason alone."""

    def __init__(
        self,
        name: str,
        reason: str,
        *,
        line: int | None = None,
        column: int | None = None,
        code: int = errno.EINVAL,
    ) -> None:
        super().__init__(code, reason, name)
        self.name = name
        self.reason = reason
        self.line = line
        self.column = column

    def __str__(self) -> str:
        where = self.name
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {self.reason}"


def size_text(limit: int) -> str:
    """``limit`` as people read it: ``67108864 bytes (64 MiB)``."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if limit >= 1 << shift and limit % (1 << shift) == 0:
            return f"{limit} bytes ({limit >> shift} {unit})"
    return f"{limit} bytes"


def _too_big(name: str, what: str, limit: int, size: int | None) -> InputRefused:
    said = f"{size} bytes" if size is not None else "more than that, and growing"
    return InputRefused(name, f"{said}: {what} is read up to {size_text(limit)}", code=errno.EFBIG)


def open_regular(path: Path | str, what: str, limit: int) -> int:
    """A file descriptor of ``path`` if it is a regular file of at most ``limit`` bytes
    (the caller closes it); else :class:`InputRefused`. Never blocks."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket cannot be opened at all
            _check_regular(Path(path).stat(), str(path), what, limit)
        raise
    try:
        _check_regular(os.fstat(fd), str(path), what, limit)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_regular(info: os.stat_result, name: str, what: str, limit: int) -> None:
    if not stat.S_ISREG(info.st_mode):
        kind = _KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
        raise InputRefused(name, f"not a regular file: it is {kind}")
    if info.st_size > limit:
        raise _too_big(name, what, limit, info.st_size)


def _stdin(what: str, limit: int) -> int:
    """Standard input's descriptor, checked as far as it can be without reading it."""
    try:
        info = os.fstat(0)
    except OSError as exc:
        raise InputRefused("stdin", f"cannot be read: {exc.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise InputRefused("stdin", "not readable: it is a directory")
    if stat.S_ISREG(info.st_mode) and info.st_size > limit:
        raise _too_big("stdin", what, limit, info.st_size)
    return 0


def read_bytes(path: Path | str, *, what: str, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them (``what``: the kind
    of file, for the error: ``a YAML file``)."""
    fd = open_regular(path, what, limit)
    try:
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, READ_CHUNK):
            size += len(chunk)
            if size > limit:  # it grew while we read
                raise _too_big(str(path), what, limit, None)
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def decode(data: bytes, name: str, *, line: int | None = None) -> str:
    """``data`` as UTF-8; a byte that is not names its line and column (``line``: the
    number of ``data``'s first line in its file, when ``data`` is a line)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        number = (line or 1) + data.count(b"\n", 0, exc.start)
        column = len(data[start : exc.start].decode("utf-8", "replace")) + 1
        raise InputRefused(name, f"not UTF-8 ({exc.reason})", line=number, column=column) from None


def read_text(path: Path | str, *, what: str, limit: int) -> str:
    """The UTF-8 text of the regular file ``path`` (at most ``limit`` bytes)."""
    return decode(read_bytes(path, what=what, limit=limit), str(path))


def input_lines(
    source: Path | str,
    *,
    what: str,
    limit: int,
    line_limit: int,
    json_objects: bool = False,
) -> Generator[tuple[int, bytes], None, None]:
    """``(number, line)`` for each line of ``source`` (``"-"``: stdin), split at ``\\n`` only,
    the newline dropped; at most ``limit`` bytes in all and ``line_limit`` in a line.

    ``json_objects``: every line that is not blank must be a JSON object; one whose first
    byte that is not blank is anything but ``{`` is refused there, without reading the
    rest of it (a megabyte of NULs is not a task)."""
    name = "stdin" if str(source) == STDIN else str(source)
    fd = _stdin(what, limit) if str(source) == STDIN else open_regular(source, what, limit)
    try:
        yield from _split(fd, name, what, limit, line_limit, json_objects)
    finally:
        if fd != 0:
            os.close(fd)


def _split(
    fd: int, name: str, what: str, limit: int, line_limit: int, json_objects: bool
) -> Iterator[tuple[int, bytes]]:
    number = 0
    total = 0
    parts: list[bytes] = []  # the unfinished line, as read: joined once it ends
    held = 0
    begun = False  # the unfinished line's first byte that is not blank has been seen
    while True:
        try:
            chunk = os.read(fd, READ_CHUNK)
        except BlockingIOError:  # a non-blocking stdin with nothing yet: wait for it
            _wait_readable(fd)
            continue
        if not chunk:
            break
        total += len(chunk)
        if total > limit:
            raise _too_big(name, what, limit, None)
        pieces = chunk.split(b"\n")
        rest = pieces.pop()
        for piece in pieces:
            number += 1
            if parts:
                parts.append(piece)
                line = b"".join(parts)
                parts.clear()
            else:
                line = piece
            held, begun = 0, False
            if len(line) > line_limit:
                raise _long_line(name, number, line_limit)
            if json_objects:
                _check_object_start([line], name, number)
            yield number, line
        if rest:
            parts.append(rest)
            held += len(rest)
            if held > line_limit:
                raise _long_line(name, number + 1, line_limit)
            if json_objects and not begun:
                begun = _check_object_start(parts, name, number + 1)
    if parts:
        number += 1
        if json_objects:
            _check_object_start(parts, name, number)
        yield number, b"".join(parts)


def _long_line(name: str, number: int, line_limit: int) -> InputRefused:
    return InputRefused(
        name, f"a line longer than {line_limit} bytes", line=number, code=errno.EFBIG
    )


def _check_object_start(parts: list[bytes], name: str, number: int) -> bool:
    """Whether the line in ``parts`` has begun (a byte that is not blank); refused when
    that byte cannot begin a JSON object."""
    column = 1
    for part in parts:
        first = part.lstrip(_BLANK)[:1]
        if first:
            if first != b"{":
                column += len(part) - len(part.lstrip(_BLANK))
                shown = repr(first)[1:]
                raise InputRefused(
                    name, f"not a JSON object: it begins with {shown}", line=number, column=column
                )
            return True
        column += len(part)
    return False


def _wait_readable(fd: int) -> None:
    import select

    select.select([fd], [], [])
