"""A task's workspace on the node that runs it, and what the task changed there.

Made on the node itself (a remote executor ships only the description, and an upload as a
tarball): a fresh directory, the files a task asks for, an uploaded copy, or a git checkout
of a repository the node reaches (a local one is checked out in a repository of the
workspace's own, borrowing its objects: nothing the task does there reaches it). Before
the run its state is recorded (git or a snapshot, :mod:`acp_bridge._os.git.changes`); after
it, ``meta.files_changed`` (paths relative to the workspace) and ``meta.diff`` (a file in
this machine's state directory) are filled in where the entry did not measure them itself.
Then the caller's ``inspect`` looks at the result (smoke's file expectations) and the
directory goes, unless the task keeps it.

Why the bound on uploads: a tarball travels through the object store, which is memory on
every node it crosses; past :data:`MAX_UPLOAD_BYTES` (or the executor's own bound) a task
is refused with ``limit_exceeded`` before anything is shipped.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import stat
import tarfile
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from acp_bridge._batch.tasks import Inspect, Workspace
from acp_bridge._os.fs.locations import state_dir
from acp_bridge._os.fs.modes import RecordedModes, restore_modes
from acp_bridge._os.fs.private_files import private_dir
from acp_bridge._os.fs.removal import remove_tree
from acp_bridge._os.git.changes import measure_changes, take_baseline
from acp_bridge._os.git.commands import GitError, git
from acp_bridge._os.git.worktree_creation import check_out
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import ConfigError, LimitExceeded

MAX_UPLOAD_BYTES = 64 << 20
"""Default bound of an uploaded workspace, packed (a tarball)."""
GIT_TIMEOUT = 120.0


def pack(directory: str | Path, limit: int = MAX_UPLOAD_BYTES) -> bytes:
    """``directory`` as a tarball of at most ``limit`` bytes (symlinks kept as links);
    :class:`LimitExceeded` past it, before the whole tree is read."""
    root = Path(directory)
    if not root.is_dir():
        raise ConfigError(f"workspace upload {root}: not a directory")
    buffer = _BoundedBuffer(limit, root)
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(root, arcname=".", recursive=True)
    return buffer.getvalue()


class _BoundedBuffer(io.BytesIO):
    def __init__(self, limit: int, root: Path) -> None:
        super().__init__()
        self.limit = limit
        self.root = root

    def write(self, data: Any) -> int:
        if self.tell() + len(data) > self.limit:
            raise LimitExceeded(
                f"workspace upload {self.root}: more than {self.limit} bytes packed "
                "(the executor's max_upload_bytes)"
            )
        return super().write(data)


@dataclass
class Prepared:
    """A workspace made for one task: run the task in :attr:`path`."""

    path: Path
    temp_dir: Path
    """The temporary directory around it (removed at the end unless kept)."""
    repository_modes: RecordedModes | None = None
    """A ``git`` workspace's: the modes and owners in the git folders of the repository it
    was checked out of, before the task (put back after it: Landlock lets a task change
    them)."""
    notes: list[str] = field(default_factory=list)


async def _make(spec: Workspace, task_id: str, upload: bytes | None) -> Prepared:
    temp_dir = Path(tempfile.mkdtemp(prefix=f"acp-bridge-{task_id}-"))
    path = temp_dir / "work"
    prepared = Prepared(path, temp_dir)
    try:
        if spec.git is not None:
            await _git_workspace(spec.git, spec.ref, prepared)
        elif upload is not None:
            await anyio.to_thread.run_sync(_unpack, upload, path)
        elif spec.upload is not None:  # this machine's own directory: a plain copy
            await anyio.to_thread.run_sync(_copy, Path(spec.upload), path)
        else:
            path.mkdir()
        for name, text in spec.files.items():
            target = path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    except BaseException:
        await _remove(prepared)
        raise
    return prepared


def _copy(source: Path, path: Path) -> None:
    if not source.is_dir():
        raise ConfigError(f"workspace upload {source}: not a directory")
    shutil.copytree(source, path, symlinks=True)


def _unpack(data: bytes, path: Path) -> None:
    path.mkdir()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as archive:
        # "data": no absolute names, no escaping links, no devices (PEP 706)
        archive.extractall(path, filter="data")


async def _git_workspace(repo: str, ref: str, prepared: Prepared) -> None:
    path = prepared.path
    try:
        if await anyio.Path(repo).is_dir():
            # A repository of the workspace's own, borrowing the objects of `repo`: what
            # the task does there (its commits, its .git) never reaches `repo`.
            top = Path(await anyio.Path(repo).resolve())
            prepared.repository_modes = await check_out(top, ref, path)
            return
        if "://" not in repo and not repo.endswith(".git"):
            raise ConfigError(f"workspace git {repo!r}: no such repository on this node")
        await git("clone", "--quiet", repo, str(path), cwd=prepared.temp_dir, timeout=GIT_TIMEOUT)
        await git("checkout", "--quiet", "--detach", ref, cwd=path)
    except GitError as exc:
        raise ConfigError(f"workspace git {repo!r} at {ref!r}: {exc}") from None


async def _put_back_modes(prepared: Prepared) -> None:
    """The workspace's own folder opened again for its owner (a task may lock it: its
    changes could not be measured, nor the folder removed), and the modes in the git
    folders of a ``git`` workspace's repository put back."""
    with contextlib.suppress(OSError):
        mode = os.lstat(prepared.path).st_mode
        if stat.S_ISDIR(mode) and stat.S_IMODE(mode) & stat.S_IRWXU != stat.S_IRWXU:
            os.chmod(prepared.path, stat.S_IMODE(mode) | stat.S_IRWXU)  # noqa: PTH101 (lstat)
    if prepared.repository_modes is None:
        return
    restored = await anyio.to_thread.run_sync(restore_modes, prepared.repository_modes)
    if restored:
        prepared.notes.append(
            f"the mode or owner of {len(restored)} entries of the repository's git folder "
            f"changed during the task (the first: {restored[0]}): put back"
        )


