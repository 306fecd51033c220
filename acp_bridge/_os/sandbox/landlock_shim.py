"""The Landlock exec shim: confine a command with Landlock and end every process it starts.

Run as ``python -I -S -c "import landlock_shim …" <config…> -- COMMAND ARG…`` (see
:func:`encode_config`, and ``landlock.shim_command``: imported, its bytecode cached). The
bridge starts it in the agent's place; the shim

1. makes itself a *child subreaper* (``PR_SET_CHILD_SUBREAPER``), so every orphan of the run
   — ``setsid`` daemons, double forks, ``env -i`` children — is reparented to it rather
   than to init, and asks for ``SIGHUP`` when the bridge dies (``PR_SET_PDEATHSIG``);
2. builds the Landlock ruleset the bridge computed (rules arrive pre-decomposed: this
   file only opens paths and makes syscalls);
3. forks the command, which drops ``CAP_SYS_PTRACE``, ``CAP_SYS_ADMIN`` and ``CAP_PERFMON``
   from its bounding set (with any of them an agent run as root reads every process's
   ``/proc/<pid>/environ``, the bridge's included, non-dumpable or not), sets
   ``no_new_privs``, restricts itself and ``exec``s with stdio inherited. The shim stays
   *outside* the Landlock domain on purpose: with ABI ≥ 6
   signal scoping the command cannot signal (so cannot kill) its keeper;
4. waits. When the command exits — or it is told to stop and the command has not exited
   within ``grace`` — it SIGKILLs and reaps every remaining descendant, then exits the way
   the command did.

Stopping: the command runs in the shim's process group, so the bridge's ``SIGTERM`` (or
``SIGINT``) to the group reaches both; the shim then only starts counting ``grace`` — it
does not forward the signal, which would deliver it twice (a second SIGTERM/SIGINT means
"give up cleaning, quit now" to many programs). ``SIGHUP`` — the bridge died, or was sent
on purpose — is passed on as ``SIGTERM`` to the group, since nobody else will.

What it cannot do: survive ``SIGKILL`` itself. Then the command gets ``SIGKILL`` (its own
death signal) but descendants that left its process group live on. The bridge therefore
sends ``SIGTERM`` and gives the shim ``grace`` + a margin before any ``SIGKILL``.

Start-up cost matters (every sandboxed run and terminal pays it): this file imports only
``os``, ``sys``, ``time`` and ``ctypes`` — ``_signal``, not ``signal`` (whose enum import
costs ~10 ms), ``open``, not ``pathlib`` — and never the ``acp_bridge`` package. The bridge
imports it for the constants and :func:`landlock_abi`.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time

TYPE_CHECKING = False  # not `from typing import …`: typing costs ~12 ms; mypy knows the name
if TYPE_CHECKING:  # the same functions, typed; at run time the cheap C module
    import signal as _signal
else:
    import _signal

# --- Landlock uapi (linux/landlock.h) --------------------------------------------------------

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446  # generic table (x86_64,
# aarch64, riscv, …); only alpha differs, and we refuse it in landlock_abi().
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

# Rights that apply to a non-directory; a rule on a file with any other bit is EINVAL.
FS_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
CAPS_THAT_READ_ENVIRON = (19, 21, 38)  # CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_PERFMON (measured)

# Exit codes of the shim itself (the command's own codes pass through unchanged).
EXIT_SETUP = 125  # the sandbox could not be set up (message on stderr)
EXIT_CANNOT_EXEC = 126
EXIT_NOT_FOUND = 127
MESSAGE_PREFIX = "acp-bridge sandbox: "
CONFIG_VERSION = "v1"

_libc: ctypes.CDLL | None = None


def _lib() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
        _libc.prctl.restype = ctypes.c_int
    return _libc


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def prctl(option: int, arg: int) -> None:
    lib = _lib()
    _check(lib.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), f"prctl({option})")


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    if os.uname().machine.startswith("alpha"):
        return 0
    try:
        lib = _lib()
    except OSError:
        return 0
    version = lib.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), CREATE_RULESET_VERSION)
    return max(int(version), 0)


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)) in the uapi header: 12 bytes
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def build_ruleset(
    abi: int, handled_fs: int, handled_net: int, scoped: int, rules: list[tuple[int, str]]
) -> int:
    """A ruleset fd holding ``rules`` (access, path). Missing paths and symlinks are skipped:
    a rule on a symlink inode would grant nothing (access is checked on the target)."""
    lib = _lib()
    attr = _RulesetAttr(handled_fs, handled_net, scoped)
    # The struct grew with the ABI; an older kernel rejects the bigger size (E2BIG).
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    fd = _check(
        lib.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0),
        "landlock_create_ruleset",
    )
    for access, path in rules:
        try:
            target = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # gone since the bridge planned it: nothing to grant
        try:
            st = os.fstat(target)
            if (st.st_mode & 0o170000) == 0o120000:  # S_IFLNK
                continue
            allowed = access & handled_fs
            if (st.st_mode & 0o170000) != 0o040000:  # not a directory
                allowed &= FS_FILE_RIGHTS
            if not allowed:
                continue
            beneath = _PathBeneathAttr(allowed, target)
            _check(
                lib.syscall(SYS_ADD_RULE, fd, RULE_PATH_BENEATH, ctypes.byref(beneath), 0),
                f"landlock_add_rule({path})",
            )
        finally:
            os.close(target)
    return fd


# --- the configuration on the command line ---------------------------------------------------


def encode_config(
    *,
    abi: int,
    handled_fs: int,
    handled_net: int,
    scoped: int,
    grace: float,
    parent: int,
    rules: list[tuple[int, str]],
) -> list[str]:
    """Shim arguments up to and including ``--``. Plain tokens, not JSON: importing ``json``
    costs the shim ~15 ms of start-up."""
    out = [CONFIG_VERSION, str(abi), str(handled_fs), str(handled_net), str(scoped)]
    out += [repr(float(grace)), str(parent), str(len(rules))]
    for access, path in rules:
        out += [str(access), path]
    return [*out, "--"]


class _Config:
    def __init__(self, argv: list[str]) -> None:
        if len(argv) < 8 or argv[0] != CONFIG_VERSION:
            raise ValueError("bad shim arguments")
        self.abi, self.handled_fs, self.handled_net, self.scoped = map(int, argv[1:5])
        self.grace = float(argv[5])
        self.parent = int(argv[6])
        count = int(argv[7])
        pairs = argv[8 : 8 + 2 * count]
        self.rules = [(int(pairs[i]), pairs[i + 1]) for i in range(0, len(pairs), 2)]
        rest = argv[8 + 2 * count :]
        if len(pairs) != 2 * count or not rest or rest[0] != "--" or len(rest) < 2:
            raise ValueError("bad shim arguments")
        self.command = rest[1:]


# --- the keeper ----------------------------------------------------------------------------

_WATCHED = {_signal.SIGCHLD, _signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP}


def _say(message: str) -> None:
    os.write(2, f"{MESSAGE_PREFIX}{message}\n".encode(errors="replace"))


def _children() -> list[int]:
    """Our live (or zombie) children. Their pids cannot be reused before we reap them, so
    signalling them is race-free. (A copy of ``acp_bridge._os.process.proc.children``: this script
    runs as ``python -I -S`` before the agent and cannot import the package.)"""
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children", "rb") as f:  # noqa: PTH123 (start-up)
            return [int(pid) for pid in f.read().split()]
    except OSError:  # kernel without CONFIG_PROC_CHILDREN: find them by parent pid
        found = []
        for entry in os.listdir("/proc"):  # noqa: PTH208
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat", "rb") as f:  # noqa: PTH123
                        stat = f.read()
                except OSError:
                    continue
                if int(stat[stat.rindex(b")") + 2 :].split()[1]) == me:
                    found.append(int(entry))
        return found


def _end_all(command: int, status: int | None) -> int | None:
    """SIGKILL every descendant and reap them all. Orphans of a killed process are
    reparented to us (the subreaper) before it turns into a zombie, so each round finds the
    next generation; a process with SIGKILL pending cannot fork. Ends at ECHILD."""
    while True:
        for pid in _children():
            try:  # noqa: SIM105 (contextlib costs ~9 ms of start-up)
                os.kill(pid, _signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            pid, wait_status = os.waitpid(-1, 0)
        except ChildProcessError:
            return status
        if pid == command and status is None:
            status = wait_status


def _reap(command: int, status: int | None) -> int | None:
    """Reap whatever exited; the command's wait status once it has."""
    while True:
        try:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == command:
            status = wait_status


