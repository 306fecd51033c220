"""Snapshot mode of change measurement (:mod:`acp_bridge._os.git.changes`): a root's files and
symlinks fingerprinted before and after a run, walked breadth-first, bounded by a file count
and a time budget, small UTF-8 files copied at the start for the diff.

A small root (at most :data:`INLINE_FILES` entries, :data:`INLINE_BYTES` of files) is walked
and judged on the caller's thread: the walk takes less than the hop to a worker thread
would, and a fan-out's runs all wait for the same few threads. Anything bigger is cut off at
once and walked again from the start on a thread, so the inline attempt changes no result.
"""

from __future__ import annotations

import difflib
import math
import os
import stat
import time
from collections import deque
from pathlib import Path

from acp_bridge._os.fs.input_files import read_bytes
from acp_bridge._os.fs.private_files import new_private_file, private_dir
from acp_bridge._os.stoppable import StopToken
from acp_bridge._records.frozen import FrozenRecord

Fingerprint = tuple[int, int, int, int, int]  # mode, size, mtime_ns, ctime_ns, inode
LISTING_FACTOR = 4
"""A folder is listed up to this many times ``max_files`` entries (then sorted and judged
up to ``max_files``): its memory and time are bounded, not its size."""

INLINE_FILES = 64
"""A root with at most this many files is measured inline (see the module docstring)."""
INLINE_BYTES = 16 * 1024
"""... and at most this many bytes in its regular files together ..."""
INLINE_FOLDERS = 16
"""... in at most this many folders (its own included)."""
KEPT_FILE = "a file kept for the snapshot diff"


class ChangeLimits(FrozenRecord):
    """How far change measurement goes."""

    # A frozen record, not a frozen dataclass: a dataclass compiles its generated methods
    # from source when its module loads, on every start-up's path (~4 M instructions).
    max_files: int  # per root, snapshot mode
    max_seconds: float  # per walk, snapshot mode
    keep_bytes: int  # largest file copied for the snapshot diff
    keep_total: int  # all copies of one root together
    git_timeout: float  # each git command
    _compared = __slots__ = ("max_files", "max_seconds", "keep_bytes", "keep_total", "git_timeout")

    def __init__(
        self,
        max_files: int = 50_000,
        max_seconds: float = 5.0,
        keep_bytes: int = 256 * 1024,
        keep_total: int = 8 * 1024 * 1024,
        git_timeout: float = 60.0,
    ) -> None:
        object.__setattr__(self, "max_files", max_files)
        object.__setattr__(self, "max_seconds", max_seconds)
        object.__setattr__(self, "keep_bytes", keep_bytes)
        object.__setattr__(self, "keep_total", keep_total)
        object.__setattr__(self, "git_timeout", git_timeout)


class Snapshot:
    """One write root as a walk saw it: each entry's fingerprint, the copies kept for the
    diff, and whether the walk was cut short."""

    # A plain class: a dataclass compiles its generated methods from source when its module
    # loads, on every start-up's path (~2 M instructions).
    __slots__ = ("complete", "copies", "entries", "root", "seen_dirs", "skip", "truncated")

    def __init__(self, root: Path, skip: frozenset[Path] = frozenset()) -> None:
        self.root = root
        self.skip = skip
        self.entries: dict[Path, Fingerprint] = {}
        self.seen_dirs: set[Path] = set()
        self.complete: set[Path] = set()
        self.truncated = False
        self.copies: dict[Path, Path] = {}


def _fingerprint(path: Path) -> Fingerprint | None:
    try:
        st = path.lstat()
    except OSError:
        return None
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _listing(folder: Path, most: int, stop: StopToken) -> tuple[list[Path], bool]:
    """The entries of ``folder``, sorted: at most ``most`` of them, as many as ``stop``
    allows (a folder of 200 000 new files is not listed whole before the deadline is looked
    at). Whether it was listed in full."""
    entries: list[Path] = []
    with os.scandir(folder) as scan:
        for number, entry in enumerate(scan):
            if len(entries) >= most or (number % 256 == 0 and stop.stopped):
                return sorted(entries), False
            entries.append(Path(entry.path))
    return sorted(entries), True


