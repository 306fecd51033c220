"""``isolation: worktree``: each run works in a fresh git worktree on its own branch, so
parallel runs on one repository never touch each other's files (issue 11).

The worktree starts from the repository's ``HEAD`` commit: uncommitted changes in the
caller's working tree are *not* carried over (the run works on what is committed). It
lives under the bridge's state directory, on branch ``acp-bridge/<task_id>``; the caller's
cwd is mapped to the same relative place inside it. At the end the run's changes —
committed or not — are measured against the start commit and written as a diff; an
unchanged worktree is removed with its branch, a changed one kept (configurable). A later
turn of the same session that its agent resumes goes on in the kept worktree
(:func:`reopen_worktree`), its changes measured from where that turn began.

Concurrency: runs on one repository race for git's lock files (``packed-refs.lock``,
``config.lock``); :func:`acp_bridge._os.git.commands.git` retries those with a bounded backoff.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Literal

import anyio

from acp_bridge._os.fs.private_files import create_private, private_dir
from acp_bridge._os.git.changes import FilesChanged
from acp_bridge._os.git.commands import DEFAULT_TIMEOUT, GitError, compare_trees, git, git_tree
from acp_bridge.errors import ConfigError

BRANCH_PREFIX = "acp-bridge/"
Keep = Literal["changed", "always", "never"]
_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


# Plain classes: a dataclass compiles its generated methods from source when its module
# loads, on every start-up's path (~4 M instructions a class frozen with slots).
class Worktree:
    """A run's git worktree."""

    __slots__ = ("admin_dir", "base", "branch", "common_dir", "cwd", "path", "repo", "start_tree")

    def __init__(
        self,
        repo: Path,
        path: Path,
        branch: str,
        base: str,
        cwd: Path,
        common_dir: Path,
        admin_dir: Path,
        start_tree: str | None = None,
    ) -> None:
        self.repo = repo  # top of the caller's working tree
        self.path = path  # the run's worktree
        self.branch = branch
        self.base = base  # the commit it started from
        self.cwd = cwd  # the caller's cwd, mapped into the worktree
        self.common_dir = common_dir  # the repository's shared .git directory
        self.admin_dir = admin_dir  # .git/worktrees/<name>: this worktree's HEAD, index, logs
        self.start_tree = start_tree
        """A worktree an earlier turn kept (:func:`reopen_worktree`): its state when this
        turn began, committed or not, which this turn's changes are measured against."""

    def sandbox_write_paths(self) -> tuple[Path, ...]:
        """What git inside the sandbox must write so the agent can commit on its branch:
        the worktree, its admin dir, new objects, its branch ref and reflog. Not the
        rest of ``.git`` (hooks and config stay read-only)."""
        common = self.common_dir
        candidates = (
            self.path,
            self.admin_dir,
            common / "objects",
            common / "refs" / "heads" / "acp-bridge",
            common / "logs" / "refs" / "heads" / "acp-bridge",
        )
        return tuple(p for p in candidates if p.exists())

    def sandbox_read_paths(self) -> tuple[Path, ...]:
        """What git inside the sandbox must read: the shared ``.git`` (config, refs,
        objects), wherever the repository lives (under ``/tmp``, say)."""
        return (self.common_dir,)


class WorktreeResult:
    """What became of a run's worktree: kept or removed, changed or not, and its changes."""

    __slots__ = ("branch", "changed", "files", "kept", "notes", "path")

    def __init__(
        self,
        branch: str,
        path: Path,
        kept: bool,
        changed: bool,
        files: FilesChanged,
        notes: tuple[str, ...] = (),
    ) -> None:
        self.branch = branch
        self.path = path
        self.kept = kept
        self.changed = changed
        self.files = files
        self.notes = notes

    def meta(self) -> dict[str, object]:
        return {
            "branch": self.branch if self.kept else "",
            "worktree": str(self.path) if self.kept else "",
            "diff": str(self.files.diff) if self.files.diff else "",
            "kept": self.kept,
        }


