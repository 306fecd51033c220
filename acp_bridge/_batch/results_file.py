"""A batch's results file: one envelope per line, in input order, resumable.

The file itself is only ever replaced whole (a temporary file beside it, synced, renamed
over it), so a reader never sees half of it and a crash never leaves it torn. While the
batch runs, each envelope is appended to a journal beside it (``RESULTS.jsonl.journal``)
as its task ends; the journal is folded into the file when the batch ends or is
interrupted, and removed. After a crash (SIGKILL, power) the journal is still there, and
the next run with the same file reads both: a torn last line of the journal is a task that
had not ended, and simply runs again.

One driver per file: the batch holds ``RESULTS.jsonl.lock`` (an ``flock``, released by the
kernel when the process ends, however it ends) from before it reads the file until it has
written it. A second batch on the same file is refused at once, naming the holder (its pid,
host and start, which the holder writes into the lock file): two drivers resuming one file
would otherwise both run every missing task.

Resuming: tasks whose key already has an envelope are not run again, with one exception:
a task that the batch's own interruption ended (``meta.batch.interrupted``) runs again, as
the interrupt was not its result. Envelopes whose key is no longer among the tasks are kept,
after the others.

Bounded memory: no envelope is held. For each key only where its line is (the file or the
journal, offset, length), its status and whether an interrupt ended it are kept (~200 bytes
a task); the final write copies each line from there, one at a time. Holding each ended
task's envelope until the batch's end cost ~1 KB a small one, and a big answer whole.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from acp_bridge._os import bounded_json
from acp_bridge._os.fs.input_files import InputRefused, input_lines
from acp_bridge.envelope import SubtaskResult, is_envelope
from acp_bridge.errors import ConfigError

JOURNAL_SUFFIX = ".journal"
RESULTS_FILE = "a results file"
MAX_RESULTS_BYTES = 4 << 30
"""The largest results file (or journal) read back: every envelope in it is held at once."""
MAX_RESULTS_LINE_BYTES = 256 << 20
"""The longest line read back: one envelope, its answer and diff within their own caps."""
MAX_ENVELOPE_DEPTH = 2 * bounded_json.MAX_DEPTH
"""An envelope nests a structured answer (itself up to ``MAX_DEPTH``) a few levels down."""
LOCK_SUFFIX = ".lock"


class _Line:
    """Where a key's envelope is, and what the batch needs of it without reading it again.
    (A plain class, not a named tuple: this module postpones its annotations.)"""

    __slots__ = ("interrupted", "length", "offset", "source", "status")

    def __init__(
        self, source: int, offset: int, length: int, status: str | None, interrupted: bool
    ) -> None:
        self.source = source  # FILE or JOURNAL
        self.offset = offset
        self.length = length
        self.status = status
        self.interrupted = interrupted


FILE, JOURNAL = 0, 1


def _summary(envelope: dict[str, Any]) -> tuple[str | None, str | None, bool]:
    """The key, status and ``interrupted`` of an envelope given as JSON data."""
    info = (envelope.get("meta") or {}).get("batch") or {}
    key = info.get("key")
    status = envelope.get("status")
    return (
        key if isinstance(key, str) else None,
        status if isinstance(status, str) else None,
        bool(info.get("interrupted")),
    )


class ResultsFile:
    """The results file at ``path`` and its journal."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.journal = path.with_name(path.name + JOURNAL_SUFFIX)
        self.lock_path = path.with_name(path.name + LOCK_SUFFIX)
        self._lines: dict[str, _Line] = {}
        self._journal: IO[bytes] | None = None
        self._lock: int | None = None

    def lock(self) -> None:
        """Hold the file (and its journal) for this process until :meth:`unlock`;
        :class:`ConfigError` naming the holder when another process holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(fd)
                os.close(fd)
                raise ConfigError(
                    f"{self.path}: another batch is writing it ({holder}); wait for it to "
                    f"end or use another --out"
                ) from None
            # The holder before us removes the lock file as it lets go: a lock taken on a
            # file that is no longer at the path holds nothing, so take the new one.
            try:
                current = self.lock_path.stat().st_ino
            except FileNotFoundError:
                current = None
            if current == os.fstat(fd).st_ino:
                break
            os.close(fd)
        started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        me = {"pid": os.getpid(), "host": socket.gethostname(), "started": started}
        os.ftruncate(fd, 0)
        os.write(fd, (json.dumps(me) + "\n").encode())
        self._lock = fd

    def unlock(self) -> None:
        """Let go of the file: removed first, so a process waiting on the old lock file
        sees that it was (see :meth:`lock`)."""
        if self._lock is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.lock_path.unlink()
        os.close(self._lock)
        self._lock = None

    def load(self) -> set[str]:
        """The keys that have an envelope already (the file's, then the journal's on top)."""
        found: dict[str, _Line] = {}
        for source, path, tolerant in ((FILE, self.path, False), (JOURNAL, self.journal, True)):
            for key, line in _read(path, tolerant=tolerant, source=source):
                found[key] = line
        self._lines = found
        return set(found)

    def done_keys(self) -> set[str]:
        """Keys whose task need not run again."""
        return {key for key, line in self._lines.items() if not line.interrupted}

    def statuses(self) -> dict[str, str | None]:
        """Each key's status, as its envelope here says."""
        return {key: line.status for key, line in self._lines.items()}

    def append(self, result: SubtaskResult) -> None:
        """``result`` into the journal, at once (flushed: a killed process keeps it); only
        where it was written is kept."""
        if self._journal is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._journal = self.journal.open("ab")
            self._journal.seek(0, os.SEEK_END)
            if self._journal.tell() and _last_byte(self.journal) != b"\n":
                self._journal.write(b"\n")  # a crashed run's torn line ends before ours
        offset = self._journal.tell()
        for piece in result.json_pieces():  # a long answer is encoded a slice at a time
            self._journal.write(piece.encode())
        length = self._journal.tell() - offset
        self._journal.write(b"\n")
        self._journal.flush()
        batch = result.meta.batch or {}
        key = batch.get("key")
        if isinstance(key, str):
            interrupted = bool(batch.get("interrupted"))
            self._lines[key] = _Line(JOURNAL, offset, length, result.status, interrupted)

    def write(self, keys: Sequence[str]) -> int:
        """Replace the file: the envelopes of ``keys`` that have one, in that order, then
        every other one already there; then drop the journal. Returns the lines written.
        Each line is copied from where it is, one at a time."""
        listed = set(keys)
        order = [key for key in keys if key in self._lines]
        order += [key for key in self._lines if key not in listed]
        ordered = [self._lines[key] for key in order]
        if self._journal is not None:
            self._journal.flush()
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        sources: dict[int, int] = {}
        try:
            for source, path in ((FILE, self.path), (JOURNAL, self.journal)):
                if any(line.source == source for line in ordered):
                    sources[source] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            with temporary.open("wb") as out:
                for line in ordered:
                    out.write(_pread_all(sources[line.source], line.length, line.offset))
                    out.write(b"\n")
                out.flush()
                os.fsync(out.fileno())
            temporary.replace(self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise
        finally:
            for fd in sources.values():
                os.close(fd)
        _sync_dir(self.path.parent)
        self.close()
        with contextlib.suppress(FileNotFoundError):
            self.journal.unlink()
        at, moved = 0, {}
        for key, line in zip(order, ordered, strict=True):  # where each line is now
            moved[key] = _Line(FILE, at, line.length, line.status, line.interrupted)
            at += line.length + 1
        self._lines = moved
        return len(ordered)

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None


def _read(path: Path, *, tolerant: bool, source: int = FILE) -> list[tuple[str, _Line]]:
    """Where each envelope in ``path`` is (none when it does not exist), read line by line
    within the results file's bounds. ``tolerant``: a line that is not an envelope is
    skipped (a journal's torn last line); else it is an error."""
    found = []
    lines = input_lines(
        path,
        what=RESULTS_FILE,
        limit=MAX_RESULTS_BYTES,
        line_limit=MAX_RESULTS_LINE_BYTES,
        json_objects=not tolerant,
    )
    offset = 0
    try:
        for number, line in lines:
            start, offset = offset, offset + len(line) + 1  # the newline, split off
            if not line.strip():
                continue
            why = "not an envelope"
            try:
                value = bounded_json.loads(line, MAX_ENVELOPE_DEPTH)
            except ValueError as exc:  # not JSON, not UTF-8, nested past the bound
                value, why = None, f"not an envelope ({exc})"
            if not is_envelope(value):
                if tolerant:
                    continue
                raise ConfigError(
                    f"{path}:{number}: {why}; is this a results file of acp-bridge "
                    "batch? (use another --out)"
                )
            key, status, interrupted = _summary(value)
            if key is not None:
                found.append((key, _Line(source, start, len(line), status, interrupted)))
    except FileNotFoundError:
        return []
    except InputRefused as exc:
        why = f"{exc} (is this a results file of acp-bridge batch? use another --out)"
        raise ConfigError(why) from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the results: {exc.strerror or exc}") from None
    finally:
        lines.close()
    return found


def _pread_all(fd: int, length: int, offset: int) -> bytes:
    """``length`` bytes at ``offset``: :class:`OSError` when the file is shorter (it changed
    under us)."""
    data = os.pread(fd, length, offset)
    while len(data) < length:
        more = os.pread(fd, length - len(data), offset + len(data))
        if not more:
            raise OSError(f"a results file shrank while it was copied (at byte {offset})")
        data += more
    return data


def _last_byte(path: Path) -> bytes:
    with path.open("rb") as file:
        file.seek(-1, os.SEEK_END)
        return file.read(1)


def _holder(fd: int) -> str:
    """Who holds the lock, as its lock file says."""
    try:
        holder = json.loads(os.pread(fd, 4096, 0))
        return f"pid {holder['pid']} on {holder['host']}, started {holder['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not said who it is yet"


def _sync_dir(directory: Path) -> None:
    """The rename itself, durable (the directory entry)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
