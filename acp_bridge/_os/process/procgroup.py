"""The one owner of process groups: start a child as the leader of its own group, signal the
group safely, and end everything it started.

Why a group: agents and commands start grandchildren (npx → node → agent → MCP servers,
``make`` → compilers); one ``killpg`` reaches them all.

**The safety rule.** A process group's id is its leader's pid. While the leader is
*unreaped* (running, or a zombie not yet waited for) that pid cannot be given to anyone else,
so signalling the group cannot hit an unrelated process. Once the leader is reaped, the id
may in principle be reused by a new, unrelated group, so the group is **never signalled by
id after that**. What is left of it (children that outlived their leader, or left the group
with ``setsid``) is found by the marker every process of ours inherits in its environment
(``ACP_BRIDGE_MARKER``, unique per group) and signalled through pidfds opened before the
marker is checked again (see marked_processes.py), so a reused pid is never signalled either.

What this cannot reach: a process that scrubbed its environment (``env -i``) after leaving
the group. The OS sandbox (a PID namespace) closes that gap; see docs/explanation/security.md.

**Dying with the bridge.** Every child is started through :func:`launcher`, the one hook
between us and ``exec``: ``setpriv --pdeathsig KILL`` (util-linux) makes the kernel SIGKILL
the child when the bridge dies, even by SIGKILL. Without setpriv, a three-line Python
launcher does the same prctl (measured here: setpriv adds ~1.3 ms to a spawn, the Python
launcher ~20 ms). The signal reaches the child we start, not its own children (a parent-death
signal is not inherited); they lose their pipes and usually exit, and the OS sandbox's PID
namespace (``bwrap --die-with-parent``, to be wrapped in here) takes the rest. The command is
resolved against the child's ``PATH`` and cwd before the launcher runs, so a missing or
non-executable command is still an ``OSError`` here, not an exit code of the launcher.

A bubblewrap launch skips that exec (``dies_with_parent``): ``bwrap --die-with-parent`` sets
the same ``PR_SET_PDEATHSIG`` (SIGKILL) in its own launcher process right after it made the
namespace (bubblewrap.c, in every release that has the option: the probe requires it), and in
the namespace's init and the command. setpriv's copy is redundant there — and where bwrap is
setuid the kernel clears setpriv's at bwrap's exec anyway. What differs is the window before
the signal is armed: setpriv's start (~0.5 ms) against bwrap's start and clone (~2 ms); neither
checks whether the bridge died inside it (the Python launcher does), and an agent left so
still loses its stdin. Saved: one exec per sandboxed process (~0.8 ms of CPU a start).

**Everything a run started.** Inside :func:`run_processes`, every group started (by the run
itself or by a task it spawned) is remembered, so that the run can end with
:meth:`RunProcesses.kill_all`: SIGKILL to every group and every marked straggler, whatever
the polite steps before it managed. Inside :func:`report_groups`, each group is also told to
a callback as it starts: a process running several runs at once (the run layer's
supervisor) records which groups are which run's, so that whoever finds a run lost ends its
processes and no other run's.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import IO

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from acp_bridge._os.process.child_exits import use_pidfds
from acp_bridge._os.process.command_lookup import resolve_command
from acp_bridge._os.process.marked_processes import kill_marked
from acp_bridge._os.process.marker_scans import marker_present
from acp_bridge._os.process.namespace_inits import inherits_orphans, reap_namespace_inits
from acp_bridge._os.process.stdio_handoff import outer_argv
from acp_bridge._os.process.undumpable import make_undumpable

MARKER_ENV = "ACP_BRIDGE_MARKER"
KILL_WAIT = 5.0  # after SIGKILL; only a process stuck in the kernel takes longer
STRAGGLER_PAUSE = 0.2  # between SIGTERM and SIGKILL for processes that outlived the leader

Stdio = int | IO[bytes] | None
Graceful = Callable[[int, signal.Signals], bool]
"""How to ask a leader (by pid) to stop gracefully when signalling its group would be too
much (a sandbox launcher that dies of SIGTERM and takes everything with it). True: sent."""


class Launched:
    """How to start a process some other way (in a sandbox): its argv, env and cwd, how to
    ask it to stop, and whether its stdin and stdout are handed past the launcher
    (stdio_handoff.py)."""

    # A plain class: a dataclass compiles its generated methods from source when its module
    # loads, on every start-up's path (~2-4 M instructions).
    __slots__ = ("argv", "cwd", "dies_with_parent", "env", "graceful", "handoff")

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        graceful: Graceful | None = None,
        handoff: bool = False,
        dies_with_parent: bool = False,
    ) -> None:
        self.argv = argv
        self.env = env
        self.cwd = cwd
        self.graceful = graceful
        self.handoff = handoff
        self.dies_with_parent = dies_with_parent
        """Its first program arms its own parent-death signal (``bwrap --die-with-parent``):
        started without :func:`launcher`'s prefix."""


