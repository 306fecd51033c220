"""What ``/proc`` says about a process — its stat, identity, children, PID-namespace numbers
and environment — and signalling a process group only while it is provably the one we
recorded. The one reader of ``/proc`` for every caller (the run store, the sandbox, the
reapers); the Landlock shim alone keeps a copy of :func:`children`, because it runs as a
standalone script (``python -I -S``) that cannot import the package.

Why start times: a pid alone names "whoever has this number now". The kernel hands numbers
out again once a process is reaped, so the store never trusts a pid on its own: it keeps the
pid with the process's start time (field 22 of ``/proc/PID/stat``, clock ticks since boot)
and the boot id. Same pid, same start time, same boot: same process.

The safety rule for ending a lost run's processes (see :func:`kill_group`): a recorded
process group is signalled only while its leader is still there with the recorded start time
and still leads that group. The check goes through a pidfd opened *before* reading ``/proc``,
so the number cannot be handed to somebody else between check and signal while the leader
lives; and while any member of a group lives (or its leader is an unreaped zombie) the kernel
never reuses the group's id. A group whose leader has exited and been reaped is left alone,
because nothing then proves the id still names our group: that gap is what the PID-namespace
sandbox closes (docs/explanation/security.md, the OS sandbox).

Linux only.
"""

import contextlib
import os
import signal
import time
from functools import cache
from typing import NamedTuple

PROC = "/proc"


class ProcStat(NamedTuple):
    """The fields of ``/proc/PID/stat`` the run store needs."""

    state: str
    ppid: int
    pgrp: int
    start: int  # field 22: clock ticks after boot

    @property
    def exited(self) -> bool:
        return self.state in ("Z", "X")  # a zombie has exited; only its parent's wait is due


class Identity(NamedTuple):
    """One process, for good: its pid, start time and the boot it belongs to."""

    pid: int
    start: int
    boot: str


@cache
def boot_id() -> str:
    try:
        with open(f"{PROC}/sys/kernel/random/boot_id", encoding="ascii") as file:  # noqa: PTH123
            return file.read().strip()
    except OSError:  # no procfs for it (some containers): one boot as far as we can tell
        return ""


def stat(pid: int) -> ProcStat | None:
    """``/proc/PID/stat`` parsed, or None when there is no such process."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as file:  # noqa: PTH123
            data = file.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = data[data.rindex(b")") + 2 :].split()
    return ProcStat(fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[19]))


def identity(pid: int) -> Identity | None:
    found = stat(pid)
    return None if found is None else Identity(pid, found.start, boot_id())


def own_identity() -> Identity:
    found = identity(os.getpid())
    assert found is not None  # our own /proc entry exists while we run
    return found


def umask() -> str:
    """This process's umask (the ``Umask:`` line of its status, octal), read without
    setting it (``os.umask`` would, for a moment, for every thread); "" when not shown."""
    with contextlib.suppress(OSError), open(f"{PROC}/self/status", encoding="ascii") as file:  # noqa: PTH123
        for line in file:
            if line.startswith("Umask:"):
                return line.split()[1]
    return ""


def alive(who: Identity) -> bool:
    """Whether that very process is still running (an exited zombie is not)."""
    if who.boot != boot_id():
        return False
    found = stat(who.pid)
    return found is not None and found.start == who.start and not found.exited


def open_pidfd(who: Identity) -> int | None:
    """A pidfd for that very process (readable once it exits), or None if it is gone.

    Opened first, checked second: a pidfd names one process for good, so if the start time
    matches after opening, the descriptor is the one we recorded.
    """
    if who.boot != boot_id():
        return None
    try:
        fd = os.pidfd_open(who.pid)
    except OSError:
        return None
    found = stat(who.pid)
    if found is None or found.start != who.start or found.exited:
        os.close(fd)
        return None
    return fd


def children(pid: int | None = None) -> list[int]:
    """The direct children of ``pid`` (default: this process)."""
    pid = os.getpid() if pid is None else pid
    found: list[int] = []
    try:
        tasks = [entry.name for entry in os.scandir(f"{PROC}/{pid}/task")]
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"{PROC}/{pid}/task/{tid}/children", encoding="ascii") as file:  # noqa: PTH123
                found.extend(int(child) for child in file.read().split())
        except FileNotFoundError:  # a thread that ended, or no CONFIG_PROC_CHILDREN
            continue
        except OSError:
            continue
    if not found and not os.path.exists(f"{PROC}/{pid}/task/{pid}/children"):  # noqa: PTH110
        found = _children_by_scan(pid)
    return found


def _children_by_scan(pid: int) -> list[int]:
    """The slow way (kernels without ``children`` files): every process's parent pid."""
    return [other for other in all_pids() if (info := stat(other)) is not None and info.ppid == pid]


def namespace_pids(pid: int) -> list[int]:
    """``pid``'s number in each PID namespace it is in, outermost first (the ``NSpid`` line of
    ``/proc/PID/status``); empty when it is gone."""
    try:
        with open(f"{PROC}/{pid}/status", encoding="utf-8", errors="replace") as file:  # noqa: PTH123
            for line in file:
                if line.startswith("NSpid:"):
                    return [int(number) for number in line.split()[1:]]
    except (OSError, ValueError):
        return []
    return [pid]  # a kernel without NSpid (< 4.1): one namespace