async def create_worktree(
    cwd: Path, task_id: str, *, state_dir: Path, timeout: float = DEFAULT_TIMEOUT
) -> Worktree:
    """A fresh worktree on ``acp-bridge/<task_id>`` for a run whose cwd is ``cwd``."""
    if not _TASK_ID.fullmatch(task_id) or task_id.endswith(".lock") or ".." in task_id:
        raise ConfigError(f"isolation worktree: task id {task_id!r} cannot name a branch")
    cwd = Path(await anyio.Path(cwd).resolve())
    found = await git(
        "rev-parse", "--show-toplevel", "--git-common-dir", cwd=cwd, timeout=timeout, check=False
    )
    if found.returncode != 0:
        raise ConfigError(f"isolation worktree: {cwd} is not inside a git work tree")
    top_text, common_text = found.text.splitlines()
    top = Path(await anyio.Path(top_text).resolve())
    common = Path(await anyio.Path(cwd / common_text).resolve())
    head = await git(
        "rev-parse", "--verify", "-q", "HEAD^{commit}", cwd=top, timeout=timeout, check=False
    )
    if head.returncode != 0:
        raise ConfigError(f"isolation worktree: {top} has no commit to start from")
    digest = hashlib.sha256(str(top).encode()).hexdigest()[:8]
    # Checked before it is resolved: a link to nowhere is refused, its target never made.
    private_dir(state_dir, top=state_dir)
    state = Path(await anyio.Path(state_dir).resolve())
    path = state / "worktrees" / f"{top.name}-{digest}" / task_id
    private_dir(path.parent, top=state)
    branch = BRANCH_PREFIX + task_id
    # The branch first, then the worktree on it: each step alone is safe to retry (git's
    # retried errors include a concurrent `worktree add` seen half-way), unlike `add -b`,
    # which may have made the branch before it failed.
    await git("branch", branch, head.text, cwd=top, timeout=timeout)
    await git("worktree", "add", "--quiet", str(path), branch, cwd=top, timeout=timeout)
    path.chmod(0o700)  # a checkout of the project, in the bridge's private folder
    admin = await git("rev-parse", "--absolute-git-dir", cwd=path, timeout=timeout)
    mapped = path / cwd.relative_to(top)
    await anyio.Path(mapped).mkdir(parents=True, exist_ok=True)  # an untracked cwd
    return Worktree(top, path, branch, head.text, mapped, common, Path(admin.text))


async def kept_worktree(
    cwd: Path, task_ids: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT
) -> Path | None:
    """The worktree of the repository at ``cwd`` on branch ``acp-bridge/<id>`` for the first
    of ``task_ids`` that has one (a session's runs, newest first); None outside git."""
    by_branch = await _worktrees_by_branch(cwd, timeout)
    return next((by_branch[b] for t in task_ids if (b := BRANCH_PREFIX + t) in by_branch), None)


async def _worktrees_by_branch(cwd: Path, timeout: float) -> dict[str, Path]:
    """Branch → its worktree, for the repository at ``cwd`` (empty outside git)."""
    listed = await git("worktree", "list", "--porcelain", cwd=cwd, timeout=timeout, check=False)
    by_branch: dict[str, Path] = {}
    path: Path | None = None
    for line in listed.text.splitlines() if listed.returncode == 0 else ():
        if line.startswith("worktree "):
            path = Path(line.removeprefix("worktree "))
        elif line.startswith("branch refs/heads/") and path is not None:
            by_branch[line.removeprefix("branch refs/heads/")] = path
    return by_branch


async def reopen_worktree(
    path: Path, cwd: Path, *, scratch: Path, timeout: float = DEFAULT_TIMEOUT
) -> Worktree:
    """The worktree an earlier turn of the session kept at ``path``, for the next turn: the
    same branch, ``cwd`` (in the caller's repository) mapped into it, and its state now as
    the start this turn's changes are measured from (``finish_worktree`` in ``scratch``)."""
    path = Path(await anyio.Path(path).resolve())
    found = await git(
        "rev-parse", "--abbrev-ref", "HEAD", "--git-common-dir", "--absolute-git-dir",
        cwd=path, timeout=timeout, check=False,
    )  # fmt: skip
    lines = found.text.splitlines()
    if found.returncode != 0 or len(lines) != 3 or not lines[0].startswith(BRANCH_PREFIX):
        raise ConfigError(f"{path} is not a worktree on an {BRANCH_PREFIX}… branch any more")
    branch, common_text, admin_text = lines
    common = Path(await anyio.Path(path / common_text).resolve())
    top = await git("rev-parse", "--show-toplevel", cwd=cwd, timeout=timeout, check=False)
    repo = Path(await anyio.Path(top.text).resolve()) if top.returncode == 0 else common.parent
    cwd = Path(await anyio.Path(cwd).resolve())
    inside = cwd == repo or repo in cwd.parents
    mapped = path / cwd.relative_to(repo) if inside else path
    await anyio.Path(mapped).mkdir(parents=True, exist_ok=True)
    head = (await git("rev-parse", "HEAD", cwd=path, timeout=timeout)).text
    private_dir(scratch)
    index = Path((await git("rev-parse", "--git-path", "index", cwd=path)).text)
    start = await git_tree(path, scratch, timeout=timeout, index=path / index)
    return Worktree(repo, path, branch, head, mapped, common, Path(admin_text), start)


