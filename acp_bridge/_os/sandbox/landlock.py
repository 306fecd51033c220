"""The Landlock launcher: a path plan → Landlock grants → the shim's command line.

Landlock (Linux ≥ 5.13) confines a process and its descendants to *grants*: "read (or
write) beneath this directory". It has no deny rule, so a hidden path inside a readable
tree is made by **splitting** the tree: the rule on ``$HOME`` becomes one rule per entry of
``$HOME`` except ``.ssh`` (and ``.config`` is split again for ``.config/gh``); ``/`` is split
to leave out ``/tmp``. Every split directory pays for it, and these are the exact limits:

- a split directory cannot be listed (no ``READ_DIR`` on it: ``ls ~``, ``ls /`` fail);
- entries created in a split directory after the run started are out of reach;
- in a split *write root* (a secret inside it) no entry can be created or removed directly
  in the split directory itself, only deeper (a warning says so);
- what Landlock does not control at all stays possible: ``stat`` of a hidden path (its
  existence, size, times — not its content or its listing), ``chdir`` into it, connecting to
  a unix socket by path (``/run/docker.sock`` stays reachable if its permissions allow: use
  bwrap), a hard link to hidden content made *before* the run from a visible place;
- no mount namespace: the host ``/tmp`` cannot be replaced, only hidden; the run's private
  temporary directory is a host directory, announced by ``TMPDIR``; programs that write to
  ``/tmp`` by name get EACCES;
- no PID namespace: other processes stay visible in ``/proc``, command lines *and
  environments* — Landlock's ptrace restriction stops ``ptrace`` and ``/proc/<pid>/mem`` but
  not ``/proc/<pid>/environ`` (measured on Linux 6.18). A same-user agent can read the
  bridge's environment: in Landlock mode keep secrets out of it, or use bwrap;
- ``network: off`` blocks TCP bind/connect only (ABI ≥ 4); UDP and unix sockets still work;
- with ABI ≥ 6 the run cannot signal processes outside it (so cannot kill the shim that
  keeps it) nor reach abstract unix sockets outside it; below ABI 6 it can.

The shim (``landlock_shim.py``) applies the grants and keeps the processes; this module runs in the
bridge and only computes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from acp_bridge._os.sandbox import landlock_shim
from acp_bridge._os.sandbox.plan import Access, PathPlan, PathRule
from acp_bridge._records.frozen import FrozenRecord

SHIM = Path(landlock_shim.__file__)
_SHIM_START = (
    f"import sys; sys.path.append({str(SHIM.parent)!r}); import {SHIM.stem} as shim; "
    "sys.exit(shim.main(sys.argv[1:]))"
)


def shim_command(python: str = sys.executable) -> list[str]:
    """The argv prefix that runs the shim: its module imported, not the file run as a
    script — a script is compiled on every start (~3.5 ms of a Landlock launch's ~23 here),
    a module comes from its cached bytecode, checked against the source as any import is.
    Appended to the path, after the standard library: the modules beside it shadow nothing
    the shim imports."""
    return [python, "-I", "-S", "-c", _SHIM_START]


READ = landlock_shim.FS_EXECUTE | landlock_shim.FS_READ_FILE | landlock_shim.FS_READ_DIR
# Devices a program may write or drive even though /dev is read-only: the bit buckets and
# terminals. /dev/shm is the host's (no mount namespace to give a private one) but POSIX
# shared memory and multiprocessing need it.
DEVICE_FILES: tuple[str, ...] = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx")
DEVICE_DIRS: tuple[str, ...] = ("/dev/pts",)
SHARED_DIRS: tuple[str, ...] = ("/dev/shm",)


def fs_rights(abi: int) -> int:
    """Every filesystem right this ABI knows (all are handled: what is not granted is
    denied, so a right the kernel adds later cannot leak through an old bridge)."""
    rights = (1 << 13) - 1  # ABI 1: EXECUTE … MAKE_SYM
    if abi >= 2:
        rights |= landlock_shim.FS_REFER
    if abi >= 3:
        rights |= landlock_shim.FS_TRUNCATE
    if abi >= 5:
        rights |= landlock_shim.FS_IOCTL_DEV
    return rights


class LandlockRules(FrozenRecord):
    """What a Landlock ruleset handles and grants, at one ABI."""

    # A frozen record, not a frozen dataclass: a dataclass compiles its generated methods
    # from source when its module loads, on every start-up's path (~4 M instructions).
    abi: int
    handled_fs: int
    handled_net: int
    scoped: int
    grants: tuple[tuple[int, str], ...]
    warnings: tuple[str, ...]
    _compared = __slots__ = ("abi", "handled_fs", "handled_net", "scoped", "grants", "warnings")

    def __init__(
        self,
        abi: int,
        handled_fs: int,
        handled_net: int,
        scoped: int,
        grants: tuple[tuple[int, str], ...],
        warnings: tuple[str, ...] = (),
    ) -> None:
        object.__setattr__(self, "abi", abi)
        object.__setattr__(self, "handled_fs", handled_fs)
        object.__setattr__(self, "handled_net", handled_net)
        object.__setattr__(self, "scoped", scoped)
        object.__setattr__(self, "grants", grants)
        object.__setattr__(self, "warnings", warnings)


def landlock_rules(
    plan: PathPlan, *, abi: int, network: bool, private_tmp: Path | None
) -> LandlockRules:
    """The grants for ``plan`` (plus the private tmp directory, writable) at ``abi``."""
    write = fs_rights(abi)
    rules = list(plan.rules)
    if private_tmp is not None:
        rules.append(PathRule(Path(os.path.realpath(private_tmp)), Access.WRITE, "tmp", True))
    grants, split = _grants(rules, write)
    device = (
        landlock_shim.FS_READ_FILE
        | landlock_shim.FS_WRITE_FILE
        | landlock_shim.FS_TRUNCATE
        | landlock_shim.FS_IOCTL_DEV
    )
    grants += [(device & write, path) for path in (*DEVICE_FILES, *DEVICE_DIRS)]
    grants += [(write, path) for path in SHARED_DIRS]
    warnings = list(plan.warnings)
    for path, access in split:
        if access is Access.WRITE:
            warnings.append(split_write_root_warning(path, plan))
    handled_net = 0
    if not network and abi >= 4:
        handled_net = (
            landlock_shim.NET_BIND_TCP | landlock_shim.NET_CONNECT_TCP
        )  # no net rule: all denied
        warnings.append("landlock: network off blocks TCP only (UDP and unix sockets work)")
    scoped = (
        landlock_shim.SCOPE_ABSTRACT_UNIX_SOCKET | landlock_shim.SCOPE_SIGNAL if abi >= 6 else 0
    )
    return LandlockRules(abi, write, handled_net, scoped, tuple(grants), tuple(warnings))


SPLIT_WRITE_ROOT = "landlock cannot give the agent all of"
"""How the warning of a write root split around a hidden path begins (doctor looks for it)."""


def split_write_root_warning(path: str, plan: PathPlan) -> str:
    """What a write root split around hidden paths costs the agent, and the fixes."""
    hidden = [str(p) for p in plan.hidden() if _below(str(p), path)]
    inside = ", ".join(hidden[:3]) + (f" and {len(hidden) - 3} more" if len(hidden) > 3 else "")
    return (
        f"{SPLIT_WRITE_ROOT} {path}: it holds hidden {inside}, so entries cannot be created "
        f"or removed directly in {path} (mkdir, new files and renames there fail with EACCES; "
        f"deeper folders are fine). Fix: choose a cwd that does not contain them, or move them "
        f"out (the bridge's own state: set XDG_STATE_HOME elsewhere), or use bubblewrap"
    )


def _below(path: str, parent: str) -> bool:
    """``path`` strictly below ``parent`` (strings: ``Path.parents`` is too slow here)."""
    return path != parent and path.startswith(parent if parent == "/" else parent + "/")


def _grants(
    rules: list[PathRule], write: int
) -> tuple[list[tuple[int, str]], list[tuple[str, Access]]]:
    """Grants realising ``rules`` (deepest wins) with allow-only rules, and the directories
    that had to be split."""
    out: list[tuple[int, str]] = []
    split: list[tuple[str, Access]] = []
    rights = {Access.WRITE: write, Access.READ: READ, Access.HIDDEN: 0}

    def visit(path: str, access: Access, below: list[tuple[str, Access]]) -> None:
        if access is not Access.HIDDEN and not below:
            out.append((rights[access], path))
            return
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError:
            entries = None
        if access is Access.HIDDEN or entries is None:
            # Nothing of `path` itself is granted; the deeper rules stand on their own.
            for rule, kind in below:
                if not any(_below(rule, other) for other, _ in below):
                    visit(rule, kind, [r for r in below if _below(r[0], rule)])
            return
        split.append((path, access))
        for entry in entries:
            child = entry.path
            exact = [kind for rule, kind in below if rule == child]
            deeper = [r for r in below if _below(r[0], child)]
            if exact:
                visit(child, exact[0], deeper)
            elif deeper:
                visit(child, access, deeper)
            elif not entry.is_symlink():  # a link's target is judged at its own path
                out.append((rights[access], child))

    flat = [(str(r.path), r.access) for r in rules]
    on_root = [access for path, access in flat if path == "/"]  # a write root "/", say
    visit("/", on_root[-1] if on_root else Access.READ, [r for r in flat if r[0] != "/"])
    return out, split


def shim_argv(
    command: Sequence[str],
    rules: LandlockRules,
    *,
    grace: float,
    parent: int | None = None,
    python: str = sys.executable,
) -> list[str]:
    """The argv that runs ``command`` under the landlock_shim. ``parent`` is the pid that will start
    it (default: this process); ``grace`` is how long the shim lets the command handle
    SIGTERM before it kills everything — keep it below the bridge's own grace."""
    config = landlock_shim.encode_config(
        abi=rules.abi,
        handled_fs=rules.handled_fs,
        handled_net=rules.handled_net,
        scoped=rules.scoped,
        grace=grace,
        parent=os.getpid() if parent is None else parent,
        rules=list(rules.grants),
    )
    return [*shim_command(python), *config, *command]