async def _remove(prepared: Prepared) -> None:
    with anyio.CancelScope(shield=True):
        if not await anyio.to_thread.run_sync(remove_tree, prepared.temp_dir):
            prepared.notes.append(f"workspace {prepared.temp_dir} not removed entirely")


@dataclass
class Finished:
    """What the node sends back besides the envelope."""

    envelope: SubtaskResult
    inspection: Any = None


@asynccontextmanager
async def workspace(
    spec: Workspace | None, task_id: str, upload: bytes | None = None
) -> AsyncIterator[Prepared | None]:
    """The task's workspace for the duration of the block (None: the task names its own
    ``cwd``). Removed at the end unless ``spec.keep``."""
    if spec is None:
        yield None
        return
    prepared = await _make(spec, task_id, upload)
    try:
        yield prepared
    finally:
        with anyio.CancelScope(shield=True):
            await _put_back_modes(prepared)  # Measured.finish did, unless the task failed
        if not spec.keep:
            await _remove(prepared)


class Measured:
    """The state of a workspace before its task, to compare with afterwards."""

    def __init__(self, prepared: Prepared, task_id: str) -> None:
        self.prepared = prepared
        self.task_id = task_id
        self.scratch = prepared.temp_dir / "baseline"

    async def __aenter__(self) -> Measured:
        self.baseline = await take_baseline([self.prepared.path], workdir=self.scratch)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(self.scratch, ignore_errors=True))

    async def finish(self, result: SubtaskResult, inspect: Inspect | None) -> Finished:
        """``result`` with the workspace's changes, and what ``inspect`` found there."""
        folder = await anyio.to_thread.run_sync(private_dir, state_dir() / "batches")
        diff = folder / f"{self.task_id}.diff"
        with anyio.CancelScope(shield=True):
            await _put_back_modes(self.prepared)
            changes = await measure_changes(self.baseline, diff=diff)
        root = self.prepared.path.resolve()
        update: dict[str, Any] = {}
        if result.meta.files_changed is None:
            update["files_changed"] = [_relative(p, root) for p in changes.paths]
            update["diff"] = str(changes.diff) if changes.diff else None
        else:
            update["files_changed"] = [_relative(p, root) for p in result.meta.files_changed]
        notes = [*self.prepared.notes, *changes.notes]
        if notes:
            update["warnings"] = [*(result.meta.warnings or []), *notes]
        result = result.model_copy(update={"meta": result.meta.model_copy(update=update)})
        inspection = None
        if inspect is not None:
            inspection = await anyio.to_thread.run_sync(inspect, self.prepared.path)
        return Finished(result, inspection)


def _relative(path: str, root: Path) -> str:
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return path
