"""The state of a work tree as one git tree object, and what changed between two of them.

Always through a git directory of the bridge's own (:mod:`.git_dirs`): ``git add -A`` into
its index, the new blobs into its object folder, then ``write-tree``; the work tree is read
as files only — its own ``.git``, configuration, attribute drivers and hooks are nothing to
these commands. The user's index, objects and refs are never written.

Which objects are read: the git directory's own, and the object folders it borrows
(``objects/info/alternates``) — only ever folders no run can write (the caller's in a
worktree run). A repository's object folder the run *can* write (a run without a worktree,
in its repository) is named for the text diff alone (``diff_objects``), to read what a
changed file held before: what the run does to it — a FIFO for git to block on, alternates
pointing elsewhere — can delay or spoil that text (git's time is bounded), never the list of
files changed, which needs trees only, all written to the bridge's own folder.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from acp_bridge._os.git.commands import git
from acp_bridge._os.git.git_dirs import own_git_env


async def git_tree(git_dir: Path, work_tree: Path, root: Path, *, timeout: float) -> str:
    """The tree object of ``work_tree`` now (tracked and untracked files, not ignored ones;
    below ``root`` only) through ``git_dir``, whose index is where the last look left it
    (only files whose stat changed since are hashed again)."""
    env = own_git_env(git_dir, work_tree)
    await git(
        "add", "-A", "--ignore-errors", "--", ".", cwd=root, env=env, timeout=timeout, check=False
    )  # unreadable files are skipped (and not reported), not fatal
    # --missing-ok: files unchanged since the index was made name blobs of the repository
    # that are not borrowed (see the module docstring); their trees are written all the same.
    return (await git("write-tree", "--missing-ok", cwd=root, env=env, timeout=timeout)).text


async def compare_trees(
    git_dir: Path, work_tree: Path, root: Path, old: str, new: str, *, timeout: float
) -> tuple[list[str], list[str], list[str]]:
    """Created, modified, deleted paths (absolute) below ``root`` of ``work_tree`` between
    two trees (trees only are read: see the module docstring)."""
    env = own_git_env(git_dir, work_tree)
    names = await git(
        "diff", "--no-renames", "--name-status", "-z", old, new, "--", ".",
        cwd=root, env=env, timeout=timeout,
    )  # fmt: skip
    fields = names.stdout.decode("utf-8", "surrogateescape").split("\0")
    created: list[str] = []
    modified: list[str] = []
    deleted: list[str] = []
    for status, path in zip(fields[0::2], fields[1::2], strict=False):
        target = {"A": created, "D": deleted}.get(status[:1], modified)
        target.append(str(work_tree / path))
    return created, modified, deleted


async def write_diff(
    git_dir: Path,
    work_tree: Path,
    root: Path,
    old: str,
    new: str,
    diff: Path,
    *,
    timeout: float,
    diff_objects: Sequence[Path] = (),
) -> None:
    """The text diff of two trees (below ``root``) written to ``diff``, with the object
    folders ``diff_objects`` borrowed for it (see the module docstring)."""
    env = own_git_env(git_dir, work_tree)
    if diff_objects:
        env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = os.pathsep.join(map(str, diff_objects))
    await git(
        "diff", "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv",
        f"--output={diff}", old, new, "--", ".",
        cwd=root, env=env, timeout=timeout,
    )  # fmt: skip
