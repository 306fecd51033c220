"""One run's sandbox: the policy, the chosen mode and the run's private ``/tmp``, and the
command line for every process the run starts — the agent and each of its terminals.

Why one sandbox *per process* rather than terminals inside the agent's: the bridge starts
terminal commands itself (``terminal/create``), outside the agent's process tree, and must
own their lifetime (kill, timeout, exit status) as it does today. Each gets its own
bwrap/shim with the same spec, so it sees exactly what the agent sees; and because the
private ``/tmp`` is one *host* directory bound (bwrap) or announced (Landlock) for all of
them, a file the agent writes to ``/tmp`` is there for its terminal. Ending a terminal ends
its namespace (or its shim's descendants); ending the agent does not end a terminal the
bridge still tracks — the bridge releases those when the session ends, as now.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

import anyio

from acp_bridge._os.fs.paths import path_of, real_path
from acp_bridge._os.fs.private_files import private_dir
from acp_bridge._os.fs.removal import remove_tree
from acp_bridge._os.process.command_lookup import resolve_command
from acp_bridge._os.process.procgroup import Launched
from acp_bridge._os.process.stdio_handoff import handoff_argv
from acp_bridge._os.sandbox.bwrap import bwrap_argv, signal_command
from acp_bridge._os.sandbox.choose import SandboxChoice
from acp_bridge._os.sandbox.landlock import landlock_rules, shim_argv
from acp_bridge._os.sandbox.needed import called_links, needed_paths
from acp_bridge._os.sandbox.plan import PathPlan, plan_paths
from acp_bridge._os.sandbox.spec import SandboxSpec, resolve
from acp_bridge._os.shared_thread import SharedThread
from acp_bridge.errors import SpawnError, StateDirError

DEFAULT_SHIM_GRACE = 1.0


class RunSandbox:
    """Use as ``with RunSandbox(spec, choice, tmp_parent=state_dir) as box:`` around a run;
    leaving the block removes the private ``/tmp`` (after every process of the run ended).

    ``grace`` (Landlock only) is how long the shim lets a command handle SIGTERM before it
    kills everything the command started: keep it below the bridge's own shutdown grace,
    so the bridge never needs SIGKILL (the one signal the shim cannot clean up after)."""

    def __init__(
        self,
        spec: SandboxSpec,
        choice: SandboxChoice,
        *,
        tmp_parent: Path | None = None,
        grace: float = DEFAULT_SHIM_GRACE,
    ) -> None:
        self.spec = spec
        self.choice = choice
        self.grace = grace
        self._tmp_parent = tmp_parent
        self.private_tmp: Path | None = None
        self.warnings: list[str] = []
        self.first_plan: PathPlan | None = None
        """The path plan of the first process wrapped (the agent): what it could see."""

    def __enter__(self) -> Self:
        if self.choice.mode != "off" and self.spec.private_tmp:
            self.private_tmp = self._make_private_tmp()
        return self

    def _make_private_tmp(self) -> Path:
        """A new 0700 folder in ``tmp_parent``; in the system's temp folder (with a warning)
        when that cannot take one — a read-only or full state directory."""
        parent = self._tmp_parent
        try:
            if parent is not None:
                private_dir(parent)
            made = tempfile.mkdtemp(prefix="acp-bridge-tmp-", dir=parent)
        except (StateDirError, OSError) as exc:
            if parent is None:
                raise
            self.warnings.append(f"private /tmp made in the system's temp folder: {exc}")
            made = tempfile.mkdtemp(prefix="acp-bridge-tmp-")
        os.chmod(made, stat.S_IRWXU)  # noqa: PTH101 (0700 whatever the umask)
        return path_of(real_path(made))

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.private_tmp is not None:
            _remove_tree(self.private_tmp)
            self.private_tmp = None

    # In an event loop. Making the folder is a mkdir and a chmod (~30 µs): done on the loop,
    # cheaper than the thread hop it would take. (A fan-out's agents then start as their
    # runs are ready, the first ~80 ms sooner; its wall time did not change: the cores are
    # busy either way.) Removing it waits for the disk (an rmdir takes 2-4 ms on ext4 here,
    # and the agent may have left a tree): a worker thread. What most runs leave (an empty
    # folder, or bubblewrap's mount points: a bounded few rmdirs) goes in one pass shared
    # by the runs ending together: a hop each made 40 worker threads for 64 runs, trading
    # the GIL with the loop at every syscall. A tree the agent left goes in a thread of its
    # own, so that one run's leftovers never hold up another run's end.

    async def __aenter__(self) -> Self:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        tmp = self.private_tmp
        if tmp is None:
            return
        with anyio.CancelScope(shield=True):  # the run's /tmp goes, however the run ended
            if await _QUICK_REMOVALS.run(functools.partial(_remove_mount_points, str(tmp))):
                self.private_tmp = None
            else:
                await anyio.to_thread.run_sync(self.__exit__, exc_type, exc, tb)

    def wrap(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        cwd: Path | None = None,
        parent: int | None = None,
        handoff: bool = False,
    ) -> Launched:
        """How to start ``argv`` sandboxed, in ``cwd`` (default: the spec's), with ``env``
        (the constructed environment; ``TMPDIR`` is pointed at the private tmp): a
        :data:`~acp_bridge._os.process.procgroup.Launcher`'s answer.
        ``parent``: the pid of the process that will start it, when not this one (the
        Landlock shim refuses to run for a parent that is already gone). ``handoff``: under
        bubblewrap, its stdin and stdout are handed to it past bwrap's own processes (whose
        copies would hide that it closed them); start it with ``handoff`` then."""
        where = self.spec.cwd if cwd is None else resolve(cwd, what="cwd")
        mode = self.choice.mode
        if mode == "off":
            return Launched(list(argv), dict(env), where)
        if self.spec.private_tmp and self.private_tmp is None:
            raise RuntimeError("use RunSandbox as a context manager: no private /tmp yet")
        if not argv:
            raise SpawnError("command not found: (empty argv)")
        # Inside, "not found" would come back as bwrap's exit 1 or the shim's 127: say it
        # here, as an unsandboxed spawn would (the one resolver: procgroup's).
        try:
            found = resolve_command(argv[0], env.get("PATH", os.defpath), where)
        except IsADirectoryError as exc:
            raise SpawnError(f"cannot execute {exc.filename}: it is a directory") from exc
        except PermissionError as exc:
            raise SpawnError(f"cannot execute {exc.filename}: permission denied") from exc
        except OSError as exc:
            raise SpawnError(f"command not found: {argv[0]}") from exc
        plan = plan_paths(self.spec, needed=needed_paths(argv, env, where))
        self.first_plan = self.first_plan or plan
        out_env = dict(env)
        if mode == "bwrap":
            if self.private_tmp is not None:
                out_env["TMPDIR"] = "/tmp"
            handoff = handoff and self.choice.mode == "bwrap"
            command = bwrap_argv(
                handoff_argv(list(argv)) if handoff else argv,
                plan=plan,
                cwd=where,
                network=self.choice.network,
                private_tmp=self.private_tmp,
                bwrap=self.choice.bwrap or "bwrap",
                links=called_links(argv, env, where, found),
            )
            warnings = plan.warnings
        else:
            handoff = False  # Landlock's shim is the command itself: nothing else holds them
            if self.private_tmp is not None:
                out_env["TMPDIR"] = str(self.private_tmp)
            rules = landlock_rules(
                plan,
                abi=self.choice.abi,
                network=self.choice.network,
                private_tmp=self.private_tmp,
            )
            command = shim_argv(argv, rules, grace=self.grace, parent=parent)
            warnings = rules.warnings
        for warning in warnings:
            if warning not in self.warnings:
                self.warnings.append(warning)
        if mode != "bwrap":
            return Launched(command, out_env, where)
        # A graceful stop signals the command inside, not bwrap (which would take the whole
        # namespace with it); bwrap_argv always passes --die-with-parent: no setpriv before it
        # (``_os/process/procgroup.py``).
        return Launched(command, out_env, where, signal_command, handoff, dies_with_parent=True)

    @property
    def host_loopback(self) -> bool:
        """Whether the run's processes reach the host's loopback (a TCP port the bridge
        listens on): the sandbox is off or keeps the network. ``network: off`` gives
        bubblewrap a loopback of its own and makes Landlock refuse every TCP connect."""
        return self.choice.mode == "off" or self.choice.network

    def shared_path(self, name: str) -> tuple[Path, str] | None:
        """A path in the run's private ``/tmp``: where the bridge finds it, and where the
        run's processes do (``/tmp/NAME`` under bubblewrap, the same path under Landlock),
        whatever the network setting. None: no private ``/tmp`` (the sandbox is off)."""
        if self.private_tmp is None:
            return None
        host = self.private_tmp / name
        return host, f"/tmp/{name}" if self.choice.mode == "bwrap" else str(host)

    def meta(self) -> dict[str, object]:
        """``meta.sandbox``: mode, reason, network, and what the mode could not do."""
        meta = self.choice.meta()
        if self.warnings:
            meta["warnings"] = list(self.warnings)
        return meta


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MOUNT_POINTS = 32
"""Folders a private ``/tmp`` may hold and still be removed on the event loop."""


_QUICK_REMOVALS = SharedThread("private_tmp_removals")
"""The bounded removals (:func:`_remove_mount_points`) of runs ending together."""


def _remove_mount_points(path: str) -> bool:
    """Remove ``path`` when it is empty or holds only empty folders in folders, at most
    :data:`MOUNT_POINTS` of them and never a link: what a run leaves that wrote nothing in
    ``/tmp`` — bubblewrap makes a mount point there for each bind below ``/tmp`` (a cwd or
    a state folder under the host's ``/tmp``). Through descriptors opened without following
    links, as ``rmtree`` does. False (part of it perhaps removed) for anything else: the
    caller removes the rest the thorough way."""

    def clear(fd: int, left: int) -> int:
        names = []
        with os.scandir(fd) as entries:  # stops at the first entry too many: bounded work
            for entry in entries:
                left -= 1
                if left < 0 or not entry.is_dir(follow_symlinks=False):
                    raise OSError(errno.ENOTEMPTY, "more than mount points", entry.name)
                names.append(entry.name)
        for name in names:
            below = os.open(name, _FOLDER, dir_fd=fd)
            try:
                left = clear(below, left)
            finally:
                os.close(below)
            os.rmdir(name, dir_fd=fd)
        return left

    with contextlib.suppress(OSError):
        os.rmdir(path)  # noqa: PTH106 (the usual: empty, one rmdir)
        return True
    try:
        top = os.open(path, _FOLDER)
        try:
            clear(top, MOUNT_POINTS)
        finally:
            os.close(top)
        os.rmdir(path)  # noqa: PTH106
    except OSError:
        return False
    return True


def _remove_tree(path: Path) -> None:
    """Remove the private tmp even where the run left directories without write or
    search permission (a non-root owner could not otherwise delete their entries)."""
    # A run that left its /tmp empty (many do), or holding only bubblewrap's mount points:
    # a few rmdirs, where rmtree's safe walk (open, stat, list, each checked) cost ~0.25 ms
    # of CPU a run.
    if not _remove_mount_points(str(path)):
        remove_tree(path)
