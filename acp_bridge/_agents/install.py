"""``acp-bridge agents install``: a profile's pinned package into the managed prefix.

One mechanism for every source: an npm or PyPI package, or an archive downloaded and
unpacked (an ACP registry ``binary`` entry: its sha256 checked when the entry gives one, and
recorded in the stamp either way).

No global install and no sudo: each package version gets its own folder under the user's data
directory (:func:`acp_bridge._acp.agent_executable.install_dir`), built in place and stamped
last: a folder without its stamp is never used (a failed install is removed; an interrupted one is
started over). In place, not in a folder beside it renamed into place: a venv's scripts name
their venv's path, so a venv cannot be moved; the stamp, written last and atomically, is the
rename. Two installs of one version never build it at once: each holds the version's
:class:`~acp_bridge._os.fs.private_files.FolderLock` (the second waits, then finds it
installed). The prefix's folders are the bridge's own (``private_files``): a file or a
symlink where one should be is refused with its path, never written through.

The package manager's own record is kept beside it: npm's ``package-lock.json`` (with the
integrity hash of every package), and for PyPI a ``requirements.lock`` with the sha256 of
every distribution pip installed (from ``pip install --report``).

An npm package that needs a newer Node than the one on ``PATH`` (``package.node``) gets that
Node from npm (the ``node`` package) in the same prefix: the run puts the prefix's
``.bin`` first on the agent's ``PATH``. A PyPI package that needs a newer Python than the
bridge's (``package.python``) gets a venv of the newest ``python3.X`` found that is new enough.

Here: the version's folder, its lock and its stamp; the package managers' steps are in
package_managers.py, an archive's download and unpacking in archive_downloads.py.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import anyio

from acp_bridge._acp.agent_executable import STAMP, bin_dir, install_dir, installed
from acp_bridge._agents.archive_downloads import archive_install
from acp_bridge._agents.package_managers import (
    INSTALL_TIMEOUT,
    InstallError,
    npm_install,
    pypi_install,
)
from acp_bridge._os.fs.locations import agents_dir
from acp_bridge._os.fs.private_files import FolderLock, private_dir, write_private
from acp_bridge.config import AgentProfile
from acp_bridge.config._package import PackageSpec
from acp_bridge.errors import ConfigError, StateDirError

LOCK_POLL = 0.2
"""Seconds between two tries of a version's lock held by another install (flock has no
wait that a cancel can end)."""


@dataclass(frozen=True)
class Installed:
    profile: str
    spec: PackageSpec
    path: Path
    fresh: bool  # installed now (False: it already was)
    command: str  # its name in bin_dir(spec)


def spec_of(profile: AgentProfile) -> PackageSpec:
    if profile.package is None:
        how = f" (install it yourself: {profile.install})" if profile.install else ""
        raise ConfigError(
            f"profile {profile.name!r} names no package: acp-bridge cannot install it{how}"
        )
    return profile.package


async def install(profile: AgentProfile, *, force: bool = False) -> Installed:
    """Install the profile's pinned package (nothing to do when it already is)."""
    return await install_package(profile.name, spec_of(profile), profile.command, force=force)


async def install_package(
    name: str, spec: PackageSpec, command: str | None, *, force: bool = False
) -> Installed:
    """Install ``spec`` for the agent ``name``, whose command is ``command`` (None: the
    package's own, as ``npx`` finds it: its only ``bin``, else the one named as it)."""
    target = install_dir(spec)
    done = _done(name, spec, command, force)
    if done is not None:
        return done
    lock = FolderLock(target)
    try:
        with anyio.fail_after(INSTALL_TIMEOUT):  # the wait for another install, then ours
            await _acquire(lock, target)
            try:
                done = _done(name, spec, command, force)  # the other install's work
                if done is not None:
                    return done
                command = await _install_locked(name, spec, target, command)
            finally:
                lock.release()
    except TimeoutError as exc:  # before OSError: a TimeoutError is one
        raise InstallError(f"installing {spec} took longer than {INSTALL_TIMEOUT:g}s") from exc
    return Installed(name, spec, target, fresh=True, command=command)


def _done(name: str, spec: PackageSpec, command: str | None, force: bool) -> Installed | None:
    """The finished install of ``spec`` (its stamp is there), unless ``force``."""
    record = installed(spec)
    if record is None or force:
        return None
    known = command or str(record.get("command") or spec.name.rsplit("/", 1)[-1])
    return Installed(name, spec, install_dir(spec), fresh=False, command=known)


