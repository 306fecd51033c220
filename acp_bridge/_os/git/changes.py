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

import os
import shutil
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from acp_bridge._os.fs.paths import resolved as real
from acp_bridge._os.fs.private_files import create_private, private_dir
from acp_bridge._os.git.commands import GitError, compare_trees, git, git_tree, may_be_in_work_tree
from acp_bridge._os.git.snapshots import (
    ChangeLimits as ChangeLimits,
)
from acp_bridge._os.git.snapshots import (
    Snapshot,
    baseline_if_small,
    measure_snapshot,
    unchanged_if_small,
    walk,
)
from acp_bridge._os.stoppable import StopToken, in_thread
from acp_bridge._records.frozen import FrozenRecord


class FilesChanged(FrozenRecord):
    """Absolute paths, sorted. ``truncated``: some of the roots were not fully measured
    (``notes`` says which and why). ``diff``: a unified diff file, or ``None``."""

    # A frozen record, not a frozen dataclass: a dataclass compiles its generated methods
    # from source when its module loads, on every start-up's path (~4 M instructions).
    created: tuple[str, ...]
    modified: tuple[str, ...]
    deleted: tuple[str, ...]
    truncated: bool
    diff: Path | None
    notes: tuple[str, ...]
    _compared = __slots__ = ("created", "modified", "deleted", "truncated", "diff", "notes")

    def __init__(
        self,
        created: tuple[str, ...] = (),
        modified: tuple[str, ...] = (),
        deleted: tuple[str, ...] = (),
        truncated: bool = False,
        diff: Path | None = None,
        notes: tuple[str, ...] = (),
    ) -> None:
        object.__setattr__(self, "created", created)
        object.__setattr__(self, "modified", modified)
        object.__setattr__(self, "deleted", deleted)
        object.__setattr__(self, "truncated", truncated)
        object.__setattr__(self, "diff", diff)
        object.__setattr__(self, "notes", notes)

    @property
    def paths(self) -> list[str]:
        """Every changed path, for ``meta.files_changed``."""
        return sorted({*self.created, *self.modified, *self.deleted})


# Plain classes: a dataclass compiles its generated methods from source when its module
# loads, on every start-up's path (~2 M instructions a class).
class _GitRoot:
    __slots__ = ("root", "scratch", "top", "tree")

    def __init__(self, root: Path, top: Path, scratch: Path, tree: str) -> None:
        self.root, self.top, self.scratch, self.tree = root, top, scratch, tree


class Baseline:
    """The state of the write roots before a run: keep it, then :func:`measure_changes`."""

    __slots__ = ("limits", "notes", "roots", "workdir")

    def __init__(
        self, workdir: Path, limits: ChangeLimits, roots: list[_GitRoot | Snapshot]
    ) -> None:
        self.workdir = workdir
        self.limits = limits
        self.roots = roots
        self.notes: list[str] = []


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
    resolved = sorted({real(r) for r in roots}, key=lambda p: len(p.parts))
    outer = [r for r in resolved if not any(o in r.parents for o in resolved if o is not r)]
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
        snap = Snapshot(root, frozenset(skip))
        if baseline_if_small(snap, limits, scratch):
            baseline.roots.append(snap)
            continue
        snap = Snapshot(root, frozenset(skip))
        stop = StopToken.within(limits.max_seconds)
        entries, cut = await in_thread(
            partial(walk, snap, limits, into=None, keep_in=scratch, stop=stop), stop
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
        elif unchanged_if_small(state, baseline.limits):  # most runs: no thread hop
            c, m, d = [], [], []
            truncated |= state.truncated
            part = baseline.workdir / f"root-{number}" / "part.diff"
        else:
            stop = StopToken.within(baseline.limits.max_seconds)
            c, m, d, cut, text = await in_thread(
                partial(measure_snapshot, state, baseline.limits, stop), stop
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
            for part in parts:  # copied in pieces: a part is as large as the agent's changes
                with part.open("rb") as source:
                    shutil.copyfileobj(source, out)
    has_diff = bool(parts)
    return FilesChanged(
        tuple(sorted(created)),
        tuple(sorted(modified)),
        tuple(sorted(deleted)),
        truncated,
        target if has_diff else None,
        tuple(notes),
    )
