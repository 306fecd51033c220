"""One run's confinement: its OS sandbox, its own git worktree when asked, and the
measurement of what it changed (docs/explanation/security.md).

:func:`confined` is entered before the agent starts and left after every process of the
run ended. Entering picks the sandbox mode (``auto``: bubblewrap, else Landlock, else a
clear error), creates the worktree (``isolation: worktree``) and the agent's missing state
directories, and records the write roots; leaving measures what changed there — by any
means: the agent in-process, its terminals, the bridge's own file service — writes the diff
beside the run's transcript, keeps or removes the worktree, and removes the private ``/tmp``.

Given the run's ``deadline``, both ends keep the run's time bound (T + END_GRACE): setting
up and the baseline must be done by the deadline (else :class:`RunTimeout`), measuring by
the deadline + END_GRACE. Walks and git commands get only the time left (a cut walk says
so in ``files_changed_notes``); a measurement the grace cannot hold is skipped, said so,
and a worktree is then kept as it is.
"""

from __future__ import annotations

import contextlib
import math
import shutil
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from acp_bridge._entries.enveloped import END_GRACE
from acp_bridge._os.fs.locations import config_dir, run_store_files, state_dir
from acp_bridge._os.fs.paths import resolved
from acp_bridge._os.fs.run_folders import check_write_roots
from acp_bridge._os.git.changes import (
    Baseline,
    ChangeLimits,
    FilesChanged,
    measure_changes,
    take_baseline,
)
from acp_bridge._os.git.worktree_creation import create_worktree
from acp_bridge._os.git.worktree_finish import finish_worktree
from acp_bridge._os.git.worktree_reopening import reopen_worktree
from acp_bridge._os.git.worktrees import Worktree
from acp_bridge._os.process.procgroup import Launched
from acp_bridge._os.sandbox import RunSandbox, SandboxSpec, choose_mode
from acp_bridge.config import ResolvedSandbox
from acp_bridge.config._sandbox_section import IsolationMode, KeepWorktree
from acp_bridge.errors import BridgeError, ConfigError, RunTimeout, StateDirError

SHIM_GRACE_SHARE = 0.5  # of the shutdown grace: the Landlock shim must finish before SIGKILL
FINISH_RESERVE = 1.0
"""Seconds of the run's end kept from the walks and git commands that measure its changes:
comparing, diffs and the envelope come after them."""


class Confinement:
    """What a run works in and under."""

    # A plain class, not a dataclass: a dataclass compiles each generated method from
    # source when its module loads, on every start-up's path (~2 M instructions).
    def __init__(
        self,
        box: RunSandbox,
        cwd: Path,
        read_roots: tuple[Path, ...],
        write_roots: tuple[Path, ...],
        worktree: Worktree | None = None,
        *,
        notes: list[str] | None = None,
    ) -> None:
        self.box = box
        self.cwd = cwd
        self.read_roots = read_roots
        self.write_roots = write_roots
        self.worktree = worktree
        self.files: FilesChanged | None = None
        self.worktree_meta: dict[str, object] | None = None
        self.notes: list[str] = [] if notes is None else notes

    def launch(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path | None = None,
        *,
        handoff: bool = False,
    ) -> Launched:
        """How ``argv`` starts in this run's sandbox (the agent, and each terminal); a
        :data:`~acp_bridge._os.process.procgroup.Launcher`. Under bubblewrap a graceful stop signals
        the command inside, not bwrap (which would take the whole namespace with it), and
        with ``handoff`` (the agent) its stdin and stdout are handed past bwrap."""
        return self.box.wrap(argv, env, cwd=cwd, handoff=handoff)

    @property
    def mode(self) -> str:
        return self.box.choice.mode

    def meta(self) -> dict[str, Any]:
        """``meta.sandbox``, ``meta.files_changed``, ``meta.diff``, ``meta.worktree``."""
        out: dict[str, Any] = {"sandbox": self.box.meta()}
        if self.files is not None:
            out["files_changed"] = self.files.paths or None
            out["diff"] = str(self.files.diff) if self.files.diff else None
            if self.files.truncated or self.files.notes:
                out["files_changed_notes"] = list(self.files.notes) or None
        if self.worktree_meta is not None:
            out["worktree"] = self.worktree_meta
        return out


def _mapped(paths: Sequence[Path], worktree: Worktree | None) -> tuple[Path, ...]:
    """Roots inside the repository, moved to the same place inside the run's worktree."""
    if worktree is None:
        return tuple(paths)
    out = []
    for path in paths:
        inside = path == worktree.repo or worktree.repo in path.parents
        out.append(worktree.path / path.relative_to(worktree.repo) if inside else path)
    return tuple(out)


