"""``isolation: worktree``: each run works in a fresh checkout of the caller's repository, on
its own branch, in a repository of its own — parallel runs on one repository never touch
each other's files (issue 11), and no run touches the caller's repository (issue 37).

The checkout starts from the repository's ``HEAD`` commit: uncommitted changes in the
caller's working tree are *not* carried over (the run works on what is committed). Under
the bridge's state directory, per repository (``<name>-<digest of its path>``):

- ``worktrees/<repo>/<task_id>/`` — the worktree, the agent's write root: the checkout and
  ``.git``, a repository of the agent's own on branch ``acp-bridge/<task_id>``, whose
  objects are the caller's, borrowed read-only (``objects/info/alternates``). The agent may
  ``git status``, ``diff`` and commit there; what it commits stays there;
- ``worktree-records/<repo>/<task_id>/`` — the bridge's, hidden from the sandbox like the
  rest of its state: ``worktree.json`` (the caller's repository, the branch and the commit
  the bridge last gave it) and ``git/``, the git directory through which every git command
  of the bridge reads the worktree (:mod:`.git_dirs`: never the agent's ``.git``).

The caller's repository is only read — where it is, its ``HEAD``, its objects — and never
written: no branch, no worktree entry, no object, no lock file. At the end the run's
changes, committed or not, are measured against where the turn started and written as a
diff; an unchanged worktree is removed (both folders, whatever the agent left in them), a
changed one kept (configurable). A kept worktree's ``.git`` is written again by the bridge
— its configuration, ``HEAD``, branch and alternates the bridge's, the agent's commits
kept when git finds them whole — so a person can use it as any repository; the agent's own
``.git`` goes. A later turn of the same session that its agent resumes goes on in the kept
worktree (:func:`.worktree_reopening.reopen_worktree`), its changes measured from where that turn
began.

This module holds the types and the layout on disk; :mod:`.worktree_creation` makes a
worktree, :mod:`.worktree_reopening` finds and reopens a kept one, :mod:`.worktree_finish`
measures and keeps or removes it, :mod:`.worktree_removal` removes what runs left.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Literal

import anyio

from acp_bridge._os.fs.modes import RecordedModes
from acp_bridge._os.fs.private_files import write_private
from acp_bridge._os.git.changes import FilesChanged
from acp_bridge._os.git.commands import git
from acp_bridge._os.git.git_dirs import own_git_env, read_small

BRANCH_PREFIX = "acp-bridge/"
Keep = Literal["changed", "always", "never"]
TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
WORKTREES = "worktrees"
RECORDS = "worktree-records"
RECORD = "worktree.json"
MAX_RECORD_BYTES = 64 << 10
MAX_INFO_BYTES = 4 << 20
"""The largest ``info/exclude`` and ``shallow`` of the caller's repository copied into a
worktree's (a bigger one is left out: ignored files then show as untracked)."""
_CALLER = (
    "--show-toplevel", "--absolute-git-dir", "--git-common-dir", "--git-path", "objects",
    "--git-path", "info/exclude", "--git-path", "shallow", "--show-object-format",
)  # fmt: skip