def walk(
    snap: Snapshot,
    limits: ChangeLimits,
    *,
    into: set[Path] | None,
    keep_in: Path | None,
    stop: StopToken,
    most_folders: float = math.inf,
    most_bytes: float = math.inf,
) -> tuple[dict[Path, Fingerprint], bool]:
    """Breadth-first listing of files and symlinks under ``snap.root``. ``into``: list
    only these directories (the ones listed in full before) and new ones; ``keep_in``:
    copy small text files there. Returns the entries and whether the walk was cut short
    (by the file count, ``most_folders``, ``most_bytes`` of regular files, the time budget
    or ``stop``)."""
    deadline = time.monotonic() + limits.max_seconds
    found: dict[Path, Fingerprint] = {}
    queue = deque([snap.root])
    if into is None:
        snap.seen_dirs.add(snap.root)
    kept = 0
    while queue:
        most_folders -= 1
        if most_folders < 0:
            return found, True  # the rest not listed
        folder = queue.popleft()
        if into is not None and folder in snap.seen_dirs and folder not in into:
            continue  # not fully listed before the run: nothing to compare its listing with
        try:
            entries, whole = _listing(folder, LISTING_FACTOR * limits.max_files, stop)
        except OSError:
            continue
        for path in entries:
            if len(found) >= limits.max_files or time.monotonic() > deadline or stop.stopped:
                return found, True  # `folder` stays incomplete
            if path in snap.skip:
                continue
            print_ = _fingerprint(path)
            if print_ is None:
                continue
            if stat.S_ISDIR(print_[0]):
                if into is None:
                    snap.seen_dirs.add(path)
                queue.append(path)
                continue
            found[path] = print_
            if stat.S_ISREG(print_[0]):
                most_bytes -= print_[1]
                if most_bytes < 0:
                    return found, True  # before reading it: more than this walk may read
            small = stat.S_ISREG(print_[0]) and kept + print_[1] <= limits.keep_total
            if keep_in is not None and small and print_[1] <= limits.keep_bytes:
                kept += print_[1] if _keep(path, keep_in, snap, limits.keep_bytes) else 0
        if not whole:
            return found, True  # listed in part: `folder` stays incomplete
        if into is None:
            snap.complete.add(folder)
    return found, False


def _keep(path: Path, keep_in: Path, snap: Snapshot, limit: int) -> bool:
    try:  # the agent may have swapped in a FIFO or grown the file since it was listed
        data = read_bytes(path, what=KEPT_FILE, limit=limit)
        if b"\0" in data:
            return False
        data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if not snap.copies:  # made on the first copy: most runs keep none (a mkdir is not free)
        private_dir(keep_in)
    copy = keep_in / str(len(snap.copies))
    with os.fdopen(new_private_file(copy), "wb") as file:
        file.write(data)
    snap.copies[path] = copy
    return True


def _text(path: Path, limit: int) -> list[str] | None:
    """The lines of a small text file, as git counts them (at ``\n`` only); None when it
    is binary, not UTF-8, larger than ``limit`` or no longer a regular file."""
    try:
        data = read_bytes(path, what=KEPT_FILE, limit=limit)
        if b"\0" in data:
            return None
        pieces = data.decode("utf-8").split("\n")
    except (OSError, UnicodeDecodeError):
        return None
    lines = [piece + "\n" for piece in pieces[:-1]]
    return [*lines, pieces[-1]] if pieces[-1] else lines


def _diff_one(
    snap: Snapshot, path: Path, *, new: bool, old: bool, limits: ChangeLimits
) -> list[str]:
    """The unified diff of one file, or a line saying it cannot be shown."""
    rel = path.relative_to(snap.root)
    keep = limits.keep_bytes
    before = (_text(snap.copies[path], keep) if path in snap.copies else None) if old else []
    after: list[str] | None = []
    if new:
        print_ = _fingerprint(path)
        small = print_ is not None and stat.S_ISREG(print_[0]) and print_[1] <= limits.keep_bytes
        after = _text(path, keep) if small else None
    if before is None or after is None:
        return [f"Files a/{rel} and b/{rel} differ (binary, large or not kept)\n"]
    a = f"a/{rel}" if old else "/dev/null"
    b = f"b/{rel}" if new else "/dev/null"
    return list(difflib.unified_diff(before, after, a, b))


