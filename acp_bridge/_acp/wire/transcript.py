"""JSONL transcripts: every message exchanged with an agent, one line each.

Line shapes (``t`` is seconds since the run started)::

    {"t": 0.012, "dir": "out", "msg": {...}}       a message we sent
    {"t": 0.015, "dir": "in", "msg": {...}}        a message the agent sent
    {"t": 0.020, "dir": "in", "raw": "text"}       a stdout line that was not JSON
    {"t": 0.900, "dir": "note", "note": "..."}     something the bridge did (cancel, kill …)

Incoming messages are written as the raw bytes we received, spliced into the line, so the
update stream pays no second ``json.dumps``; the lines of one read from the agent's stdout
arrived together, so they share one time stamp and are written in one step (the connection
calls :meth:`Transcript.end_read`; anything else written first writes them first, so the
order of lines is the order of events). Secrets are replaced by ``[REDACTED]`` before
anything reaches the disk, by the one redaction policy (``_os/redact.py``), so every line
stays valid JSON. Outgoing messages are written when they were written to the agent, not
when they were queued (outbox.py): a message the agent never read is a ``not sent`` note.

A transcript is capped at ``max_bytes`` (``transcripts.max_bytes``, default
:data:`DEFAULT_MAX_BYTES`): the line that would pass the cap is replaced by one note line
saying so, and nothing more is written (the envelope's warnings say how much was left out).
"""

from __future__ import annotations

import heapq
import json
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from acp_bridge._os.fs.locations import state_dir
from acp_bridge._os.fs.private_files import create_private, new_private_file, private_dir
from acp_bridge._os.redact import Redactor
from acp_bridge.config import TranscriptSettings
from acp_bridge.errors import StateDirError

RAW_LINE_LIMIT = 4096
DEFAULT_MAX_BYTES = 64 << 20
CUT_NOTE_RESERVE = 512  # room kept under the cap for the note that says it was reached
JOINED_BYTES = 1 << 20
"""The messages of one read are written as one joined block up to this many bytes (the
update stream: one write); past it, each in its pieces, never copied."""


def default_transcript_dir(environ: Mapping[str, str] | None = None) -> Path:
    return state_dir(environ) / "transcripts"