def _start(config: _Config, ruleset: int) -> int:
    keeper = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    try:  # the child: from here on, only exec or _exit
        prctl(PR_SET_PDEATHSIG, _signal.SIGKILL)  # keeper SIGKILLed → at least we go too
        if os.getppid() != keeper:  # it was, before we asked
            os._exit(EXIT_SETUP)
        # Root keeps its capabilities through exec, and any of these reads every process's
        # /proc/<pid>/environ, non-dumpable (the bridge) or not: out of the bounding set.
        for cap in CAPS_THAT_READ_ENVIRON:
            _lib().prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0)  # EPERM: had none
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        _check(_lib().syscall(SYS_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
        os.close(ruleset)
        for sig in (_signal.SIGPIPE, _signal.SIGXFSZ):  # Python ignores these; exec keeps it
            _signal.signal(sig, _signal.SIG_DFL)
        _signal.pthread_sigmask(_signal.SIG_SETMASK, set())
        os.execvp(config.command[0], config.command)
    except FileNotFoundError:
        _say(f"command not found: {config.command[0]}")
        os._exit(EXIT_NOT_FOUND)
    except PermissionError as exc:
        _say(f"cannot execute {config.command[0]}: {exc.strerror}")
        os._exit(EXIT_CANNOT_EXEC)
    except BaseException as exc:
        _say(f"cannot start {config.command[0]}: {exc}")
        os._exit(EXIT_SETUP)
    raise AssertionError("unreachable")


def _exit_like(status: int | None) -> int:
    if status is None:
        return EXIT_SETUP
    if os.WIFSIGNALED(status):  # die of the same signal, so the bridge sees -N as usual
        sig = os.WTERMSIG(status)
        if sig != _signal.SIGKILL:  # SIGKILL's disposition cannot be set (EINVAL)
            _signal.signal(sig, _signal.SIG_DFL)
        _signal.pthread_sigmask(_signal.SIG_SETMASK, set())
        prctl(PR_SET_PDEATHSIG, 0)
        os.kill(os.getpid(), sig)
        return 128 + sig  # a signal that does not kill (e.g. SIGCHLD): the shell convention
    return os.waitstatus_to_exitcode(status)


def main(argv: list[str]) -> int:
    try:
        config = _Config(argv)
    except ValueError as exc:
        _say(str(exc))
        return EXIT_SETUP
    _signal.pthread_sigmask(_signal.SIG_BLOCK, _WATCHED)  # wait for them synchronously
    try:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        prctl(PR_SET_PDEATHSIG, _signal.SIGHUP)
        if os.getppid() != config.parent:  # the bridge died before we asked to hear of it
            return EXIT_SETUP
        ruleset = build_ruleset(
            config.abi, config.handled_fs, config.handled_net, config.scoped, config.rules
        )
    except OSError as exc:
        _say(f"cannot set up Landlock: {exc.strerror or exc}")
        return EXIT_SETUP
    command = _start(config, ruleset)
    os.close(ruleset)
    # Let go of the command's stdin/stdout: a keeper holding stdin's read end would turn
    # the bridge's writes to a dead command into a filling pipe instead of EPIPE.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)

    status: int | None = None
    deadline: float | None = None
    info: _signal.struct_siginfo | None
    while status is None:
        if deadline is None:
            info = _signal.sigwaitinfo(_WATCHED)
        else:
            left = deadline - time.monotonic()
            info = _signal.sigtimedwait(_WATCHED, max(left, 0.0)) if left > 0 else None
            if info is None:  # grace is over: everything ends now
                break
        if info.si_signo == _signal.SIGCHLD:
            status = _reap(command, status)
        elif deadline is None:  # asked to end: allow `grace` (see the module docstring)
            if info.si_signo == _signal.SIGHUP:
                try:  # noqa: SIM105
                    os.killpg(os.getpgrp(), _signal.SIGTERM)  # us too: blocked, ignored
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + config.grace
    return _exit_like(_end_all(command, status))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
