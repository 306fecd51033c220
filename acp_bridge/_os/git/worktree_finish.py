"""The end of a run's worktree: its changes measured against the turn's start and written as
a diff, then the worktree kept (its ``.git`` written again by the bridge) or removed
(:mod:`.worktrees` has the layout)."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

import anyio

from acp_bridge._os.fs.modes import restore_modes
from acp_bridge._os.fs.private_files import create_private, private_dir
from acp_bridge._os.fs.removal import remove_tree
from acp_bridge._os.git.changes import FilesChanged
from acp_bridge._os.git.commands import DEFAULT_TIMEOUT, GitError, git
from acp_bridge._os.git.git_dirs import (
    branch_tip,
    own_git_env,
    set_branch,
    take_objects,
    write_git_dir,
)
from acp_bridge._os.git.trees import compare_trees, git_tree, write_diff
from acp_bridge._os.git.worktree_removal import remove_worktree
from acp_bridge._os.git.worktrees import Keep, Worktree, WorktreeResult, write_record
from acp_bridge.errors import BridgeError


async def finish_worktree(
    wt: Worktree,
    *,
    scratch: Path,
    keep: Keep = "changed",
    diff: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    measure: bool = True,
) -> WorktreeResult:
    """Measure the run's changes against the turn's start (committed or not, ignored files
    excepted), write the diff to ``diff`` (default ``scratch/worktree.diff``), then keep or
    remove the worktree. Whatever the agent did to it, it is kept or removed: a measurement
    that fails (or ``measure=False``) says so in the notes and counts as a change."""
    notes: list[str] = []
    with contextlib.suppress(OSError):  # made 0700 by the bridge; the agent may lock it
        if stat.S_ISDIR(os.lstat(wt.path).st_mode):
            os.chmod(wt.path, stat.S_IRWXU)  # noqa: PTH101 (lstat: a folder, not a link)
    if wt.caller_modes is not None:
        restored = await anyio.to_thread.run_sync(restore_modes, wt.caller_modes)
        if restored:
            notes.append(
                f"the mode or owner of {len(restored)} entries of the caller's git folder "
                f"changed during the run (the first: {restored[0]}): put back"
            )
    files = FilesChanged()
    measured = False
    if measure:
        try:
            files = await _measure(wt, scratch, diff, timeout)
            measured = True
        except (GitError, OSError) as exc:
            notes.append(f"files changed not measured: {exc}")
    tip = await anyio.to_thread.run_sync(
        branch_tip, wt.path / ".git", wt.branch, wt.caller.object_format
    )
    moved = tip is not None and tip != wt.base  # a commit that changes nothing moved it
    changed = bool(files.paths) or moved or not measured
    kept = keep == "always" or (keep == "changed" and changed)
    if kept:
        notes += await _rewrite_git_dir(wt, tip if moved else None, timeout)
    elif not await anyio.to_thread.run_sync(remove_worktree, wt):
        notes.append(f"worktree {wt.path} not removed entirely")
    return WorktreeResult(wt.branch, wt.path, kept, changed, files, tuple(notes))


async def _measure(wt: Worktree, scratch: Path, diff: Path | None, timeout: float) -> FilesChanged:
    private_dir(scratch)
    target = diff or scratch / "worktree.diff"
    os.close(create_private(target))  # git writes it: private, and never through a link
    now = await git_tree(wt.git_dir, wt.path, wt.path, timeout=timeout)
    created, modified, deleted = await compare_trees(
        wt.git_dir, wt.path, wt.path, wt.start_tree, now, timeout=timeout
    )
    await write_diff(wt.git_dir, wt.path, wt.path, wt.start_tree, now, target, timeout=timeout)
    has_diff = await anyio.Path(target).exists() and (await anyio.Path(target).stat()).st_size > 0
    return FilesChanged(
        tuple(sorted(created)),
        tuple(sorted(modified)),
        tuple(sorted(deleted)),
        diff=target if has_diff else None,
    )


async def _rewrite_git_dir(wt: Worktree, tip: str | None, timeout: float) -> list[str]:
    """The kept worktree's ``.git`` written again by the bridge (see :mod:`.worktrees`):
    the agent's set aside, a new one on the branch at the turn's start, the agent's objects
    moved in, and the branch moved to ``tip`` (the agent's commit) if git finds it whole."""
    notes: list[str] = []
    git_dir = wt.path / ".git"
    aside = wt.record / "agent-git"
    try:
        await anyio.to_thread.run_sync(_set_aside, git_dir, aside)
        write_git_dir(
            git_dir, borrow=[wt.caller.objects], object_format=wt.caller.object_format,
            head=wt.branch, commit=wt.base, files=wt.caller.files(),
        )  # fmt: skip
        env = own_git_env(git_dir, wt.path)
        commit = wt.base
        if tip is not None:
            fmt = wt.caller.object_format
            await anyio.to_thread.run_sync(
                take_objects, aside / "objects", git_dir / "objects", fmt
            )
            whole = await git(
                "rev-list", "--objects", "--quiet", tip, "--not", wt.base,
                cwd=wt.path, env=env, timeout=timeout, check=False,
            )  # fmt: skip
            if whole.returncode == 0:
                set_branch(git_dir, wt.branch, tip)
                commit = tip
            else:
                why = whole.stderr.strip().splitlines()[-1:] or ["not whole"]
                notes.append(
                    f"the agent's commit {tip[:12]} on {wt.branch} was not kept ({why[0]}): "
                    "the branch stays where the turn began"
                )
        await git("read-tree", "HEAD", cwd=wt.path, env=env, timeout=timeout)
        await git("update-index", "-q", "--refresh", cwd=wt.path, env=env, timeout=timeout,
                  check=False)  # fmt: skip
        wt.base = commit
        write_record(wt)
    except (BridgeError, OSError) as exc:
        notes.append(f"the kept worktree's .git could not be written again: {exc}")
    finally:
        await anyio.to_thread.run_sync(remove_tree, aside)
    return notes


def _set_aside(git_dir: Path, aside: Path) -> None:
    """Move whatever is at ``git_dir`` (a folder, a file, a link: never followed) to
    ``aside``, out of the agent's reach."""
    remove_tree(aside)
    private_dir(aside.parent)
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(os.lstat(git_dir).st_mode):
            # Moving a folder rewrites its "..": it must be writable (the agent may have
            # made it 0; its processes have ended).
            os.chmod(git_dir, stat.S_IRWXU)  # noqa: PTH101 (lstat: a folder, not a link)
        os.rename(git_dir, aside)  # noqa: PTH104 (a link moved, not followed)