class Transcript:
    """An append-only JSONL file for one run. Never raises on write: I/O errors disable it."""

    def __init__(
        self,
        path: Path | None,
        redactor: Redactor | None = None,
        started: float | None = None,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.path = path
        self._redactor = redactor or Redactor()
        self._started = time.monotonic() if started is None else started
        self._file: IO[bytes] | None = None
        self._room = max(0, max_bytes - CUT_NOTE_RESERVE)
        self._max_bytes = max_bytes
        self._left_out = 0
        self._arrived: list[bytes] = []  # incoming messages of the current read, not written
        self._arrived_at = 0.0
        self.error: str = ""
        if path is None:  # transcripts switched off
            return
        try:
            # Transcripts may hold file contents and prompts: private to the user (0600,
            # never written through a link planted at its name).
            fd = new_private_file(path) if _made_private(path.parent) else create_private(path)
            self._file = os.fdopen(fd, "wb", buffering=1 << 20)
        except (OSError, StateDirError) as exc:
            self.error = f"transcript disabled: {exc}"

    def _line(self, head: bytes, payload: bytes, stamp: float | None = None) -> None:
        """``{"t":…,"dir":<head>:<payload>}``, built in one formatting step."""
        if self._file is None:  # switched off or failed: nothing to format either
            return
        if self._arrived:
            self.end_read()
        if stamp is None:
            stamp = time.monotonic() - self._started
        line = b'{"t":%.4f,"dir":%b:%b}\n' % (stamp, head, self._redactor.json_bytes(payload))
        if len(line) > self._room:
            self._cut(stamp)
            return
        self._room -= len(line)
        try:
            self._file.write(line)
        except OSError as exc:
            self.error = f"transcript stopped: {exc}"
            self._file = None

    def _cut(self, stamp: float) -> None:
        """The cap is reached: one note line, then nothing (only counted)."""
        self._left_out += 1
        self._room = 0  # nothing more, not even a line that would still fit
        if self._left_out > 1 or self._file is None:
            return
        note = f"transcript cut here: it reached its cap of {self._max_bytes} bytes"
        try:
            self._file.write(
                b'{"t":%.4f,"dir":"note","note":%b}\n' % (stamp, json.dumps(note).encode())
            )
            self._file.flush()
        except OSError as exc:
            self.error = f"transcript stopped: {exc}"
            self._file = None

    @property
    def cut(self) -> str:
        """Why the transcript is incomplete because of its cap ("" when it is not)."""
        if self._arrived:
            self.end_read()
        if not self._left_out:
            return ""
        return (
            f"transcript cut at its cap of {self._max_bytes} bytes (transcripts.max_bytes): "
            f"{self._left_out} later line(s) not written"
        )

    def incoming(self, raw_json: bytes) -> None:
        """A JSON message received from the agent, as the bytes it arrived in. Written by
        :meth:`end_read` (or before the next other line), with the time of the first."""
        if self._file is None:
            return
        if not self._arrived:
            self._arrived_at = time.monotonic() - self._started
        self._arrived.append(raw_json)

    def end_read(self) -> None:
        """Write the messages of one read: one prefix, one join and one write for all of
        them (the update stream's hot path), unless they would pass the cap."""
        arrived, self._arrived = self._arrived, []
        if self._file is None or not arrived:
            return
        redact = self._redactor.json_bytes
        payloads = [redact(raw) for raw in arrived] if self._redactor else arrived
        prefix = b'{"t":%.4f,"dir":"in","msg":' % self._arrived_at
        if sum(map(len, payloads)) > JOINED_BYTES:
            self._write_apart(prefix, payloads)
            return
        block = b"".join([prefix, (b"}\n" + prefix).join(payloads), b"}\n"])
        if len(block) > self._room:  # line by line, so the cut falls where the cap does
            for raw in arrived:
                self._line(b'"in","msg"', raw, self._arrived_at)
            return
        self._room -= len(block)
        try:
            self._file.write(block)
        except OSError as exc:
            self.error = f"transcript stopped: {exc}"
            self._file = None

    def _write_apart(self, prefix: bytes, payloads: list[bytes]) -> None:
        """Large messages written in their pieces: joined into one block, a 16 MB line
        (one refused unread, even) was held twice more."""
        for raw in payloads:
            if self._file is None:
                return
            size = len(prefix) + len(raw) + 2
            if size > self._room:
                self._cut(self._arrived_at)
                continue
            self._room -= size
            try:
                self._file.write(prefix)
                self._file.write(raw)
                self._file.write(b"}\n")
            except OSError as exc:
                self.error = f"transcript stopped: {exc}"
                self._file = None

    def outgoing(self, raw_json: bytes, *, flush: bool = True) -> None:
        """A JSON message we sent (``raw_json`` without its newline).

        Flushes (the outbox, once per batch it wrote): what we send is rare next to the
        update stream, so this keeps the file current (a killed bridge still leaves a
        useful transcript) for the cost of one write per batch, not one per update."""
        self._line(b'"out","msg"', raw_json)
        if flush:
            self.flush()

    def flush(self) -> None:
        if self._arrived:
            self.end_read()
        if self._file is not None:
            try:
                self._file.flush()
            except OSError as exc:
                self.error = f"transcript stopped: {exc}"
                self._file = None

    def non_json(self, raw: bytes) -> None:
        text = raw[:RAW_LINE_LIMIT].decode("utf-8", "replace")
        self._line(b'"in","raw"', json.dumps(text, ensure_ascii=False).encode())

    def note(self, text: str) -> None:
        self._line(b'"note","note"', json.dumps(text, ensure_ascii=False).encode())
        self.flush()

    def close(self) -> None:
        if self._arrived:
            self.end_read()
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                self.error = f"transcript incomplete: {exc}"
            self._file = None


def run_transcript(settings: TranscriptSettings, task_id: str, redactor: Redactor) -> Transcript:
    """The transcript of run ``task_id`` as the config's ``transcripts:`` says (none when
    off), older ones pruned first."""
    if not settings.enabled:
        return Transcript(None)
    directory = settings.dir or default_transcript_dir()
    prune(directory, settings.keep - 1, recount_after=RECOUNT_AFTER)
    transcript = Transcript(directory / f"{task_id}.jsonl", redactor, max_bytes=settings.max_bytes)
    if transcript.path is not None and not transcript.error:
        added(directory, transcript.path.name)
    return transcript


_PRIVATE_FOLDERS: dict[Path, tuple[int, int, int, int]] = {}
"""Transcript folders made private in this process: (device, inode, mode, owner) then."""


def _made_private(folder: Path) -> bool:
    """Whether ``folder`` is private: made so by this process (create_private's walk and
    checks, ~0.1 ms) and still the same directory, mode and owner; else walked now. False
    when the walk fails (create_private then says why)."""
    try:
        info = folder.stat()
        if _PRIVATE_FOLDERS.get(folder) == (info.st_dev, info.st_ino, info.st_mode, info.st_uid):
            return True
        private_dir(folder)
        info = folder.stat()
    except (OSError, StateDirError):
        return False
    _PRIVATE_FOLDERS[folder] = (info.st_dev, info.st_ino, info.st_mode, info.st_uid)
    return True


# Pruning. Transcripts past ``transcripts.keep`` go, oldest first, each with its run's diff.
#
# Every run prunes before it writes its transcript, so past ``keep`` every run deletes one.
# What that costs is kept small: a transcript's age (its modification time) is looked at once
# and remembered (an age can only move forward: the ones picked to go are looked at again,
# and picked again while one of them turned out newer or gone), and a run's prune lists the
# folder at most every :data:`RECOUNT_AFTER` seconds per process: in between, the names listed
# and the transcripts this process wrote since stand for the folder. A transcript another
# process writes meanwhile is counted at the next listing (and that process prunes too).
# :func:`prune` without ``recount_after`` lists the folder every time.

RECOUNT_AFTER = 1.0
"""Seconds a run's prune goes by the folder's last listing (and what this process added)."""


class _Folder:
    # A plain class, not a dataclass: those compile their methods as every command starts.
    __slots__ = ("ages", "listed_at")

    def __init__(
        self, ages: dict[str, float | None] | None = None, listed_at: float = -1.0
    ) -> None:
        # Each transcript by name: its modification time last seen (None: not looked at).
        self.ages: dict[str, float | None] = {} if ages is None else ages
        self.listed_at = listed_at  # when the folder was last listed (monotonic; never: < 0)


_FOLDERS: dict[str, _Folder] = {}
_LOCK = threading.Lock()


def prune(directory: Path, keep: int, *, recount_after: float = 0.0) -> None:
    """Delete all but the newest ``keep`` transcripts in ``directory``, and the diff of each
    run deleted (``<task_id>.diff`` beside its transcript). Best effort. ``recount_after``:
    list the folder only when its last listing by this process is older than that."""
    with _LOCK:
        folder = _FOLDERS.setdefault(str(directory), _Folder())
        now = time.monotonic()
        if folder.listed_at < 0 or now - folder.listed_at >= recount_after:
            try:
                with os.scandir(directory) as entries:  # names only: no stat per file
                    names = [entry.name for entry in entries if entry.name.endswith(".jsonl")]
            except OSError:
                return
            folder.ages = {name: folder.ages.get(name) for name in names}
            folder.listed_at = now
        if len(folder.ages) <= keep:
            return
        for name in _oldest(directory, folder.ages, keep):
            del folder.ages[name]
            old = directory / name
            for path in (old, old.with_suffix(".diff")):
                try:
                    path.unlink(missing_ok=True)
                except OSError:
                    continue


def added(directory: Path, name: str) -> None:
    """This process wrote transcript ``name`` in ``directory`` (counted until the next
    listing, aged when it is a candidate to go)."""
    with _LOCK:
        folder = _FOLDERS.get(str(directory))
        if folder is not None:
            folder.ages.setdefault(name, None)


def _oldest(directory: Path, ages: dict[str, float | None], keep: int) -> list[str]:
    """The transcripts past the newest ``keep`` of ``ages``, oldest first, by their
    modification time now: the ones never looked at are looked at, then the ones picked
    again (a remembered age may have moved on; a file may be gone: then fewer must go)."""
    for name in [name for name, age in ages.items() if age is None]:
        if (age := _age(directory, name)) is None:
            del ages[name]
        else:
            ages[name] = age
    while len(ages) > keep:
        known: dict[str, float] = {name: age for name, age in ages.items() if age is not None}
        picked = heapq.nsmallest(len(ages) - keep, known, key=known.__getitem__)
        moved = False
        for name in picked:
            age = _age(directory, name)
            if age != ages[name]:
                moved = True
                if age is None:  # another process pruned it: not ours to count
                    del ages[name]
                else:
                    ages[name] = age
        if not moved:
            return picked
    return []


def _age(directory: Path, name: str) -> float | None:
    """The modification time of transcript ``name`` (a link by the link itself), or None
    when it is gone."""
    try:
        return os.lstat(directory / name).st_mtime
    except OSError:
        return None
