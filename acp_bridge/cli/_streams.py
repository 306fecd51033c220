"""The CLI's own streams, made to hold whatever they are: closed, ASCII-only, or never read.

- **Closed** (``<&-``, ``2>&-``): Python starts with ``sys.stdin`` or ``sys.stderr`` set to
  None, and the next file the process opens takes the free descriptor — a run's pipe could
  become "stderr". :func:`open_streams` puts ``/dev/null`` on every closed standard
  descriptor first, so reads see end of input and writes go nowhere, as for a daemon.
- **Not UTF-8** (``PYTHONIOENCODING=ascii``, a non-UTF-8 locale): text that the encoding
  cannot carry is written as backslash escapes instead of raising (JSON output escapes it
  the JSON way: see _safe_text.py).
- **Never read** (a consumer that reads stdout only, while ``--events ndjson`` fills
  stderr): a blocking write to a full pipe would stop the event loop, and with it the run
  and its deadline. Writes to stderr go to :class:`StderrChannel` instead, which writes only
  what the descriptor takes without blocking, keeps up to :data:`STDERR_BACKLOG` bytes for a
  slow reader, and past that drops whole writes (counted, and said once it drains). At
  the end of the command it waits for the reader only while the reader makes progress.
- Everything written to stderr — our lines, argparse's, a library's log, a traceback —
  passes through the terminal sanitizer (:func:`~acp_bridge.cli._safe_text.visible`);
  a printer's own escape sequences (the smoke live block) use :meth:`SafeStderr.control`.

stdout is left blocking: it carries the result, and a consumer that does not read it has
asked for nothing else. When it takes nothing more (a reader gone, a full disk),
:func:`stdout_gone` points it at ``/dev/null`` so that what is still buffered does not fail
again at exit.

Text typed on the command line or piped to stdin (a task) is read as UTF-8 when its bytes
are UTF-8, whatever the locale said (:func:`typed_text`): under an ASCII-only locale
(``LC_ALL=C`` without Python's UTF-8 mode) Python decodes them as ASCII, and the bytes that
are not arrive as lone surrogates.
"""

from __future__ import annotations

import contextlib
import io
import os
import select
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO

from acp_bridge.cli._safe_text import is_utf, visible

STDERR_BACKLOG = 4 << 20
"""Bytes kept for a stderr reader that is behind; past them, writes are dropped."""
DRAIN_PATIENCE = 1.0
"""Seconds the end of a command waits for a stderr reader that takes nothing."""
_CHUNK = select.PIPE_BUF  # a pipe that polls writable takes this many bytes without blocking


class StderrChannel:
    """Bytes to a descriptor, written only as far as it takes them without blocking."""

    def __init__(self, fd: int, backlog: int = STDERR_BACKLOG) -> None:
        self.fd = fd
        self.backlog = backlog
        self.dropped = 0
        self._pending = bytearray()
        self._broken = False
        self._lock = threading.Lock()  # one writer at a time; others only append

    def write(self, data: bytes) -> None:
        if self._broken or not data:
            return
        if len(self._pending) + len(data) > self.backlog:
            self.pump()
            if len(self._pending) + len(data) > self.backlog:
                self.dropped += len(data)  # whole writes: an NDJSON line is never cut
                return
        self._pending += data
        self.pump()

    def pump(self, patience: float = 0.0) -> bool:
        """Write what is pending; wait up to ``patience`` seconds for each step of progress.
        True when nothing is left."""
        # Another thread writing, or a signal handler interrupting a write: that write goes
        # on with what was appended (a bytearray append is atomic).
        locked = self._lock.acquire(timeout=patience) if patience > 0 else self._lock.acquire(False)
        if not locked:
            return not self._pending
        try:
            self._note_dropped()
            while self._pending and not self._broken:
                if not self._writable(patience):
                    return False
                try:
                    written = os.write(self.fd, self._pending[:_CHUNK])
                except BlockingIOError:
                    return False
                except OSError:  # the reader is gone (EPIPE), or the descriptor is
                    self._broken = True
                    self._pending.clear()
                    return True
                del self._pending[:written]
                self._note_dropped()
            return not self._pending
        finally:
            self._lock.release()

    def _note_dropped(self) -> None:
        if self.dropped and not self._pending:
            note = f"\n[acp-bridge: {self.dropped} bytes of stderr dropped: nobody read them]\n"
            self._pending += note.encode("ascii")
            self.dropped = 0

    def _writable(self, timeout: float) -> bool:
        poller = select.poll()
        poller.register(self.fd, select.POLLOUT)
        events = poller.poll(int(timeout * 1000))
        if any(mask & select.POLLNVAL for _, mask in events):  # not an open descriptor
            self._broken = True
            self._pending.clear()
            return False
        # An error or hang-up is writable too: the write says what it is (EPIPE).
        return bool(events)

    def drain(self, patience: float = DRAIN_PATIENCE) -> None:
        """Write what is pending while the reader keeps taking it; give up after
        ``patience`` seconds without progress."""
        progress = time.monotonic()
        while self._pending and not self._broken:
            left = patience - (time.monotonic() - progress)
            if left <= 0:
                return
            before = len(self._pending)
            self.pump(left)
            if len(self._pending) < before:
                progress = time.monotonic()


