"""Files changed by a run, measured on the filesystem (issue 11): whatever wrote them — the
agent in-process, a terminal, a callback — before/after, per write root.

Git mode (the root is in a git work tree and not ignored): the root's whole state is
recorded as a git *tree* before and after — ``git add -A`` into a scratch copy of the
index, objects into a scratch object directory that borrows the repository's as an
alternate, then ``write-tree``. Comparing two trees is exact where ``git status`` is not:
a file already dirty before the run and edited again shows up, one dirty before and left
alone does not, and the text diff shows only what the run did. The user's index, objects
and refs are never written. Files git ignores are not reported (build outputs, caches);
changes inside a nested repository show only as that repository's commit moving.

Snapshot mode (anything else): path → (mode, size, mtime, ctime, inode) for every file and
symlink, walked breadth-first and bounded by a file count and a time budget; a walk cut
short says so (``truncated``) and only judges what it saw. ``skip`` paths (the bridge's own
state, the run store) are never listed or read: this process may hold SQLite locks on them,
and reading a file through a new descriptor drops them. Small UTF-8 files are copied at
the start so a unified diff (difflib) can be written for them; other changes are listed
in the diff as not kept.
"""

from __future__ import annotations

import difflib
import os
import stat
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from acp_bridge._os.git import GitError, compare_trees, git, git_tree, may_be_in_work_tree
from acp_bridge._os.private_files import create_private, new_private_file, private_dir
from acp_bridge._os.stoppable import StopToken, in_thread

Fingerprint = tuple[int, int, int, int, int]  # mode, size, mtime_ns, ctime_ns, inode
LISTING_FACTOR = 4
"""A folder is listed up to this many times ``max_files`` entries (then sorted and judged
up to ``max_files``): its memory and time are bounded, not its size."""


@dataclass(frozen=True, slots=True)
class ChangeLimits:
    max_files: int = 50_000  # per root, snapshot mode
    max_seconds: float = 5.0  # per walk, snapshot mode
    keep_bytes: int = 256 * 1024  # largest file copied for the snapshot diff
    keep_total: int = 8 * 1024 * 1024  # all copies of one root together
    git_timeout: float = 60.0  # each git command


@dataclass(frozen=True, slots=True)
class FilesChanged:
    """Absolute paths, sorted. ``truncated``: some of the roots were not fully measured
    (``notes`` says which and why). ``diff``: a unified diff file, or ``None``."""

    created: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    truncated: bool = False
    diff: Path | None = None
    notes: tuple[str, ...] = ()

    @property
    def paths(self) -> list[str]:
        """Every changed path, for ``meta.files_changed``."""
        return sorted({*self.created, *self.modified, *self.deleted})


@dataclass
class _GitRoot:
    root: Path
    top: Path
    scratch: Path
    tree: str


@dataclass
class _Snapshot:
    root: Path
    skip: frozenset[Path] = frozenset()
    entries: dict[Path, Fingerprint] = field(default_factory=dict)
    seen_dirs: set[Path] = field(default_factory=set)
    complete: set[Path] = field(default_factory=set)
    truncated: bool = False
    copies: dict[Path, Path] = field(default_factory=dict)


@dataclass
class Baseline:
    """The state of the write roots before a run: keep it, then :func:`measure_changes`."""

    workdir: Path
    limits: ChangeLimits
    roots: list[_GitRoot | _Snapshot]
    notes: list[str] = field(default_factory=list)


# --- git ---------------------------------------------------------------------------------


async def _git_root(root: Path, scratch: Path, timeout: float) -> _GitRoot | None:
    """The git baseline of ``root``, or None when snapshot mode must do."""
    if not may_be_in_work_tree(root):
        return None
    private_dir(scratch)
    inside = await git(
        "rev-parse",
        "--show-toplevel",
        "--git-path",
        "index",
        cwd=root,
        timeout=timeout,
        check=False,
    )
    if inside.returncode != 0:
        return None  # not in a work tree (or inside .git)
    ignored = await git("check-ignore", "-q", ".", cwd=root, timeout=timeout, check=False)
    if ignored.returncode == 0:
        return None  # git would not see a thing that happens in here
    top_text, index_text = inside.text.splitlines()
    tree = await git_tree(root, scratch, timeout=timeout, index=root / index_text)
    return _GitRoot(root, Path(top_text), scratch, tree)


# --- snapshots ---------------------------------------------------------------------------