def measure_snapshot(
    snap: Snapshot, limits: ChangeLimits, stop: StopToken
) -> tuple[list[str], list[str], list[str], bool, list[str]]:
    """Created, modified, deleted, cut short, diff text. Every loop looks at ``stop`` (the
    time budget, the caller's cancel): reading and diffing 50 000 new files takes minutes."""
    after, cut = walk(snap, limits, into=snap.complete, keep_in=None, stop=stop)
    created, modified, deleted, judged_in_part = _changes(snap, after, stop)
    cut |= judged_in_part
    diff: list[str] = []
    for path in [*created, *sorted(modified), *sorted(deleted)]:
        if stop.stopped:
            diff.append("(the diff stops here: the time to measure the run's changes ran out)\n")
            break
        diff += _diff_one(
            snap, path, new=path not in deleted, old=path not in created, limits=limits
        )
    return (
        [str(p) for p in created],
        [str(p) for p in sorted(modified)],
        [str(p) for p in sorted(deleted)],
        cut or snap.truncated,
        diff,
    )


def _changes(
    snap: Snapshot, after: dict[Path, Fingerprint], stop: StopToken
) -> tuple[list[Path], list[Path], list[Path], bool]:
    """Created, modified, deleted since ``snap`` given the listing ``after``; whether
    ``stop`` cut the judging short."""
    created = sorted(p for p in after if p not in snap.entries)
    modified: list[Path] = []
    deleted: list[Path] = []
    for path, before in snap.entries.items():
        if stop.stopped:
            return created, modified, deleted, True  # the rest of the baseline is not judged
        now = after.get(path) if path in after else _fingerprint(path)
        if now is None:
            deleted.append(path)
        elif now != before:
            modified.append(path)
    return created, modified, deleted, False


def _walk_inline(
    snap: Snapshot, limits: ChangeLimits, *, into: set[Path] | None, keep_in: Path | None
) -> tuple[dict[Path, Fingerprint], bool]:
    """:func:`walk` within the bounds of a walk on the event loop."""
    smaller = limits.replaced(
        max_files=min(limits.max_files, INLINE_FILES),
        keep_bytes=min(limits.keep_bytes, INLINE_BYTES),
        keep_total=min(limits.keep_total, INLINE_BYTES),
    )
    return walk(
        snap,
        smaller,
        into=into,
        keep_in=keep_in,
        stop=StopToken(),
        most_folders=INLINE_FOLDERS,
        most_bytes=INLINE_BYTES,
    )


def baseline_if_small(snap: Snapshot, limits: ChangeLimits, keep_in: Path) -> bool:
    """Walk a small root here, as :func:`walk` would on a thread (``into=None``); False
    (``snap`` then half-filled: start again with a fresh one) when it is not small.

    Same result: a walk not cut short under the smaller file count is not cut under the
    real one, and with every regular file together within :data:`INLINE_BYTES` neither the
    smaller ``keep_bytes`` nor ``keep_total`` left out a file the real ones would keep."""
    entries, cut = _walk_inline(snap, limits, into=None, keep_in=keep_in)
    if cut:
        return False
    snap.entries, snap.truncated = entries, False
    return True


def unchanged_if_small(snap: Snapshot, limits: ChangeLimits) -> bool:
    """Whether a small root is seen here to be unchanged since ``snap`` (then
    :func:`measure_snapshot` would say: nothing created, modified or deleted, no diff).
    False also when it is not small or something changed: measure it on a thread."""
    if len(snap.entries) > INLINE_FILES:
        return False
    after, cut = _walk_inline(snap, limits, into=snap.complete, keep_in=None)
    if cut:
        return False
    created, modified, deleted, _ = _changes(snap, after, StopToken())
    return not (created or modified or deleted)