class SafeStderr(io.TextIOBase):
    """``sys.stderr`` while the CLI runs: sanitized text, written by a :class:`StderrChannel`
    (or, when the stream it replaces has no descriptor — a test's capture — to that)."""

    def __init__(self, inner: TextIO) -> None:
        super().__init__()
        self.inner = inner
        self._encoding = getattr(inner, "encoding", None) or "utf-8"
        self.channel: StderrChannel | None = None
        try:
            self.channel = StderrChannel(inner.fileno())
            inner.flush()  # what Python buffered before, ahead of what we write
        except (AttributeError, OSError, ValueError):  # no descriptor: io.UnsupportedOperation
            self.channel = None

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding

    def isatty(self) -> bool:
        try:
            return self.inner.isatty()
        except (AttributeError, ValueError):
            return False

    def fileno(self) -> int:
        return self.inner.fileno()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._emit(visible(text))
        return len(text)

    def control(self, sequence: str) -> None:
        """One of the CLI's own escape sequences, as is (only when :meth:`isatty`)."""
        self._emit(sequence)

    def _emit(self, text: str) -> None:
        if self.channel is None:
            self.inner.write(text)
            return
        self.channel.write(text.encode(self._encoding, "backslashreplace"))

    def flush(self) -> None:
        if self.channel is None:
            self.inner.flush()
        else:
            self.channel.pump()


def typed_text(text: str) -> str:
    """``text`` from argv or stdin as the person typed it (see the module docstring);
    bytes that are not UTF-8 stay lone surrogates (the entry wrapper refuses them, clearly)."""
    if text.isascii():
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8")
    except UnicodeError:
        return text


def is_interactive() -> bool:
    """Whether a person can be asked: stdin and stderr both on a terminal."""
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


def stdout_gone() -> None:
    """stdout takes nothing more: what is still buffered goes to /dev/null, not to an
    error at exit."""
    with contextlib.suppress(OSError, ValueError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)


def _reopen_closed(fd: int) -> bool:
    """Put /dev/null on ``fd`` if it is closed; whether it was."""
    try:
        os.fstat(fd)
    except OSError:
        pass
    else:
        return False
    null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
    if null != fd:
        os.dup2(null, fd)
        os.close(null)
    return True


def _keep_encodable(stream: TextIO) -> None:
    """Text a non-UTF-8 stream cannot carry becomes backslash escapes, never an error."""
    if not is_utf(stream) and isinstance(stream, io.TextIOWrapper):
        with contextlib.suppress(ValueError, io.UnsupportedOperation):
            stream.reconfigure(errors="backslashreplace")


@contextlib.contextmanager
def open_streams() -> Iterator[None]:
    """The standard streams for the life of one CLI command (see the module docstring)."""
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        if _reopen_closed(fd) or getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, closefd=False, errors="backslashreplace"))  # noqa: SIM115
    _keep_encodable(sys.stdout)
    previous = sys.stderr
    safe = SafeStderr(previous)
    sys.stderr = safe
    try:
        yield
    finally:
        if safe.channel is not None:
            safe.channel.drain()
        sys.stderr = previous