def _fingerprint(path: Path) -> Fingerprint | None:
    try:
        st = path.lstat()
    except OSError:
        return None
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _listing(folder: Path, most: int, stop: StopToken) -> tuple[list[Path], bool]:
    """The entries of ``folder``, sorted: at most ``most`` of them, as many as ``stop``
    allows (a folder of 200 000 new files is not listed whole before the deadline is looked
    at). Whether it was listed in full."""
    entries: list[Path] = []
    with os.scandir(folder) as scan:
        for number, entry in enumerate(scan):
            if len(entries) >= most or (number % 256 == 0 and stop.stopped):
                return sorted(entries), False
            entries.append(Path(entry.path))
    return sorted(entries), True


def _walk(
    snap: _Snapshot,
    limits: ChangeLimits,
    *,
    into: set[Path] | None,
    keep_in: Path | None,
    stop: StopToken,
) -> tuple[dict[Path, Fingerprint], bool]:
    """Breadth-first listing of files and symlinks under ``snap.root``. ``into``: list
    only these directories (the ones listed in full before) and new ones; ``keep_in``:
    copy small text files there. Returns the entries and whether the walk was cut short
    (by the file count, the time budget or ``stop``)."""
    deadline = time.monotonic() + limits.max_seconds
    found: dict[Path, Fingerprint] = {}
    queue = deque([snap.root])
    if into is None:
        snap.seen_dirs.add(snap.root)
    kept = 0
    while queue:
        folder = queue.popleft()
        if into is not None and folder in snap.seen_dirs and folder not in into:
            continue  # not fully listed before the run: nothing to compare its listing with
        try:
            entries, whole = _listing(folder, LISTING_FACTOR * limits.max_files, stop)
        except OSError:
            continue
        for path in entries:
            if len(found) >= limits.max_files or time.monotonic() > deadline or stop.stopped:
                return found, True  # `folder` stays incomplete
            if path in snap.skip:
                continue
            print_ = _fingerprint(path)
            if print_ is None:
                continue
            if stat.S_ISDIR(print_[0]):
                if into is None:
                    snap.seen_dirs.add(path)
                queue.append(path)
                continue
            found[path] = print_
            small = stat.S_ISREG(print_[0]) and kept + print_[1] <= limits.keep_total
            if keep_in is not None and small and print_[1] <= limits.keep_bytes:
                kept += print_[1] if _keep(path, keep_in, snap) else 0
        if not whole:
            return found, True  # listed in part: `folder` stays incomplete
        if into is None:
            snap.complete.add(folder)
    return found, False


def _keep(path: Path, keep_in: Path, snap: _Snapshot) -> bool:
    try:
        data = path.read_bytes()
        if b"\0" in data:
            return False
        data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if not snap.copies:  # made on the first copy: most runs keep none (a mkdir is not free)
        private_dir(keep_in)
    copy = keep_in / str(len(snap.copies))
    with os.fdopen(new_private_file(copy), "wb") as file:
        file.write(data)
    snap.copies[path] = copy
    return True


def _text(path: Path) -> list[str] | None:
    try:
        data = path.read_bytes()
        return None if b"\0" in data else data.decode("utf-8").splitlines(keepends=True)
    except (OSError, UnicodeDecodeError):
        return None


def _diff_one(
    snap: _Snapshot, path: Path, *, new: bool, old: bool, limits: ChangeLimits
) -> list[str]:
    """The unified diff of one file, or a line saying it cannot be shown."""
    rel = path.relative_to(snap.root)
    before = (_text(snap.copies[path]) if path in snap.copies else None) if old else []
    after: list[str] | None = []
    if new:
        print_ = _fingerprint(path)
        small = print_ is not None and stat.S_ISREG(print_[0]) and print_[1] <= limits.keep_bytes
        after = _text(path) if small else None
    if before is None or after is None:
        return [f"Files a/{rel} and b/{rel} differ (binary, large or not kept)\n"]
    a = f"a/{rel}" if old else "/dev/null"
    b = f"b/{rel}" if new else "/dev/null"
    return list(difflib.unified_diff(before, after, a, b))


