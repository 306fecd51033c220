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
worktree (:func:`reopen_worktree`), its changes measured from where that turn began.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import anyio

from acp_bridge._os.fs.modes import RecordedModes, record_modes, restore_modes
from acp_bridge._os.fs.paths import resolved
from acp_bridge._os.fs.private_files import create_private, private_dir, write_private
from acp_bridge._os.fs.removal import remove_tree
from acp_bridge._os.git.changes import FilesChanged
from acp_bridge._os.git.commands import DEFAULT_TIMEOUT, GitError, git
from acp_bridge._os.git.git_dirs import (
    branch_tip,
    own_git_env,
    read_small,
    set_branch,
    take_objects,
    write_git_dir,
)
from acp_bridge._os.git.trees import compare_trees, git_tree, write_diff
from acp_bridge.errors import BridgeError, ConfigError

BRANCH_PREFIX = "acp-bridge/"
Keep = Literal["changed", "always", "never"]
_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
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


# --- the caller's repository, read --------------------------------------------------------


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


def _folder(top: Path) -> str:
    """The folder of a repository's worktrees (and records): its name and a digest."""
    return f"{top.name}-{hashlib.sha256(str(top).encode()).hexdigest()[:8]}"


def _record_of(state: Path, path: Path) -> Path | None:
    """The record folder of the worktree at ``path``, if ``path`` is where the bridge puts
    worktrees (``state/worktrees/<repo>/<task_id>``)."""
    try:
        repo, task_id = path.relative_to(state / WORKTREES).parts
    except ValueError:
        return None
    return state / RECORDS / repo / task_id if _TASK_ID.fullmatch(task_id) else None


# --- a new worktree -----------------------------------------------------------------------


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
    if not _TASK_ID.fullmatch(task_id) or task_id.endswith(".lock") or ".." in task_id:
        raise ConfigError(f"isolation worktree: task id {task_id!r} cannot name a branch")
    cwd = Path(await anyio.Path(cwd).resolve())
    caller, base, tree = await caller_repository(
        cwd, start, timeout=timeout, what="isolation worktree"
    )
    modes = await anyio.to_thread.run_sync(record_modes, caller.git_dirs)
    # Checked before it is resolved: a link to nowhere is refused, its target never made.
    private_dir(state_dir, top=state_dir)
    state = Path(await anyio.Path(state_dir).resolve())
    folder = _folder(caller.top)
    path = state / WORKTREES / folder / task_id
    record = state / RECORDS / folder / task_id
    private_dir(path.parent, top=state)
    private_dir(record.parent, top=state)
    await anyio.to_thread.run_sync(_prune_records, path.parent, record.parent)
    try:
        path.mkdir(mode=0o700)  # first (see _prune_records); never an old one reused
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
        _write_record(wt)
        await anyio.Path(wt.cwd).mkdir(parents=True, exist_ok=True)  # an untracked cwd
    except BaseException:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_remove_both, wt)
        raise
    return wt


def _copy_file(source: Path, target: Path) -> None:
    with os.fdopen(os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb") as src:
        data = src.read()
    write_private(target, data)


def _write_record(wt: Worktree) -> None:
    data = {"caller": wt.caller.as_json(), "branch": wt.branch, "commit": wt.base}
    write_private(wt.record / RECORD, json.dumps(data, indent=1).encode())


def _prune_records(worktrees: Path, records: Path) -> None:
    """Remove the records of a repository's worktrees that are gone (a person removed a kept
    one). A worktree's folder is made before its record and removed before it, so a run
    under way never loses its record here."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(records):
            if not os.path.lexists(worktrees / entry.name):
                remove_tree(Path(entry.path))


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


# --- a kept worktree, found and reopened --------------------------------------------------


async def kept_worktree(
    cwd: Path, task_ids: Sequence[str], *, state_dir: Path, timeout: float = DEFAULT_TIMEOUT
) -> Path | None:
    """The kept worktree of the repository at ``cwd`` for the first of ``task_ids`` that has
    one (a session's runs, newest first); None outside git."""
    top = await _top(cwd, timeout)
    if top is None:
        return None
    state = Path(await anyio.Path(state_dir).resolve())
    for task_id in task_ids:
        if not _TASK_ID.fullmatch(task_id):
            continue
        path = state / WORKTREES / _folder(top) / task_id
        if path.is_dir() and (state / RECORDS / _folder(top) / task_id / RECORD).is_file():
            return path
    return None


async def _top(cwd: Path, timeout: float) -> Path | None:
    found = await git("rev-parse", "--show-toplevel", cwd=cwd, timeout=timeout, check=False)
    if found.returncode != 0 or not found.text:
        return None
    return Path(await anyio.Path(found.text).resolve())


async def reopen_worktree(
    path: Path, cwd: Path, *, state_dir: Path, timeout: float = DEFAULT_TIMEOUT
) -> Worktree:
    """The worktree an earlier turn of the session kept at ``path``, for the next turn: the
    same branch, ``cwd`` (in the caller's repository) mapped into it, and its state now as
    the start this turn's changes are measured from."""
    path = Path(await anyio.Path(path).resolve())
    state = Path(await anyio.Path(state_dir).resolve())
    record = _record_of(state, path)
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


# --- the end of a run ---------------------------------------------------------------------


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
    elif not await anyio.to_thread.run_sync(_remove_both, wt):
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
    """The kept worktree's ``.git`` written again by the bridge (see the module docstring):
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
        _write_record(wt)
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


def _remove_both(wt: Worktree) -> bool:
    """Remove the worktree, then its record (see :func:`_prune_records`)."""
    gone = remove_tree(wt.path)
    return remove_tree(wt.record) and gone


async def discard_worktrees(
    cwd: Path, task_ids: Sequence[str], *, state_dir: Path, timeout: float = DEFAULT_TIMEOUT
) -> list[str]:
    """Remove whatever runs ``task_ids`` left of the repository at ``cwd``: their worktrees
    and records (kept on purpose, or left by a run that could not finish). What could not
    be removed is said in the notes returned."""
    top = await _top(cwd, timeout)
    if top is None:
        return []
    state = Path(await anyio.Path(state_dir).resolve())
    notes: list[str] = []
    for task_id in task_ids:
        if not _TASK_ID.fullmatch(task_id):
            continue
        path = state / WORKTREES / _folder(top) / task_id
        record = state / RECORDS / _folder(top) / task_id
        for where in (path, record):
            if not await anyio.to_thread.run_sync(remove_tree, where):
                notes.append(f"{where} not removed entirely")
    return notes