async def finish_worktree(
    wt: Worktree,
    *,
    scratch: Path,
    keep: Keep = "changed",
    diff: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> WorktreeResult:
    """Measure the run's changes against the start commit (committed or not, ignored
    files excepted), write the diff to ``diff`` (default ``scratch/worktree.diff``), then
    keep or remove the worktree and its branch."""
    private_dir(scratch)
    target = diff or scratch / "worktree.diff"
    os.close(create_private(target))  # git writes it: private, and never through a link
    index = Path((await git("rev-parse", "--git-path", "index", cwd=wt.path)).text)
    now = await git_tree(wt.path, scratch, timeout=timeout, index=wt.path / index)
    start = (
        wt.start_tree
        or (await git("rev-parse", f"{wt.base}^{{tree}}", cwd=wt.path, timeout=timeout)).text
    )
    head = (await git("rev-parse", "HEAD", cwd=wt.path, timeout=timeout)).text
    created, modified, deleted = await compare_trees(
        wt.path, wt.path, scratch, start, now, timeout=timeout, diff=target
    )
    # A commit that changes nothing (or is reverted later) still moved the branch.
    changed = bool(created or modified or deleted) or head != wt.base
    has_diff = await anyio.Path(target).exists() and (await anyio.Path(target).stat()).st_size > 0
    files = FilesChanged(
        tuple(sorted(created)),
        tuple(sorted(modified)),
        tuple(sorted(deleted)),
        diff=target if has_diff else None,
    )
    kept = keep == "always" or (keep == "changed" and changed)
    notes: list[str] = []
    if not kept:
        notes += await _remove(wt, timeout)
    return WorktreeResult(wt.branch, wt.path, kept, changed, files, tuple(notes))


async def _remove(wt: Worktree, timeout: float) -> list[str]:
    notes = []
    try:
        await git("worktree", "remove", "--force", str(wt.path), cwd=wt.repo, timeout=timeout)
    except GitError as exc:
        notes.append(f"worktree not removed: {exc}")
        await anyio.to_thread.run_sync(partial(shutil.rmtree, wt.path, ignore_errors=True))
        await git("worktree", "prune", cwd=wt.repo, timeout=timeout, check=False)
    try:
        await git("branch", "-D", "--quiet", wt.branch, cwd=wt.repo, timeout=timeout)
    except GitError as exc:
        notes.append(f"branch not deleted: {exc}")
    return notes


async def discard_worktrees(
    cwd: Path, task_ids: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT
) -> list[str]:
    """Remove whatever runs ``task_ids`` left in the repository at ``cwd``: their worktrees
    and their branches ``acp-bridge/<id>`` (kept on purpose, or left by a run that could not
    finish). What could not be removed is said in the notes returned."""
    branches = {BRANCH_PREFIX + task_id for task_id in task_ids}
    notes: list[str] = []
    for branch, path in (await _worktrees_by_branch(cwd, timeout)).items():
        if branch not in branches:
            continue
        gone = await git(
            "worktree", "remove", "--force", str(path), cwd=cwd, timeout=timeout, check=False
        )
        if gone.returncode != 0:
            notes.append(f"worktree {path} not removed: {gone.stderr.strip()}")
    await git("worktree", "prune", cwd=cwd, timeout=timeout, check=False)
    heads = await git(
        "for-each-ref", "--format=%(refname:short)", "refs/heads/" + BRANCH_PREFIX,
        cwd=cwd, timeout=timeout, check=False,
    )  # fmt: skip
    left = [name for name in heads.text.splitlines() if name in branches]
    if left:
        deleted = await git("branch", "-D", "--quiet", *left, cwd=cwd, timeout=timeout, check=False)
        if deleted.returncode != 0:
            notes.append(f"branches not deleted: {deleted.stderr.strip()}")
    return notes