def _measure_snapshot(
    snap: _Snapshot, limits: ChangeLimits, stop: StopToken
) -> tuple[list[str], list[str], list[str], bool, list[str]]:
    """Created, modified, deleted, cut short, diff text. Every loop looks at ``stop`` (the
    time budget, the caller's cancel): reading and diffing 50 000 new files takes minutes."""
    after, cut = _walk(snap, limits, into=snap.complete, keep_in=None, stop=stop)
    created = sorted(p for p in after if p not in snap.entries)
    modified: list[Path] = []
    deleted: list[Path] = []
    for path, before in snap.entries.items():
        if stop.stopped:
            cut = True  # the rest of the baseline is not judged
            break
        now = after.get(path) if path in after else _fingerprint(path)
        if now is None:
            deleted.append(path)
        elif now != before:
            modified.append(path)
    diff: list[str] = []
    for path in [*created, *sorted(modified), *sorted(deleted)]:
        if stop.stopped:
            diff.append("(the diff stops here: the time to measure the run's changes ran out)\n")
            break
        diff += _diff_one(
            snap, path, new=path not in deleted, old=path not in created, limits=limits
        )
    return (
        [str(p) for p in created],
        [str(p) for p in sorted(modified)],
        [str(p) for p in sorted(deleted)],
        cut or snap.truncated,
        diff,
    )


# --- the API -----------------------------------------------------------------------------


async def take_baseline(
    roots: Sequence[Path],
    *,
    workdir: Path,
    limits: ChangeLimits | None = None,
    skip: Sequence[Path] = (),
) -> Baseline:
    """Record the write roots before a run. ``workdir`` (private to this run) holds the
    scratch indexes, objects and copies; remove it after :func:`measure_changes`.
    ``skip``: absolute files and folders a snapshot never lists nor reads."""
    limits = limits or ChangeLimits()
    resolved = sorted({r.resolve() for r in roots}, key=lambda p: len(p.parts))
    outer = [r for r in resolved if not any(o in r.parents for o in resolved)]
    baseline = Baseline(workdir, limits, [])
    for number, root in enumerate(outer):
        scratch = workdir / f"root-{number}"  # made (private) when something is kept in it
        try:
            found = await _git_root(root, scratch, limits.git_timeout)
        except GitError as exc:
            baseline.notes.append(f"{root}: git baseline failed ({exc}); using a snapshot")
            found = None
        if found is not None:
            baseline.roots.append(found)
            continue
        snap = _Snapshot(root, frozenset(skip))
        stop = StopToken.within(limits.max_seconds)
        entries, cut = await in_thread(
            partial(_walk, snap, limits, into=None, keep_in=scratch, stop=stop), stop
        )
        snap.entries, snap.truncated = entries, cut
        if cut:
            baseline.notes.append(f"{root}: snapshot cut short at {len(entries)} files")
        baseline.roots.append(snap)
    return baseline


async def measure_changes(baseline: Baseline, *, diff: Path | None = None) -> FilesChanged:
    """What changed under the roots since ``baseline``; the unified diff goes to ``diff``
    (default: ``changes.diff`` in the baseline's workdir)."""
    created: list[str] = []
    modified: list[str] = []
    deleted: list[str] = []
    notes = list(baseline.notes)
    truncated = False
    parts: list[Path] = []
    timeout = baseline.limits.git_timeout
    for number, state in enumerate(baseline.roots):
        if isinstance(state, _GitRoot):
            part = state.scratch / "part.diff"
            os.close(create_private(part))  # git writes it: private from the start
            try:
                tree = await git_tree(state.root, state.scratch, timeout=timeout, index=None)
                c, m, d = await compare_trees(
                    state.root,
                    state.top,
                    state.scratch,
                    state.tree,
                    tree,
                    timeout=timeout,
                    diff=part,
                )
            except GitError as exc:
                notes.append(f"{state.root}: not measured ({exc})")
                truncated = True
                continue
        else:
            stop = StopToken.within(baseline.limits.max_seconds)
            c, m, d, cut, text = await in_thread(
                partial(_measure_snapshot, state, baseline.limits, stop), stop
            )
            truncated |= cut
            part = baseline.workdir / f"root-{number}" / "part.diff"
            if text:
                private_dir(part.parent)
                with os.fdopen(create_private(part), "w", encoding="utf-8") as file:
                    file.write("".join(text))
        created += c
        modified += m
        deleted += d
        parts.append(part)
    parts = [part for part in parts if part.exists() and part.stat().st_size]
    target = diff or baseline.workdir / "changes.diff"
    if parts:  # no file for a run that changed nothing
        if diff is None:
            private_dir(baseline.workdir)
        with os.fdopen(create_private(target), "wb") as out:
            for part in parts:
                out.write(part.read_bytes())
    has_diff = bool(parts)
    return FilesChanged(
        tuple(sorted(created)),
        tuple(sorted(modified)),
        tuple(sorted(deleted)),
        truncated,
        target if has_diff else None,
        tuple(notes),
    )