Launcher = Callable[[list[str], dict[str, str], Path], Launched]
"""Turns (argv, env, cwd) into how to start it; raises SpawnError when it cannot."""


def signal_name(number: int) -> str:
    """``SIGKILL`` for 9; ``SIG<n>`` for a number Python has no name for."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"SIG{number}"


def new_marker() -> str:
    return f"{os.getpid()}-{secrets.token_hex(8)}"


# --- starting: the command, and the launcher that ties the child's life to ours ---------------

SYSTEM_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"
"""Where setpriv is looked for (never the agent's PATH: that is the agent's to choose)."""
_PYTHON_LAUNCHER = (
    "import ctypes,os,sys\n"
    "ctypes.CDLL(None).prctl(1, 9)\n"  # PR_SET_PDEATHSIG, SIGKILL
    "os.getppid() == int(sys.argv[1]) or os._exit(137)\n"  # the parent died before prctl
    "os.execv(sys.argv[2], sys.argv[2:])"
)


@functools.cache
def _setpriv() -> str | None:
    return shutil.which("setpriv", path=SYSTEM_PATH)


def launcher() -> list[str]:
    """The argv prefix that makes a child die with this process (empty off Linux)."""
    if not sys.platform.startswith("linux"):
        return []
    setpriv = _setpriv()
    if setpriv is not None:
        return [setpriv, "--pdeathsig", "KILL", "--"]
    return [sys.executable, "-I", "-S", "-c", _PYTHON_LAUNCHER, str(os.getpid())]


# --- what one run started -------------------------------------------------------------------


class RunProcesses:
    """Every group started inside one :func:`run_processes` block."""

    def __init__(self) -> None:
        self.groups: list[ProcessGroup] = []
        """Every group started here that may have left something (not yet swept)."""

    def add(self, group: ProcessGroup) -> None:
        self.groups = [g for g in self.groups if not g.swept]  # forget the finished
        self.groups.append(group)

    async def kill_all(self, wait: float) -> None:
        """SIGKILL every group still led by an unreaped leader, then every process that
        carries one of their markers; wait up to ``wait`` seconds for them to be gone.
        Groups whose leader was reaped and swept since cost nothing (no /proc scan)."""
        groups = [group for group in self.groups if not group.swept]
        for group in groups:
            if group.signal(signal.SIGKILL):
                group.notes.append("shutdown deadline: sent SIGKILL to its process group")
        if groups:
            markers = [group.marker for group in groups]
            await anyio.to_thread.run_sync(
                functools.partial(kill_marked, MARKER_ENV, markers, signal.SIGKILL, wait=wait)
            )
        leaders = [group for group in groups if group.returncode is None]
        if not leaders:  # the usual end: every group reaped and swept already
            return
        with anyio.move_on_after(wait):
            async with anyio.create_task_group() as tg:
                for group in leaders:
                    tg.start_soon(group.process.wait)


_current_run: ContextVar[RunProcesses | None] = ContextVar("acp_bridge_run", default=None)


@contextlib.contextmanager
def run_processes() -> Iterator[RunProcesses]:
    """Remember every group started inside (tasks started inside inherit it)."""
    started = RunProcesses()
    token = _current_run.set(started)
    try:
        yield started
    finally:
        _current_run.reset(token)


_group_reports: ContextVar[tuple[Callable[[int], None], ...]] = ContextVar(
    "acp_bridge_group_reports", default=()
)


@contextlib.contextmanager
def report_groups(callback: Callable[[int], None]) -> Iterator[None]:
    """Inside (and in tasks started inside): ``callback(leader_pid)`` for every group
    started, right after it starts (before anything else runs on the event loop)."""
    token = _group_reports.set((*_group_reports.get(), callback))
    try:
        yield
    finally:
        _group_reports.reset(token)


class ProcessGroup:
    """A child leading its own session and process group, and every process it started."""

    def __init__(self, process: Process, marker: str, graceful: Graceful | None = None) -> None:
        self.process = process
        self.pid = process.pid
        self.marker = marker
        self.graceful = graceful
        self.swept = False
        """Whether its leader was reaped before a sweep that found what outlived it."""
        self.notes: list[str] = []
        """What ending it took (SIGTERM, SIGKILL, stragglers), for meta and transcripts."""

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | Path | None = None,
        stdin: Stdio = subprocess.DEVNULL,
        stdout: Stdio = subprocess.PIPE,
        stderr: Stdio = subprocess.PIPE,
        graceful: Graceful | None = None,
        handoff: bool = False,
        dies_with_parent: bool = False,
    ) -> ProcessGroup:
        """Start ``argv`` as a new group that dies with us; OSError (not found, a directory,
        not executable …) propagates. ``graceful``: how to send its SIGTERM, when not to the
        whole group. ``handoff``: ``argv`` (a sandbox launcher's command) gets its stdin and
        stdout above fd 2, where the launcher drops its own copies (stdio_handoff.py).
        ``dies_with_parent``: ``argv`` arms its own parent-death signal (bwrap's
        ``--die-with-parent``), so :func:`launcher`'s exec is left out."""
        marker = new_marker()
        path = env.get("PATH", os.defpath)
        command = resolve_command(argv[0], path, cwd)
        make_undumpable()  # before the first child exists: it must not read our /proc entry
        full_env = {**env, MARKER_ENV: marker}
        command_line = [command, *argv[1:]]
        if handoff:
            command_line = outer_argv(command_line)
        use_pidfds()  # its exit heard by the loop, not by a thread of its own (Python 3.11)
        # Shielded: a cancel that lands mid-spawn would make asyncio SIGKILL the leader
        # alone, leaving its group (a sandbox's init, a shell's children) running, untracked.
        # The caller's cancellation takes effect at its next await, with the group in hand.
        with anyio.CancelScope(shield=True):
            process = await anyio.open_process(
                command_line if dies_with_parent else [*launcher(), *command_line],
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                cwd=cwd,
                env=full_env,
                start_new_session=True,
            )
        group = cls(process, marker, graceful)
        started = _current_run.get()
        if started is not None:
            started.add(group)
        for report in _group_reports.get():
            report(group.pid)
        return group

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    @property
    def stdin(self) -> ByteSendStream | None:
        return self.process.stdin

    @property
    def stdout(self) -> ByteReceiveStream | None:
        return self.process.stdout

    def signal(self, sig: signal.Signals) -> bool:
        """Signal the whole group, only while its leader is unreaped (the rule above).
        Whether the signal was sent."""
        if self.process.returncode is not None:
            return False
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)
        return True

    def _soft_term(self) -> bool:
        if self.process.returncode is not None:
            return False
        if self.graceful is not None and self.graceful(self.pid, signal.SIGTERM):
            return True
        return self.signal(signal.SIGTERM)

    async def exits_within(self, seconds: float) -> bool:
        """Whether the leader exits (and is reaped) within ``seconds``."""
        with anyio.move_on_after(seconds):
            await self.process.wait()
        return self.process.returncode is not None

    async def terminate(self, grace: float, *, why: str = "", kill_wait: float = KILL_WAIT) -> None:
        """SIGTERM to the group → ``grace`` → SIGKILL to the group → wait; then sweep what
        outlived the leader. Bounded: at most ``grace`` + ``kill_wait`` + the sweep."""
        if self._soft_term():
            self.notes.append(f"{why or 'ending it'}: sent SIGTERM")
            if not await self.exits_within(grace) and self.signal(signal.SIGKILL):
                self.notes.append("it ignored SIGTERM: sent SIGKILL to its process group")
                await self.exits_within(kill_wait)
        await self.sweep(wait=kill_wait)

    async def sweep(self, *, pause: float = STRAGGLER_PAUSE, wait: float = KILL_WAIT) -> int:
        """End every process still carrying this group's marker (children that outlived the
        leader or left the group): SIGTERM, ``pause``, SIGKILL, up to ``wait`` for them to go.
        How many were found. Runs in a thread that cannot be cancelled: bounded by the two."""
        reaped = self.returncode is not None
        found = 0
        # Usually nothing outlived it: one /proc pass, shared with the groups ending with it.
        if await marker_present(MARKER_ENV, self.marker):
            found = await anyio.to_thread.run_sync(
                functools.partial(
                    kill_marked, MARKER_ENV, [self.marker], signal.SIGTERM, wait=pause
                )
            )
        if found:
            self.notes.append(f"{found} process(es) outlived it: sent SIGTERM, then SIGKILL")
            await anyio.to_thread.run_sync(
                functools.partial(kill_marked, MARKER_ENV, [self.marker], signal.SIGKILL, wait=wait)
            )
        # A bwrap leader leaves its namespace's init to us when we are PID 1 (or a subreaper).
        if reaped and inherits_orphans():
            await anyio.to_thread.run_sync(reap_namespace_inits)
        self.swept = self.swept or reaped
        return found

    async def kill(self, wait: float = KILL_WAIT) -> None:
        """SIGKILL to the group (while its leader is unreaped) and to every process that
        carries its marker, then up to ``wait`` seconds for the leader to be reaped."""
        if self.signal(signal.SIGKILL):
            self.notes.append("shutdown deadline: sent SIGKILL to its process group")
        found = await anyio.to_thread.run_sync(
            functools.partial(kill_marked, MARKER_ENV, [self.marker], signal.SIGKILL, wait=wait)
        )
        if found:
            self.notes.append(f"{found} process(es) outlived it: sent SIGKILL")
        await self.exits_within(wait)

    async def aclose(self, wait: float = KILL_WAIT) -> None:
        """Close the pipes and reap the leader (bounded: a process stuck in the kernel after
        SIGKILL must not hang the caller)."""
        with (
            anyio.move_on_after(wait),
            contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError),
        ):
            await self.process.aclose()
