"""Transcripts past ``transcripts.keep`` go, oldest first, each with its run's diff.

Every run prunes before it writes its transcript, so past ``keep`` every run deletes one.
What that costs is kept small: a transcript's age (its modification time) is looked at once
and remembered (an age can only move forward: the ones picked to go are looked at again,
and picked again while one of them turned out newer or gone), and a run's prune lists the
folder at most every :data:`RECOUNT_AFTER` seconds per process: in between, the names listed
and the transcripts this process wrote since stand for the folder. A transcript another
process writes meanwhile is counted at the next listing (and that process prunes too).
:func:`prune` without ``recount_after`` lists the folder every time.
"""

from __future__ import annotations

import heapq
import os
import threading
import time
from pathlib import Path

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
