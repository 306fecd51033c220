"""A worktree an earlier turn of a session kept, found again and reopened for the next turn
(:mod:`.worktrees` has the layout)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import anyio

from acp_bridge._os.fs.modes import record_modes
from acp_bridge._os.git.commands import DEFAULT_TIMEOUT
from acp_bridge._os.git.git_dirs import read_small
from acp_bridge._os.git.trees import git_tree
from acp_bridge._os.git.worktrees import (
    BRANCH_PREFIX,
    MAX_RECORD_BYTES,
    RECORD,
    RECORDS,
    TASK_ID,
    WORKTREES,
    Repository,
    Worktree,
    record_folder,
    repository_top,
    worktree_folder,
)
from acp_bridge.errors import ConfigError


async def kept_worktree(
    cwd: Path, task_ids: Sequence[str], *, state_dir: Path, timeout: float = DEFAULT_TIMEOUT
) -> Path | None:
    """The kept worktree of the repository at ``cwd`` for the first of ``task_ids`` that has
    one (a session's runs, newest first); None outside git."""
    top = await repository_top(cwd, timeout)
    if top is None:
        return None
    state = Path(await anyio.Path(state_dir).resolve())
    for task_id in task_ids:
        if not TASK_ID.fullmatch(task_id):
            continue
        path = state / WORKTREES / worktree_folder(top) / task_id
        if path.is_dir() and (state / RECORDS / worktree_folder(top) / task_id / RECORD).is_file():
            return path
    return None


async def reopen_worktree(
    path: Path, cwd: Path, *, state_dir: Path, timeout: float = DEFAULT_TIMEOUT
) -> Worktree:
    """The worktree an earlier turn of the session kept at ``path``, for the next turn: the
    same branch, ``cwd`` (in the caller's repository) mapped into it, and its state now as
    the start this turn's changes are measured from."""
    path = Path(await anyio.Path(path).resolve())
    state = Path(await anyio.Path(state_dir).resolve())
    record = record_folder(state, path)
    data = read_small(record / RECORD, MAX_RECORD_BYTES) if record is not None else None
    try:
        loaded = json.loads(data or b"")
        caller = Repository.from_json(loaded["caller"])
        branch, commit = str(loaded["branch"]), str(loaded["commit"])
    except (ValueError, KeyError, TypeError):
        raise ConfigError(f"{path} is not a worktree the bridge kept") from None
    assert record is not None
    if not branch.startswith(BRANCH_PREFIX) or not await anyio.Path(path).is_dir():
        raise ConfigError(f"{path} is not a worktree the bridge kept")
    cwd = Path(await anyio.Path(cwd).resolve())
    inside = cwd == caller.top or caller.top in cwd.parents
    mapped = path / cwd.relative_to(caller.top) if inside else path
    await anyio.Path(mapped).mkdir(parents=True, exist_ok=True)
    modes = await anyio.to_thread.run_sync(record_modes, caller.git_dirs)
    start = await git_tree(record / "git", path, path, timeout=timeout)
    return Worktree(
        caller, path, branch, commit, mapped, record, start, reopened=True, caller_modes=modes
    )
