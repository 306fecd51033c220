"""The modes and owners of everything under some folders, recorded, and put back after a run.

Why: Landlock governs what a file holds and which names a folder has — not a file's metadata.
A process it confines can ``chmod`` (and, running as root, ``chown``) any file it can name,
whether or not it may read or write it: the caller's git folder in a worktree run, say, made
0777 for anyone to plant a hook in, or 0 for the caller's git to fail. Bubblewrap's read-only
mounts refuse it. So where the bridge promises a folder comes back as it was (the caller's
repository, docs/explanation/security.md), it records the modes and owners of everything in
it before the run and puts back what changed after.

Only what is still the same file is put back (same device and inode): a file the user's own
git replaced meanwhile (``index``, a ref: written anew and renamed over) is theirs. Links
have no mode of their own on Linux and are left alone.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path

MAX_ENTRIES = 200_000
"""Entries recorded at most (a git folder of that many loose objects is recorded in part)."""

Entry = tuple[int, int, int, int, int]  # device, inode, mode, owner, group


class RecordedModes:
    """What :func:`record_modes` saw: path → (device, inode, mode, owner, group)."""

    __slots__ = ("complete", "entries")

    def __init__(self, entries: dict[str, Entry], complete: bool) -> None:
        self.entries = entries
        self.complete = complete


def record_modes(tops: Sequence[Path], limit: int = MAX_ENTRIES) -> RecordedModes:
    """The modes and owners of ``tops`` and everything below them (links not followed)."""
    entries: dict[str, Entry] = {}
    folders = [str(top) for top in tops]
    for top in folders:
        _record(top, entries)
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as listing:
                for entry in listing:
                    if len(entries) >= limit:
                        return RecordedModes(entries, complete=False)
                    if _record(entry.path, entries) and entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
        except OSError:
            continue
    return RecordedModes(entries, complete=True)


def _record(path: str, entries: dict[str, Entry]) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if stat.S_ISLNK(info.st_mode):
        return False
    entries[path] = (info.st_dev, info.st_ino, info.st_mode, info.st_uid, info.st_gid)
    return True


def restore_modes(recorded: RecordedModes) -> list[str]:
    """Put back the mode and owner of every recorded entry that is still the same file and
    changed; the paths put back. Folders first, shallowest first: what a folder made 0 hid
    is reachable again when its turn comes."""
    restored = []
    for path in sorted(recorded.entries, key=lambda text: text.count("/")):
        device, inode, mode, owner, group = recorded.entries[path]
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if (info.st_dev, info.st_ino) != (device, inode) or stat.S_ISLNK(info.st_mode):
            continue
        changed = False
        if (info.st_uid, info.st_gid) != (owner, group):
            with contextlib.suppress(OSError):  # only root may give a file away
                os.chown(path, owner, group, follow_symlinks=False)
                changed = True
        if stat.S_IMODE(info.st_mode) != stat.S_IMODE(mode):
            with contextlib.suppress(OSError):
                os.chmod(path, stat.S_IMODE(mode))  # noqa: PTH101 (lstat: not a link)
                changed = True
        if changed:
            restored.append(path)
    return restored