async def _make_state_dirs(paths: Sequence[Path]) -> list[str]:
    """Create the agent's missing state directories (a fresh machine has no ``~/.gemini``
    yet, and the agent cannot create it where the home is read-only). A path with a suffix
    (``~/.claude.json``) is a file: left to the agent, and said so when it is missing."""
    notes = []
    for path in paths:
        # A stat, inline: the state folder is there on every run but the first (a thread
        # hop per path cost more than the stat, and 64 runs at once wait for the threads).
        if path.exists():
            continue
        if path.suffix:
            notes.append(f"state file {path} does not exist yet: the agent cannot create it")
            continue
        with contextlib.suppress(OSError):
            await anyio.Path(path).mkdir(parents=True, exist_ok=True, mode=0o700)
    return notes


def sandbox_spec(
    settings: ResolvedSandbox,
    *,
    cwd: Path,
    reads: Sequence[Path],
    writes: Sequence[Path],
    worktree: Worktree | None = None,
    state: Path | None = None,
    store_files: Sequence[Path] | None = None,
) -> SandboxSpec:
    """The sandbox policy of a run (also what ``doctor`` checks a cwd against): its roots,
    the agent's state and readable paths, and hidden the bridge's own state and config.
    ``state``, ``store_files``: :func:`state_dir` and :func:`run_store_files`, when the
    caller has them already (a run asks for them once)."""
    state = state_dir() if state is None else state
    store_files = run_store_files() if store_files is None else store_files
    return SandboxSpec(
        cwd=worktree.cwd if worktree else cwd,
        # A state file not made yet (a fresh machine has no ~/.claude.json) cannot be a
        # write root: left out, and said so (_make_state_dirs), rather than failing the run.
        write=(
            *writes,
            *(path for path in settings.state if path.exists()),
            *(worktree.sandbox_write_paths() if worktree else ()),
        ),
        read=(*reads, *settings.readable, *(worktree.sandbox_read_paths() if worktree else ())),
        hidden=(*settings.hidden, state, config_dir(), *store_files),
        mode=settings.mode,
        network=settings.network,
    )


@asynccontextmanager
async def confined(
    settings: ResolvedSandbox,
    *,
    task_id: str,
    cwd: Path,
    read_roots: Sequence[Path],
    write_roots: Sequence[Path],
    isolation: IsolationMode = "none",
    keep_worktree: KeepWorktree = "changed",
    reopen: Path | None = None,
    worktree_start: str = "HEAD",
    measure: bool = True,
    diff: Path | None = None,
    shutdown_grace: float = 2.0,
    deadline: float = math.inf,
    last_deadline: Callable[[], float] | None = None,
    explicit_write_roots: Sequence[Path] = (),
) -> AsyncIterator[Confinement]:
    """The confinement of one run; see the module docstring. ``diff``: where the unified
    diff of the run's changes goes (None: no diff is kept). ``deadline``: the run's
    (``anyio.current_time()``), if it has one; ``last_deadline``: the deadline of its last
    turn, asked when the run is over (follow-up turns each have their own).
    ``worktree_start``: the commit a fresh worktree starts from (a verifier's: the attempts').
    ``explicit_write_roots``: what the profile names as write roots; only those may be too
    broad to be one by default (the filesystem, the home folder, a system folder)."""
    check_write_roots(write_roots, explicit=explicit_write_roots)
    state = state_dir()
    scratch = state / "scratch" / task_id
    set_up = False
    with anyio.move_on_at(deadline):
        choice = await choose_mode(settings.mode, network=settings.network)
        worktree, notes = await _worktree(
            cwd, task_id, isolation, reopen, worktree_start, state, deadline
        )
        set_up = True
    if not set_up:  # a worktree half made is removed by create_worktree itself
        raise RunTimeout("the run's timeout passed while its sandbox was being set up")
    conf: Confinement | None = None
    ran = False
    try:
        reads, writes = _mapped(read_roots, worktree), _mapped(write_roots, worktree)
        if worktree is not None:
            _refuse_writes_to_repository(worktree, (*writes, *settings.state))
        notes += await _make_state_dirs(settings.state)
        store_files = run_store_files()
        spec = sandbox_spec(
            settings,
            cwd=cwd,
            reads=reads,
            writes=writes,
            worktree=worktree,
            state=state,
            store_files=store_files,
        )
        conf = Confinement(
            RunSandbox(
                spec, choice, tmp_parent=state / "tmp", grace=shutdown_grace * SHIM_GRACE_SHARE
            ),
            spec.cwd,
            reads,
            writes,
            worktree,
            notes=notes,
        )
        baseline: Baseline | None = None
        if measure and worktree is None:
            # Never the bridge's own state: this process holds the run store open, and
            # reading its files would drop SQLite's locks (see run_store_files).
            skip = (state, *store_files)
            try:
                baseline = await take_baseline(
                    writes, workdir=scratch / "changes", skip=skip, limits=_until(deadline)
                )
            except (StateDirError, OSError) as exc:  # no room for its scratch: the run goes on
                conf.notes.append(f"files changed not measured: {exc}")
            if anyio.current_time() >= deadline:
                raise RunTimeout("the run's timeout passed while its files were being recorded")
        try:
            ran = True
            async with conf.box:
                yield conf
        finally:
            # The run is over, however it ended: measure it even if it failed or was
            # cancelled (shielded), and never let a failed measurement hide the run's error.
            last = deadline if last_deadline is None else last_deadline()
            end = last + END_GRACE  # the run's own end: measuring may not pass it
            # A reopened worktree holds the session's earlier turns: never removed here.
            keep: KeepWorktree = "always" if worktree and worktree.reopened else keep_worktree
            with anyio.CancelScope(shield=True, deadline=end) as finishing:
                await _finish(conf, baseline, scratch, keep, diff, end)
            if finishing.cancelled_caught:
                conf.notes.append("files changed not measured: the run's end grace ran out")
            if conf.worktree_meta is not None:
                worktree = None  # kept or removed: nothing left to do
    finally:
        if worktree is not None:  # kept or removed all the same, whatever happened
            # Never started: nothing to keep (unless an earlier turn's). Not measured in time:
            # kept, unless the run says never.
            kept: KeepWorktree = keep_worktree if ran else "never"
            with anyio.CancelScope(shield=True), contextlib.suppress(BridgeError, OSError):
                result = await finish_worktree(
                    worktree,
                    scratch=scratch / "worktree",
                    keep="always" if worktree.reopened else kept,
                    measure=False,
                )
                if conf is not None:
                    conf.worktree_meta = result.meta()
                    conf.notes += result.notes
        # Made only when used (a run without a worktree or snapshot copies has none): no
        # thread hop for a folder that is not there (a stat, from the dentry cache).
        if scratch.exists() or scratch.is_symlink():
            with contextlib.suppress(OSError):
                await anyio.to_thread.run_sync(lambda: shutil.rmtree(scratch, ignore_errors=True))