# Plain classes: a dataclass compiles its generated methods from source when its module
# loads, on every start-up's path (~4 M instructions a class frozen with slots).
class Repository:
    """What the bridge knows of the caller's repository (read before any agent runs)."""

    __slots__ = ("exclude", "git_dirs", "object_format", "objects", "shallow", "top")

    def __init__(
        self,
        top: Path,
        git_dirs: tuple[Path, ...],
        objects: Path,
        exclude: Path,
        shallow: Path,
        object_format: str,
    ) -> None:
        self.top = top  # the top of the caller's working tree
        self.git_dirs = git_dirs  # its git directory, and the common one if it differs
        self.objects = objects
        self.exclude = exclude  # info/exclude
        self.shallow = shallow  # a shallow clone's boundary commits
        self.object_format = object_format

    def files(self) -> dict[str, bytes]:
        """What a worktree's git directories copy of it: ``info/exclude`` (its ignored
        files stay ignored) and ``shallow`` (history ends where the caller's does)."""
        out = {"info/exclude": read_small(self.exclude, MAX_INFO_BYTES) or b""}
        shallow = read_small(self.shallow, MAX_INFO_BYTES)
        if shallow is not None:
            out["shallow"] = shallow
        return out

    def as_json(self) -> dict[str, object]:
        return {
            "top": str(self.top),
            "git_dirs": [str(p) for p in self.git_dirs],
            "objects": str(self.objects),
            "exclude": str(self.exclude),
            "shallow": str(self.shallow),
            "object_format": self.object_format,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Repository:
        dirs = data["git_dirs"]
        if not isinstance(dirs, list):
            raise TypeError("git_dirs")
        return cls(
            Path(str(data["top"])),
            tuple(Path(str(p)) for p in dirs),
            Path(str(data["objects"])),
            Path(str(data["exclude"])),
            Path(str(data["shallow"])),
            str(data["object_format"]),
        )


class Worktree:
    """A run's worktree."""

    __slots__ = (
        "base", "branch", "caller", "caller_modes", "cwd", "path", "record", "reopened", "repo",
        "start_tree",
    )  # fmt: skip

    def __init__(
        self,
        caller: Repository,
        path: Path,
        branch: str,
        base: str,
        cwd: Path,
        record: Path,
        start_tree: str,
        *,
        reopened: bool = False,
        caller_modes: RecordedModes | None = None,
    ) -> None:
        self.caller = caller
        self.repo = caller.top  # top of the caller's working tree
        self.path = path  # the run's worktree
        self.branch = branch
        self.base = base  # the commit of the branch when this turn began
        self.cwd = cwd  # the caller's cwd, mapped into the worktree
        self.record = record  # the bridge's own folder for it (worktree-records/…)
        self.start_tree = start_tree
        """Its state when this turn began, committed or not: what the turn's changes are
        measured against."""
        self.reopened = reopened
        """A worktree an earlier turn kept (:func:`reopen_worktree`)."""
        self.caller_modes = caller_modes
        """The modes and owners in the caller's git folders when the turn began, put back at
        its end (:mod:`acp_bridge._os.fs.modes`: Landlock lets an agent change them)."""

    @property
    def git_dir(self) -> Path:
        """The bridge's git directory for the worktree (see the module docstring)."""
        return self.record / "git"

    def git_env(self) -> dict[str, str]:
        """The environment of a bridge's git command on the worktree."""
        return own_git_env(self.git_dir, self.path)

    def sandbox_write_paths(self) -> tuple[Path, ...]:
        """What the agent may write: its worktree, its own ``.git`` included. Nothing of
        the caller's repository."""
        return (self.path,)

    def sandbox_read_paths(self) -> tuple[Path, ...]:
        """What git inside the sandbox must read: the caller's git directories (the objects
        the worktree borrows), wherever the repository lives (under ``/tmp``, say)."""
        return self.caller.git_dirs


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


# --- where the worktrees and their records are --------------------------------------------


def worktree_folder(top: Path) -> str:
    """The folder of a repository's worktrees (and records): its name and a digest."""
    return f"{top.name}-{hashlib.sha256(str(top).encode()).hexdigest()[:8]}"


def record_folder(state: Path, path: Path) -> Path | None:
    """The record folder of the worktree at ``path``, if ``path`` is where the bridge puts
    worktrees (``state/worktrees/<repo>/<task_id>``)."""
    try:
        repo, task_id = path.relative_to(state / WORKTREES).parts
    except ValueError:
        return None
    return state / RECORDS / repo / task_id if TASK_ID.fullmatch(task_id) else None


def write_record(wt: Worktree) -> None:
    data = {"caller": wt.caller.as_json(), "branch": wt.branch, "commit": wt.base}
    write_private(wt.record / RECORD, json.dumps(data, indent=1).encode())


async def repository_top(cwd: Path, timeout: float) -> Path | None:
    """The top of the git work tree ``cwd`` is in; None outside git."""
    found = await git("rev-parse", "--show-toplevel", cwd=cwd, timeout=timeout, check=False)
    if found.returncode != 0 or not found.text:
        return None
    return Path(await anyio.Path(found.text).resolve())
