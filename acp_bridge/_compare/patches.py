"""The caller's repository and the attempts' diffs: where compare starts from, how large each
change is, whether the working tree is clean, and applying the winner's diff.

Every diff here is one an attempt's run wrote (``meta.diff``: ``git diff`` from the commit
it started at to its final state, committed or not). git itself reads and applies them
(``git apply``): a diff it cannot apply (a binary change, a tree that moved under it) is
refused with git's own reason, and nothing is half-applied (``--check`` first).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio

from acp_bridge._os.git.commands import git
from acp_bridge.errors import ConfigError, DirtyWorkingTree

GIT_TIMEOUT = 60.0
SHOWN_DIRTY = 20
"""Dirty files named in a refusal (the rest are counted)."""


@dataclass(frozen=True)
class Repository:
    """The caller's working tree: its top and the commit every attempt starts from."""

    top: Path
    head: str


async def repository(cwd: Path) -> Repository:
    """The git working tree ``cwd`` is in, and its ``HEAD`` commit; :class:`ConfigError`
    when there is none (compare gives each attempt a worktree of it)."""
    if not await anyio.Path(cwd).is_dir():
        raise ConfigError(f"compare: {cwd} is not a directory")
    found = await git("rev-parse", "--show-toplevel", cwd=cwd, timeout=GIT_TIMEOUT, check=False)
    if found.returncode != 0:
        raise ConfigError(f"compare: {cwd} is not inside a git work tree")
    top = Path(await anyio.Path(found.text).resolve())
    head = await git(
        "rev-parse", "--verify", "-q", "HEAD^{commit}", cwd=top, timeout=GIT_TIMEOUT, check=False
    )
    if head.returncode != 0:
        raise ConfigError(f"compare: {top} has no commit to start the attempts from")
    return Repository(top, head.text)


async def dirty_files(top: Path) -> list[str]:
    """Paths git reports changed in the working tree at ``top``: modified, staged, deleted,
    untracked (not ignored ones)."""
    status = await git(
        "status", "--porcelain=v1", "-z", "--untracked-files=all", cwd=top, timeout=GIT_TIMEOUT
    )
    entries = status.stdout.decode("utf-8", "surrogateescape").split("\0")
    paths: list[str] = []
    skip = False
    for entry in entries:
        if skip:  # the source of a rename or copy
            skip = False
            continue
        if len(entry) > 3:
            paths.append(entry[3:])
            skip = entry[0] in "RC"
    return paths


def refuse_dirty(top: Path, dirty: list[str]) -> DirtyWorkingTree:
    """The refusal to apply a diff to ``top``, naming its dirty files."""
    shown = ", ".join(dirty[:SHOWN_DIRTY])
    more = f" and {len(dirty) - SHOWN_DIRTY} more" if len(dirty) > SHOWN_DIRTY else ""
    return DirtyWorkingTree(
        f"apply: the working tree {top} is not clean ({shown}{more}): commit or stash first"
    )


@dataclass(frozen=True)
class DiffStats:
    paths: list[str]
    added: int
    removed: int
    binary: bool = False
    """Some change is binary: its lines are not counted, and ``git apply`` cannot apply it."""


async def diff_stats(diff: Path, top: Path) -> DiffStats:
    """Files and lines a diff adds and removes (``git apply --numstat``)."""
    counted = await git("apply", "--numstat", "--", str(diff), cwd=top, timeout=GIT_TIMEOUT)
    paths: list[str] = []
    added = removed = 0
    binary = False
    for line in counted.text.splitlines():
        plus, minus, path = line.split("\t", 2)
        paths.append(path)
        if plus == "-":
            binary = True
            continue
        added, removed = added + int(plus), removed + int(minus)
    return DiffStats(paths, added, removed, binary)


async def apply_diff(diff: Path, where: Path, env: Mapping[str, str] | None = None) -> str:
    """Apply ``diff`` to the working tree at ``where``; "" when it did, else why not
    (nothing applied: git checks the whole diff first). ``env``: git's, for a worktree
    (read through the bridge's own git folder for it)."""
    for args in (("apply", "--check"), ("apply",)):
        result = await git(
            *args, "--whitespace=nowarn", "--", str(diff), cwd=where, env=env,
            timeout=GIT_TIMEOUT, check=False,
        )  # fmt: skip
        if result.returncode != 0:
            lines = result.stderr.strip().splitlines() or [f"exit code {result.returncode}"]
            return f"git apply refused the diff: {'; '.join(lines[:3])}"
    return ""
