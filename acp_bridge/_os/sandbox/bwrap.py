"""The bubblewrap launcher: (argv, path plan) → the ``bwrap`` command line.

Layout, in mount order (later mounts cover earlier ones, so deeper rules come later):

- ``--ro-bind / /``: the whole system, read-only, at the same paths. A curated list of
  top-level directories would break agents installed in unusual places (``/opt``, ``/nix``,
  ``/snap``, ``~/.nvm``); what must not be seen is masked instead, which the plan makes
  explicit (secrets, daemon sockets, the host's tmp directories);
- ``--dev /dev`` (a minimal /dev: null, zero, random, tty, pts, shm) and ``--proc /proc``
  (a fresh /proc of the new PID namespace: the bridge and every other host process, with
  their environments, are not in it);
- the plan's rules, shallowest first: ``/tmp`` bound to the run's private directory (shared
  by the agent and its terminals, which run in sandboxes of their own), other host tmp dirs
  and hidden directories as empty read-only tmpfs, hidden files as ``/dev/null``, readable
  paths under those re-bound read-only at their own path, write roots bound read-write;
- the symlinks on the way to what the command is given (:func:`called_links
  <acp_bridge._os.sandbox.needed.called_links>`) that lie in a replaced host tmp dir, made
  again there (``--symlink``): ``HOME=/tmp/u`` → ``/tmp/real-u`` has its target bound, and
  without the link ``$HOME/.local/…`` is not found. Only there, and only to a visible path:
  never inside a secret;
- ``--remount-ro`` of each mask last: the re-bound paths needed mount points inside them.

Processes: ``--unshare-pid`` makes bwrap's init PID 1 of the run; when the command exits,
init exits and the kernel kills everything left in the namespace — ``setsid``, double-fork
and ``env -i`` descendants included. ``--die-with-parent`` ties the sandbox to the thread
that started bwrap (the bridge's event loop): the bridge dies, the run dies.

Not ``--new-session``: it would move the command out of the process group the bridge
starts bwrap in (``start_new_session``), so the bridge's group signals would reach only
bwrap. The terminal-injection attack it prevents (TIOCSTI) needs a controlling terminal,
and a new session started by the bridge has none.

Signals: the outer bwrap does not forward them and dies of SIGTERM, and its death kills
the namespace. So SIGTERM to the group is a hard stop under bwrap; for a graceful one
signal the command itself: :func:`signal_command`.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Sequence
from pathlib import Path

from acp_bridge._os.fs.paths import path_of
from acp_bridge._os.process import proc
from acp_bridge._os.sandbox.needed import Link
from acp_bridge._os.sandbox.plan import Access, PathPlan

TMP = Path("/tmp")


def bwrap_argv(
    command: Sequence[str],
    *,
    plan: PathPlan,
    cwd: Path,
    network: bool,
    private_tmp: Path | None,
    bwrap: str = "bwrap",
    links: Sequence[Link] = (),
) -> list[str]:
    """The full argv that runs ``command`` under bubblewrap. ``private_tmp`` is the host
    directory seen as ``/tmp`` (``None``: a tmpfs of this sandbox alone); ``links``: the
    symlinks on the way to what it is given, made again where a host tmp dir is replaced."""
    args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    args += ["--unshare-pid", "--unshare-ipc", "--die-with-parent"]
    if not network:
        args.append("--unshare-net")  # loopback only; also cuts abstract unix sockets
    masks: list[str] = []
    for rule in plan.rules:
        path = str(rule.path)
        if rule.access is Access.WRITE:
            args += ["--bind", path, path]
        elif rule.access is Access.READ:
            args += ["--ro-bind", path, path]
        elif rule.why == "host tmp" and rule.path == TMP:
            args += ["--bind", str(private_tmp), path] if private_tmp else ["--tmpfs", path]
        elif rule.is_dir:
            args += ["--tmpfs", path]
            masks.append(path)
        else:  # a file, a socket: reads as empty, cannot be written or connected to
            args += ["--ro-bind", "/dev/null", path]
    made: set[str] = set()
    for link, target, reached in links:
        where = path_of(link)
        holder = plan.rule_of(path_of(link.rpartition("/")[0] or "/"))
        replaced = holder is not None and holder.why == "host tmp" and not plan.in_secret(where)
        if link in made or not replaced or not plan.shows_any_of(path_of(reached)):
            continue  # visible as it is on the host, or in a secret, or leading nowhere
        made.add(link)
        args += ["--symlink", target, link]
    for path in masks:
        args += ["--remount-ro", path]
    return [*args, "--chdir", str(cwd), "--", *command]


def _namespace_pid(pid: int) -> int | None:
    """``pid``'s number in its innermost PID namespace."""
    numbers = proc.namespace_pids(pid)
    return numbers[-1] if numbers else None


def command_pid(bwrap_pid: int) -> int | None:
    """The host pid of the command bwrap runs (PID 2 of the sandbox: bwrap's init is 1),
    or ``None`` when it is gone."""
    for child in _children_of_init(bwrap_pid):
        if _namespace_pid(child) == 2:
            return child
    return None


def signal_command(bwrap_pid: int, sig: signal.Signals = signal.SIGTERM) -> bool:
    """Send ``sig`` to the sandboxed command only (a graceful stop: bwrap itself would die
    of it and take the namespace down at once). True when sent.

    The pidfd is opened first and the process checked after: a pid reused in between is
    never signalled."""
    pid = command_pid(bwrap_pid)
    if pid is None:
        return False
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return False
    try:
        if _namespace_pid(pid) != 2 or pid not in _children_of_init(bwrap_pid):
            return False
        signal.pidfd_send_signal(pidfd, sig)
    except OSError:
        return False
    else:
        return True
    finally:
        with contextlib.suppress(OSError):
            os.close(pidfd)


def _children_of_init(bwrap_pid: int) -> list[int]:
    return [child for init in proc.children(bwrap_pid) for child in proc.children(init)]