async def _acquire(lock: FolderLock, target: Path) -> None:
    """The version's lock: made private in a prefix whose folders are checked first."""
    try:
        await anyio.to_thread.run_sync(private_dir, target.parent, agents_dir())
        # Another process holds it (no Event of ours can say when): its install ends first.
        while not await anyio.to_thread.run_sync(lock.try_acquire):  # noqa: ASYNC110
            await anyio.sleep(LOCK_POLL)
    except StateDirError as exc:
        raise StateDirError(f"cannot install into {target}: {exc}") from exc


async def _install_locked(name: str, spec: PackageSpec, target: Path, command: str | None) -> str:
    # Built in place (see the module docstring) after whatever was there; the stamp, written
    # last, is what makes it an install.
    try:
        await anyio.to_thread.run_sync(_fresh_dir, target)
    except StateDirError as exc:
        raise StateDirError(f"cannot install into {target}: {exc}") from exc
    except OSError as exc:
        raise folder_error(target, exc) from exc
    try:
        return await _build(name, spec, target, command)
    except TimeoutError:
        await anyio.to_thread.run_sync(shutil.rmtree, target, True)
        raise
    except OSError as exc:  # its files (package.json, the lock, the stamp): not the installer
        await anyio.to_thread.run_sync(shutil.rmtree, target, True)
        raise folder_error(target, exc) from exc
    except BaseException:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(shutil.rmtree, target, True)
        raise


async def _build(name: str, spec: PackageSpec, target: Path, command: str | None) -> str:
    """Build the install in ``target`` and stamp it; its command."""
    if spec.manager == "npm":
        record = await npm_install(spec, target)
    elif spec.manager == "pypi":
        record = await pypi_install(spec, target)
    else:
        record = await archive_install(spec, target)
    if command is None:
        command = await anyio.to_thread.run_sync(_npm_command, spec, target)
    found = bin_dir(spec) / command
    if not await anyio.Path(found).is_file():
        raise InstallError(f"{spec} installed, but it has no command {command!r}")
    if not os.access(found, os.X_OK):
        raise InstallError(f"{spec} installed, but its command {found} is not executable")
    record |= {"profile": name, "package": spec.name, "manager": spec.manager}
    record |= {"version": spec.version, "command": command, "installed_at": time.time()}
    # Atomically (a new file renamed over): a stamp is whole, or there is none.
    data = json.dumps(record, indent=1).encode()
    await anyio.to_thread.run_sync(write_private, target / STAMP, data, agents_dir())
    return command


def _npm_command(spec: PackageSpec, prefix: Path) -> str:
    """The command ``npx`` runs for the package: its only ``bin``, else the one named as the
    package (without its scope)."""
    plain = spec.name.rsplit("/", 1)[-1]
    try:
        meta = json.loads((prefix / "node_modules" / spec.name / "package.json").read_text())
    except (OSError, ValueError):
        meta = {}
    bins = meta.get("bin") if isinstance(meta, dict) else None
    if isinstance(bins, dict) and len(bins) == 1:
        return str(next(iter(bins)))
    if isinstance(bins, dict) and plain not in bins:
        raise InstallError(
            f"{spec} has several commands ({', '.join(sorted(bins))}) and none named {plain!r}"
        )
    return plain


def folder_error(target: Path, exc: OSError) -> StateDirError:
    """A folder of the managed prefix that cannot be made or written (a read-only or full
    data directory, a file where a folder should be): the path and the fix, not a
    traceback."""
    where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(target) else ""
    return StateDirError(
        f"cannot install into {target}{where}: {exc.strerror or exc}; the managed prefix "
        "lives in $XDG_DATA_HOME/acp-bridge/agents (else ~/.local/share/acp-bridge/agents): "
        "make that folder writable, or point XDG_DATA_HOME at one that is"
    )


def _fresh_dir(target: Path) -> None:
    """An empty private folder at ``target``: a half-written install there (a folder without
    its stamp, or one being replaced) goes; a file or a symlink at its name is refused."""
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    private_dir(target, agents_dir())


def on_path(command: str) -> str | None:
    """The command on the host's PATH (for ``agents list``: installed by the operator)."""
    return shutil.which(command, path=os.environ.get("PATH", os.defpath))
