"""Removing worktrees and their records: one at the end of its run, those whose worktree a
person removed, and whatever a session's runs left (:mod:`.worktrees` has the layout)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

import anyio

from acp_bridge._os.fs.removal import remove_tree
from acp_bridge._os.git.commands import DEFAULT_TIMEOUT
from acp_bridge._os.git.worktrees import (
    RECORDS,
    TASK_ID,
    WORKTREES,
    Worktree,
    repository_top,
    worktree_folder,
)


def prune_records(worktrees: Path, records: Path) -> None:
    """Remove the records of a repository's worktrees that are gone (a person removed a kept
    one). A worktree's folder is made before its record and removed before it, so a run
    under way never loses its record here."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(records):
            if not os.path.lexists(worktrees / entry.name):
                remove_tree(Path(entry.path))


def remove_worktree(wt: Worktree) -> bool:
    """Remove the worktree, then its record (see :func:`prune_records`)."""
    gone = remove_tree(wt.path)
    return remove_tree(wt.record) and gone


async def discard_worktrees(
    cwd: Path, task_ids: Sequence[str], *, state_dir: Path, timeout: float = DEFAULT_TIMEOUT
) -> list[str]:
    """Remove whatever runs ``task_ids`` left of the repository at ``cwd``: their worktrees
    and records (kept on purpose, or left by a run that could not finish). What could not
    be removed is said in the notes returned."""
    top = await repository_top(cwd, timeout)
    if top is None:
        return []
    state = Path(await anyio.Path(state_dir).resolve())
    notes: list[str] = []
    for task_id in task_ids:
        if not TASK_ID.fullmatch(task_id):
            continue
        path = state / WORKTREES / worktree_folder(top) / task_id
        record = state / RECORDS / worktree_folder(top) / task_id
        for where in (path, record):
            if not await anyio.to_thread.run_sync(remove_tree, where):
                notes.append(f"{where} not removed entirely")
    return notes
