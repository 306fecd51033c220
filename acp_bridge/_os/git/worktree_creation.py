"""A run's fresh worktree, and a batch task's checkout: each a repository of its own that
borrows the caller's objects (:mod:`.worktrees` has the layout)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from acp_bridge._os.fs.modes import RecordedModes, record_modes
from acp_bridge._os.fs.paths import resolved
from acp_bridge._os.fs.private_files import private_dir, write_private
from acp_bridge._os.git.commands import DEFAULT_TIMEOUT, GitError, git
from acp_bridge._os.git.git_dirs import own_git_env, write_git_dir
from acp_bridge._os.git.worktree_removal import prune_records, remove_worktree
from acp_bridge._os.git.worktrees import (
    BRANCH_PREFIX,
    RECORDS,
    TASK_ID,
    WORKTREES,
    Repository,
    Worktree,
    worktree_folder,
    write_record,
)
from acp_bridge.errors import ConfigError

_CALLER = (
    "--show-toplevel", "--absolute-git-dir", "--git-common-dir", "--git-path", "objects",
    "--git-path", "info/exclude", "--git-path", "shallow", "--show-object-format",
)  # fmt: skip


async def caller_repository(
    cwd: Path, start: str = "HEAD", *, timeout: float = DEFAULT_TIMEOUT, what: str
) -> tuple[Repository, str, str]:
    """The repository ``cwd`` is in, and the commit ``start`` names there and its tree;
    :class:`ConfigError` (beginning with ``what``) when there is none."""
    if start.startswith("-"):
        raise ConfigError(f"{what}: {start!r} is not a commit")
    found = await git(
        "rev-parse", *_CALLER, f"{start}^{{commit}}", f"{start}^{{tree}}",
        cwd=cwd, timeout=timeout, check=False,
    )  # fmt: skip
    lines = found.text.splitlines()
    if len(lines) < 7:
        raise ConfigError(f"{what}: {cwd} is not inside a git work tree")
    top = Path(await anyio.Path(lines[0]).resolve())
    if found.returncode != 0 or len(lines) != 9:
        if start == "HEAD":
            raise ConfigError(f"{what}: {top} has no commit to start from")
        raise ConfigError(f"{what}: {start!r} is not a commit of {top}")
    git_dir, common, objects, exclude, shallow = (resolved(cwd / text) for text in lines[1:6])
    dirs = (git_dir,) if common == git_dir else (git_dir, common)
    return Repository(top, dirs, objects, exclude, shallow, lines[6]), lines[7], lines[8]


async def create_worktree(
    cwd: Path,
    task_id: str,
    *,
    state_dir: Path,
    start: str = "HEAD",
    timeout: float = DEFAULT_TIMEOUT,
) -> Worktree:
    """A fresh worktree on ``acp-bridge/<task_id>`` at ``start`` (default: ``HEAD``) for a
    run whose cwd is ``cwd``."""
    if not TASK_ID.fullmatch(task_id) or task_id.endswith(".lock") or ".." in task_id:
        raise ConfigError(f"isolation worktree: task id {task_id!r} cannot name a branch")
    cwd = Path(await anyio.Path(cwd).resolve())
    caller, base, tree = await caller_repository(
        cwd, start, timeout=timeout, what="isolation worktree"
    )
    modes = await anyio.to_thread.run_sync(record_modes, caller.git_dirs)
    # Checked before it is resolved: a link to nowhere is refused, its target never made.
    private_dir(state_dir, top=state_dir)
    state = Path(await anyio.Path(state_dir).resolve())
    folder = worktree_folder(caller.top)
    path = state / WORKTREES / folder / task_id
    record = state / RECORDS / folder / task_id
    private_dir(path.parent, top=state)
    private_dir(record.parent, top=state)
    await anyio.to_thread.run_sync(prune_records, path.parent, record.parent)
    try:
        path.mkdir(mode=0o700)  # first (see prune_records); never an old one reused
    except FileExistsError:
        raise ConfigError(
            f"isolation worktree: a worktree for task {task_id} is there already: {path}"
        ) from None
    branch = BRANCH_PREFIX + task_id
    mapped = path / cwd.relative_to(caller.top)
    wt = Worktree(caller, path, branch, base, mapped, record, tree, caller_modes=modes)
    try:
        private_dir(path)  # 0700 whatever the umask: a checkout of the project
        files = caller.files()
        write_git_dir(
            wt.git_dir, borrow=[caller.objects], object_format=caller.object_format,
            head="measured", files=files,
        )  # fmt: skip
        agent_git = path / ".git"
        write_git_dir(
            agent_git, borrow=[caller.objects], object_format=caller.object_format,
            head=branch, commit=base, files=files,
        )  # fmt: skip
        # The checkout, through the agent's .git: written a moment ago by the bridge, with
        # nothing of any agent's in it yet. Its index is the bridge's start, too.
        await git("read-tree", "--reset", "-u", base, cwd=path, env=own_git_env(agent_git, path),
                  timeout=timeout)  # fmt: skip
        await anyio.to_thread.run_sync(_copy_file, agent_git / "index", wt.git_dir / "index")
        write_record(wt)
        await anyio.Path(wt.cwd).mkdir(parents=True, exist_ok=True)  # an untracked cwd
    except BaseException:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(remove_worktree, wt)
        raise
    return wt


def _copy_file(source: Path, target: Path) -> None:
    with os.fdopen(os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb") as src:
        data = src.read()
    write_private(target, data)


async def check_out(
    repo: Path, ref: str, path: Path, *, timeout: float = DEFAULT_TIMEOUT
) -> RecordedModes:
    """``path`` (made here) a checkout of ``ref`` of the repository at ``repo`` (a work
    tree or a bare repository), detached, in a repository of its own that borrows the
    objects of ``repo``: a batch task's ``git`` workspace. Nothing is written to ``repo``;
    removing ``path`` removes all of it. Returns the modes and owners in the git folders of
    ``repo`` now, to put back after the task (:mod:`acp_bridge._os.fs.modes`)."""
    if ref.startswith("-"):
        raise ConfigError(f"{ref!r} is not a commit")
    found = await git(
        "rev-parse", "--absolute-git-dir", "--git-common-dir", "--git-path", "objects",
        "--git-path", "info/exclude", "--git-path", "shallow", "--show-object-format",
        f"{ref}^{{commit}}", cwd=repo, timeout=timeout, check=False,
    )  # fmt: skip
    lines = found.text.splitlines()
    if found.returncode != 0 or len(lines) != 7:
        raise GitError(f"{ref!r} is not a commit of {repo}")
    git_dirs = tuple(dict.fromkeys(resolved(repo / text) for text in lines[:2]))
    objects, exclude, shallow = (resolved(repo / text) for text in lines[2:5])
    caller = Repository(repo, git_dirs, objects, exclude, shallow, lines[5])
    modes = await anyio.to_thread.run_sync(record_modes, git_dirs)
    await anyio.Path(path).mkdir(mode=0o700)
    git_dir = path / ".git"
    write_git_dir(
        git_dir, borrow=[objects], object_format=lines[5], head="main", commit=lines[6],
        detached=True, files=caller.files(),
    )  # fmt: skip
    await git("read-tree", "--reset", "-u", "HEAD", cwd=path, env=own_git_env(git_dir, path),
              timeout=timeout)  # fmt: skip
    return modes