def environ_has_any(pid: int, needles: frozenset[bytes]) -> bool:
    """Whether ``pid``'s environment holds any of ``needles`` (whole ``NAME=value`` entries).
    False when it is gone, a kernel thread, or not ours to read."""
    return bool(environ_matches(pid, needles))


def environ_matches(pid: int, needles: frozenset[bytes]) -> frozenset[bytes]:
    """Which of ``needles`` (whole ``NAME=value`` entries) ``pid``'s environment holds;
    none when it is gone, a kernel thread, or not ours to read."""
    return needles.intersection(settled_environ(pid).split(b"\0"))


EXEC_SETTLE = 0.25
"""How long an empty environment is read again before it is taken as empty (seconds)."""
_EXEC_POLL = 0.001
_PF_KTHREAD = 0x00200000  # /proc/PID/stat flags (field 9): a kernel thread
_empty_for_good: set[tuple[int, int]] = set()
"""(pid, start time) of processes whose environment stayed empty past EXEC_SETTLE: an
``env -i`` program is read once, not waited for again at every sweep."""


def settled_environ(pid: int) -> bytes:
    """``pid``'s environment (empty when it is gone or not ours to read), read again while
    the process is inside an ``execve``.

    Why: between the two halves of an ``execve`` (the new program's memory mapped, its
    environment not yet copied in) ``/proc/PID/environ`` reads as empty. A process caught
    there — a daemon's ``exec`` right after its shell exited, measured: ~10% of processes
    read just after their start, windows up to ~10 ms under load — would not be found by
    the marker sweeps and would outlive its run. A live process that is no kernel thread
    never stays empty unless it was started with an empty environment (``env -i``), so an
    empty read is retried for up to :data:`EXEC_SETTLE`. There is no notification for "the
    exec is done", hence the short polls (the sweeps run in worker threads)."""
    data = _environ(pid)
    if data is None or data:  # not ours to read (another user's), or read
        return data or b""
    identity = _inside_exec(pid)
    if identity is None or identity in _empty_for_good:
        return b""
    deadline = time.monotonic() + EXEC_SETTLE
    while time.monotonic() < deadline:
        time.sleep(_EXEC_POLL)
        if (data := _environ(pid)) or _inside_exec(pid) != identity:
            return data or b""  # its environment, or it is gone (or exited: reads empty)
    if len(_empty_for_good) > 4096:  # bounded: a pid may come back, with another start time
        _empty_for_good.clear()
    _empty_for_good.add(identity)
    return b""


def _environ(pid: int) -> bytes | None:
    """Its environment; None when it is gone or not ours to read; empty while it is ours
    but refused to us.

    Why empty: a reader without CAP_SYS_PTRACE (any user but root) is refused a process of
    its own while that process is inside an ``execve`` (its new memory is not yet marked
    readable to its owner): the same window in which root reads an empty environment, so
    the same retry applies (:func:`settled_environ`)."""
    try:
        with open(f"{PROC}/{pid}/environ", "rb") as file:  # noqa: PTH123
            return file.read()
    except PermissionError:
        try:
            ours = os.stat(f"{PROC}/{pid}").st_uid == os.geteuid()  # noqa: PTH116 - hot path
        except OSError:
            return None
        return b"" if ours else None
    except OSError:
        return None


def _inside_exec(pid: int) -> tuple[int, int] | None:
    """(pid, start time) when ``pid`` is a live process that may be inside an ``execve``
    (not a kernel thread, not exited); None otherwise."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as file:  # noqa: PTH123
            data = file.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2 :].split()
    if fields[0] in (b"Z", b"X") or int(fields[6]) & _PF_KTHREAD:
        return None
    return pid, int(fields[19])


def all_pids() -> list[int]:
    """Every process visible in ``/proc`` (empty where there is none)."""
    try:
        return [int(entry.name) for entry in os.scandir(PROC) if entry.name.isdigit()]
    except OSError:
        return []


def group_leaders(pid: int | None = None) -> list[Identity]:
    """The children of ``pid`` that lead their own process group: every agent, command and
    terminal the entries start is one (they all start in a new session)."""
    leaders = []
    for child in children(pid):
        found = stat(child)
        if found is not None and found.pgrp == child and not found.exited:
            leaders.append(Identity(child, found.start, boot_id()))
    return leaders


def kill_group(leader: Identity, sig: signal.Signals = signal.SIGKILL) -> bool:
    """Signal the process group ``leader`` led, if it provably still is that group (see the
    module docstring). Whether a signal was sent."""
    if leader.boot != boot_id():
        return False
    try:
        fd = os.pidfd_open(leader.pid)
    except OSError:
        return False
    try:
        found = stat(leader.pid)
        # A zombie leader still holds its pid (and so the group id): its group is still ours.
        if found is None or found.start != leader.start or found.pgrp != leader.pid:
            return False
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(leader.pid, sig)
            return True
        return False
    finally:
        os.close(fd)


def kill_process(who: Identity, sig: signal.Signals = signal.SIGKILL) -> bool:
    """Signal that very process (through a pidfd: never a reused pid). Whether it was sent."""
    fd = open_pidfd(who)
    if fd is None:
        return False
    try:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            signal.pidfd_send_signal(fd, sig)
            return True
        return False
    finally:
        os.close(fd)
