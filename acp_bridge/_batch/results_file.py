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


def _key(envelope: dict[str, Any]) -> str | None:
    info = (envelope.get("meta") or {}).get("batch") or {}
    key = info.get("key")
    return key if isinstance(key, str) else None


class ResultsFile:
    """The results file at ``path`` and its journal."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.journal = path.with_name(path.name + JOURNAL_SUFFIX)
        self.lock_path = path.with_name(path.name + LOCK_SUFFIX)
        self.previous: dict[str, dict[str, Any]] = {}
        self._journal: IO[str] | None = None
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

    def load(self) -> dict[str, dict[str, Any]]:
        """The envelopes already there, by key (the file's, then the journal's on top)."""
        found: dict[str, dict[str, Any]] = {}
        for source, tolerant in ((self.path, False), (self.journal, True)):
            for envelope in _read(source, tolerant=tolerant):
                key = _key(envelope)
                if key is not None:
                    found[key] = envelope
        self.previous = found
        return found

    def done_keys(self) -> set[str]:
        """Keys whose task need not run again."""
        return {
            key
            for key, envelope in self.previous.items()
            if not ((envelope.get("meta") or {}).get("batch") or {}).get("interrupted")
        }

    def append(self, result: SubtaskResult) -> None:
        """``result`` into the journal, at once (flushed: a killed process keeps it)."""
        if self._journal is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._journal = self.journal.open("a", encoding="utf-8")
        self._journal.write(result.to_json() + "\n")
        self._journal.flush()
        key = _key(result.to_dict())
        if key is not None:
            self.previous[key] = result.to_dict()

    def write(self, keys: Sequence[str]) -> int:
        """Replace the file: the envelopes of ``keys`` that have one, in that order, then
        every other one already there; then drop the journal. Returns the lines written."""
        ordered = [self.previous[key] for key in keys if key in self.previous]
        listed = set(keys)
        ordered += [env for key, env in self.previous.items() if key not in listed]
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            with temporary.open("w", encoding="utf-8") as out:
                for envelope in ordered:
                    out.write(json.dumps(envelope, ensure_ascii=False) + "\n")
                out.flush()
                os.fsync(out.fileno())
            temporary.replace(self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise
        _sync_dir(self.path.parent)
        self.close()
        with contextlib.suppress(FileNotFoundError):
            self.journal.unlink()
        return len(ordered)

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None


def _read(path: Path, *, tolerant: bool) -> list[dict[str, Any]]:
    """The envelopes in ``path`` (none when it does not exist), read line by line within
    the results file's bounds. ``tolerant``: a line that is not an envelope is skipped (a
    journal's torn last line); else it is an error."""
    found = []
    lines = input_lines(
        path,
        what=RESULTS_FILE,
        limit=MAX_RESULTS_BYTES,
        line_limit=MAX_RESULTS_LINE_BYTES,
        json_objects=not tolerant,
    )
    try:
        for number, line in lines:
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
            found.append(value)
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
