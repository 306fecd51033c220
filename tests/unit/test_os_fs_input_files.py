"""The one reader of named inputs: what is not a regular file is refused without blocking,
before a byte is read; a file past its kind's limit is refused from its size; lines split at
``\\n`` only, wherever the reads cut them; a byte that is not UTF-8, a line too long, a line
that cannot begin a JSON object are named by line (and column)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_bridge._os.fs import input_files
from acp_bridge._os.fs.input_files import InputRefused, decode, input_lines, read_bytes, read_text

LIMIT = 1 << 20


def fifo(tmp: Path) -> Path:
    path = tmp / "fifo"
    os.mkfifo(path)
    return path


def unix_socket(tmp: Path) -> Path:
    path = tmp / "sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()
    return path


def sparse(tmp: Path) -> Path:
    path = tmp / "sparse"
    with path.open("wb") as file:
        file.truncate(1 << 40)  # a terabyte, no disk
    return path


def device(_tmp: Path) -> Path:
    return Path("/dev/zero")


def device_link(tmp: Path) -> Path:
    (tmp / "zero.jsonl").symlink_to("/dev/zero")
    return tmp / "zero.jsonl"


def directory(tmp: Path) -> Path:
    return tmp


# member: (how to make it, what the error says)
NOT_READ: dict[str, tuple[Callable[[Path], Path], str]] = {
    "fifo": (fifo, "not a regular file: it is a FIFO (named pipe)"),
    "/dev/zero": (device, "not a regular file: it is a character device"),
    "a link to /dev/zero": (device_link, "not a regular file: it is a character device"),
    "socket": (unix_socket, "not a regular file: it is a socket"),
    "directory": (directory, "not a regular file: it is a directory"),
    "sparse terabyte": (
        sparse,
        f"1099511627776 bytes: a test file is read up to {LIMIT} bytes (1 MiB)",
    ),
}
READERS: dict[str, Callable[[Path], object]] = {
    "bytes": lambda path: read_bytes(path, what="a test file", limit=LIMIT),
    "text": lambda path: read_text(path, what="a test file", limit=LIMIT),
    "lines": lambda path: list(
        input_lines(path, what="a test file", limit=LIMIT, line_limit=LIMIT, json_objects=True)
    ),
}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("member", NOT_READ)
def test_what_is_not_a_regular_file_or_too_big_is_refused_unread(
    tmp_path: Path, member: str, reader: str
) -> None:
    make, says = NOT_READ[member]
    path = make(tmp_path)
    with pytest.raises(InputRefused) as caught:
        READERS[reader](path)
    assert str(caught.value) == f"{path}: {says}"
    assert isinstance(caught.value, OSError) and caught.value.filename == str(path)


def test_a_file_that_grows_while_it_is_read_stops_at_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "growing"
    path.write_bytes(b"x" * 100)
    real_read = os.read

    def growing(fd: int, size: int) -> bytes:  # as if another process kept appending
        return real_read(fd, size) or b"y" * size

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(input_files.os, "read", growing)
        with pytest.raises(InputRefused, match="more than that, and growing"):
            read_bytes(path, what="a test file", limit=LIMIT)
        with pytest.raises(InputRefused, match="more than that, and growing"):
            list(input_lines(path, what="a test file", limit=LIMIT, line_limit=LIMIT))


@pytest.mark.parametrize(
    ("data", "line", "column"),
    [
        (b"\xff", 1, 1),
        (b"ok\nstill ok\nbad \xc3(", 3, 5),
        ("\u2028 é\n".encode() * 3 + b"\xe2\x82", 4, 1),
        ("ééé \xff".encode("latin-1"), 1, 1),
    ],
)
def test_a_byte_that_is_not_utf8_is_named_by_line_and_column(
    tmp_path: Path, data: bytes, line: int, column: int
) -> None:
    path = tmp_path / "f"
    path.write_bytes(data)
    with pytest.raises(InputRefused) as caught:
        read_text(path, what="a test file", limit=LIMIT)
    assert (caught.value.line, caught.value.column) == (line, column)
    assert str(caught.value).startswith(f"{path}:{line}:{column}: not UTF-8")


def test_a_line_is_decoded_with_its_number() -> None:
    with pytest.raises(InputRefused, match=r"^tasks:7:3: not UTF-8"):
        decode(b"ab\xff", "tasks", line=7)


SEPARATORS = ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\r"]


@pytest.mark.parametrize("separator", SEPARATORS, ids=repr)
def test_lines_split_at_newline_only(tmp_path: Path, separator: str) -> None:
    path = tmp_path / "f.jsonl"
    path.write_text(f'{{"a": "x{separator}y"}}\n{{"b": 2}}\n', encoding="utf-8", newline="")
    lines = list(input_lines(path, what="a test file", limit=LIMIT, line_limit=LIMIT))
    assert [number for number, _ in lines] == [1, 2]
    assert lines[0][1].decode() == f'{{"a": "x{separator}y"}}'


@settings(max_examples=200, deadline=None)
@given(
    data=st.lists(st.sampled_from([b"\n", b"a", b"\xe2\x80\xa8", b"{", b" "]), max_size=60),
    chunk=st.integers(1, 7),
)
def test_wherever_the_reads_cut_the_lines_are_those_of_split(
    tmp_path_factory: pytest.TempPathFactory, data: list[bytes], chunk: int
) -> None:
    path = tmp_path_factory.mktemp("lines") / "f"
    content = b"".join(data)
    path.write_bytes(content)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(input_files, "READ_CHUNK", chunk)
        got = list(input_lines(path, what="a test file", limit=LIMIT, line_limit=LIMIT))
    expected = content.split(b"\n")
    if expected[-1] == b"":
        expected.pop()  # a last newline ends the last line, it begins none
    assert got == list(enumerate(expected, start=1))


@pytest.mark.parametrize("chunk", [1, 3, 1 << 16])
def test_a_line_too_long_is_refused_by_number_holding_no_more_than_it(
    tmp_path: Path, chunk: int
) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"{}\n" + b"{" + b" " * 200 + b"}\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(input_files, "READ_CHUNK", chunk)
        lines = input_lines(path, what="a test file", limit=LIMIT, line_limit=100)
        assert next(lines) == (1, b"{}")
        with pytest.raises(InputRefused, match=r":2: a line longer than 100 bytes$"):
            next(lines)


@pytest.mark.parametrize(
    ("data", "where", "begins"),
    [
        (b"\0" * 100, "1:1", "'\\x00'"),
        (b'{"a": 1}\n\n   [1, 2]\n', "3:4", "'['"),
        (b'{"a": 1}\n' + b" " * 10 + b"x" * 10, "2:11", "'x'"),
        (b"\xef\xbb\xbf{}", "1:1", "'\\xef'"),
    ],
)
@pytest.mark.parametrize("chunk", [1, 4, 1 << 16])
def test_json_lines_refuse_a_line_at_its_first_byte(
    tmp_path: Path, data: bytes, where: str, begins: str, chunk: int
) -> None:
    path = tmp_path / "f"
    path.write_bytes(data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(input_files, "READ_CHUNK", chunk)
        with pytest.raises(InputRefused) as caught:
            list(
                input_lines(
                    path, what="a test file", limit=LIMIT, line_limit=LIMIT, json_objects=True
                )
            )
    assert str(caught.value) == f"{path}:{where}: not a JSON object: it begins with {begins}"


STDIN_CHILD = textwrap.dedent(
    """
    import resource, sys
    from acp_bridge._os.fs.input_files import input_lines
    try:
        for number, line in input_lines(
            "-", what="a test file", limit=64 << 20, line_limit=32 << 20, json_objects=True
        ):
            pass
        print("read")
    except OSError as exc:
        print(exc)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    """
)


def stdin_child(stdin: int | None, data: bytes | None = None) -> tuple[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", STDIN_CHILD], stdin=stdin, input=data,
        capture_output=True, timeout=60, check=True,
    )  # fmt: skip
    said, peak = done.stdout.decode().strip().splitlines()
    return said, int(peak)


@pytest.fixture(scope="module")
def idle_peak() -> int:
    return stdin_child(None, b"{}\n")[1]


ENDLESS = "import os\nos.write(1, b'{')\nwhile True:\n    os.write(1, bytes(1 << 20))\n"
"""A writer that never stops: ``{`` and then NULs (it ends at EPIPE, when the reader has)."""


@pytest.mark.parametrize(
    ("source", "says", "held"),
    [
        ("/dev/zero", "stdin:1:1: not a JSON object: it begins with '\\x00'", 0),
        ("/dev/urandom", "stdin:", 0),
        ("sparse", "stdin: 1099511627776 bytes: a test file is read up to 67108864 bytes", 0),
        ("endless object", "stdin:1: a line longer than 33554432 bytes (", 32 << 20),
    ],
)
def test_stdin_is_held_to_the_same_bounds_in_bounded_memory(
    tmp_path: Path, idle_peak: int, source: str, says: str, held: int
) -> None:
    with contextlib.ExitStack() as stack:
        if source == "endless object":
            writer = subprocess.Popen([sys.executable, "-c", ENDLESS], stdout=subprocess.PIPE)
            stack.callback(writer.wait)
            stack.callback(writer.kill)
            assert writer.stdout is not None
            stdin = stack.enter_context(writer.stdout)
        else:
            named = sparse(tmp_path) if source == "sparse" else Path(source)
            stdin = stack.enter_context(named.open("rb"))
        said, peak = stdin_child(stdin.fileno())
    assert said.startswith(says.split(" (")[0]), said
    # ru_maxrss is in KiB: what the member may hold, and a little more, over an idle read
    assert peak - idle_peak <= (held >> 10) + (16 << 10), (peak, idle_peak)