async def _worktree(
    cwd: Path,
    task_id: str,
    isolation: IsolationMode,
    reopen: Path | None,
    start: str,
    state: Path,
    deadline: float,
) -> tuple[Worktree | None, list[str]]:
    """The run's worktree: the one an earlier turn of its session kept (``reopen``), else a
    fresh one for ``isolation: worktree`` (from ``start``), else none; and what to say about
    it."""
    timeout = _git_time(ChangeLimits(), deadline)
    if reopen is not None:
        if await anyio.Path(reopen).is_dir():
            return await reopen_worktree(reopen, cwd, state_dir=state, timeout=timeout), []
        note = f"the session's worktree {reopen} is gone: this turn works in a fresh one"
        fresh = await create_worktree(cwd, task_id, state_dir=state, start=start, timeout=timeout)
        return fresh, [note]
    if isolation == "worktree":
        fresh = await create_worktree(cwd, task_id, state_dir=state, start=start, timeout=timeout)
        return fresh, []
    return None, []


def _refuse_writes_to_repository(worktree: Worktree, writes: Sequence[Path]) -> None:
    """A write root (or agent state path) that holds the caller's repository, or one of its
    git directories, is refused in a worktree run: the agent could change through it what
    the worktree keeps it from — in the sandbox, and through the bridge's own file service,
    which serves writes outside any sandbox. Roots inside the repository are not in
    ``writes``: they were moved into the worktree."""
    held = {worktree.repo: "working tree"} | dict.fromkeys(worktree.caller.git_dirs, "git folder")
    for root in writes:
        where = resolved(root)
        for path, what in held.items():
            if where == path or where in path.parents:
                raise ConfigError(
                    f"isolation worktree: the write root {root} holds the repository's {what} "
                    f"{path}: the agent could change the repository the worktree keeps it "
                    "from; name write roots inside the repository (they move into the "
                    "worktree) or beside it"
                )


async def _finish(
    conf: Confinement,
    baseline: Baseline | None,
    scratch: Path,
    keep: KeepWorktree,
    diff: Path | None,
    end: float,
) -> None:
    try:
        if conf.worktree is not None:
            result = await finish_worktree(
                conf.worktree,
                scratch=scratch / "worktree",
                keep=keep,
                diff=diff,
                timeout=_git_time(ChangeLimits(), end - FINISH_RESERVE),
            )
            conf.files, conf.worktree_meta = result.files, result.meta()
            conf.notes += result.notes
        elif baseline is not None:
            if anyio.current_time() > end - FINISH_RESERVE:  # a cut walk still stats it all
                conf.notes.append("files changed not measured: the run's end grace ran out")
                return
            baseline.limits = _until(end - FINISH_RESERVE, baseline.limits)
            conf.files = await measure_changes(baseline, diff=diff)
    except (BridgeError, OSError) as exc:
        conf.notes.append(f"files changed not measured: {exc}")


def _until(end: float, limits: ChangeLimits | None = None) -> ChangeLimits:
    """``limits`` with each walk and git command cut to the time left before ``end`` (a
    walk runs in a thread, which no cancel scope can stop: it must stop by itself)."""
    limits = limits or ChangeLimits()
    left = max(end - anyio.current_time(), 0.0)
    return limits.replaced(
        max_seconds=min(limits.max_seconds, left), git_timeout=_git_time(limits, end)
    )


def _git_time(limits: ChangeLimits, end: float) -> float:
    return max(min(limits.git_timeout, end - anyio.current_time()), 0.1)
