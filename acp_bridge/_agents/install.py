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
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from acp_bridge._acp.agent_executable import (
    ARCHIVE_DIR,
    STAMP,
    bin_dir,
    install_dir,
    installed,
)
from acp_bridge._os import bounded_json
from acp_bridge._os.fs.input_files import InputRefused, read_text
from acp_bridge._os.fs.locations import agents_dir
from acp_bridge._os.fs.private_files import FolderLock, private_dir, write_private
from acp_bridge.config import AgentProfile
from acp_bridge.config._package import PackageSpec
from acp_bridge.errors import BridgeError, ConfigError, ErrorCode, StateDirError

INSTALL_TIMEOUT = 1800.0
"""Seconds one install may take (npm agents are up to ~500 MB on a slow mirror)."""
PROBE_TIMEOUT = 15.0
LOCK_POLL = 0.2
"""Seconds between two tries of a version's lock held by another install (flock has no
wait that a cancel can end)."""
OUTPUT_TAIL = 2000  # characters of a failed installer's output kept in the error
SOCKET_TIMEOUT = 60.0
"""Seconds a download may wait for the server at once (a connection, one read)."""
MAX_DOWNLOAD = 2 * 1024**3
"""Bytes an archive may have: a server that never stops sending fills no disk."""
REPORT_FILE = "pip's install report"
MAX_REPORT_BYTES = 64 << 20
_NEUTRAL = Path("/")
"""Where the probes (``node --version``, ``python -c pass``) run: not our working folder,
which may be gone or unreadable."""


class InstallError(BridgeError):
    """The package manager could not install the agent; the message says what it said."""

    code = ErrorCode.SPAWN_FAILED


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
        record = await _npm(spec, target)
    elif spec.manager == "pypi":
        record = await _pypi(spec, target)
    else:
        record = await _binary(spec, target)
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


async def _run(argv: list[str], cwd: Path, what: str) -> str:
    """Run one installer step; its output (stdout and stderr) when it succeeds."""
    try:
        done = await anyio.run_process(
            argv, cwd=cwd, check=False, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    except OSError as exc:
        raise InstallError(f"{what}: cannot run {argv[0]}: {exc.strerror or exc}") from exc
    output = done.stdout.decode("utf-8", "replace")
    if done.returncode != 0:
        tail = output.strip()[-OUTPUT_TAIL:]
        raise InstallError(f"{what} failed (exit code {done.returncode}): {tail}")
    return output


async def _npm(spec: PackageSpec, prefix: Path) -> dict[str, Any]:
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError(f"{spec} needs npm (and Node.js): install Node.js, which brings npm")
    packages = [f"{spec.npm}@{spec.version}"]
    node = await _node_major()
    if spec.node is not None and (node is None or node < spec.node):
        packages.append(f"node@{spec.node}")  # the Node it needs, beside it
    (prefix / "package.json").write_text(json.dumps({"private": True}))
    argv = [npm, "install", "--prefix", str(prefix), "--save-exact", "--no-audit", "--no-fund"]
    await _run([*argv, "--loglevel=error", *packages], prefix, f"npm install {spec.npm}")
    return {"node": f"node@{spec.node} (installed beside it)" if len(packages) > 1 else "PATH"}


async def _node_major() -> int | None:
    node = shutil.which("node")
    if node is None:
        return None
    try:
        with anyio.fail_after(PROBE_TIMEOUT):
            text = await _run([node, "--version"], _NEUTRAL, "node --version")
    except (InstallError, TimeoutError):
        return None
    found = re.match(r"v(\d+)", text.strip())
    return int(found.group(1)) if found else None


async def _pypi(spec: PackageSpec, prefix: Path) -> dict[str, Any]:
    python = await find_python(spec.python)
    venv = prefix / "venv"
    await _run([python, "-m", "venv", str(venv)], prefix, f"{python} -m venv")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    report = prefix / "install-report.json"
    argv = [*pip, "install", "-q", "--report", str(report), f"{spec.pypi}=={spec.version}"]
    await _run(argv, prefix, f"pip install {spec.pypi}")
    (prefix / "requirements.lock").write_text(_lock_lines(report))
    return {"python": python}


async def _binary(spec: PackageSpec, prefix: Path) -> dict[str, Any]:
    url = spec.archive or ""  # a binary spec has one (PackageSpec checks)
    download = prefix / "download"
    digest = await download_to(url, download, f"{spec}'s archive")
    if spec.sha256 is not None and digest != spec.sha256:
        raise InstallError(
            f"{spec}: the archive from {url} has sha256 {digest}, not the "
            f"{spec.sha256} its entry gives: refused"
        )
    await anyio.to_thread.run_sync(_unpack, download, url, prefix / ARCHIVE_DIR)
    await anyio.Path(download).unlink()
    command = prefix / ARCHIVE_DIR / (spec.cmd or "")
    if await anyio.Path(command).is_file():  # the entry says it runs: a zip may not say so
        await anyio.Path(command).chmod((await anyio.Path(command).stat()).st_mode | 0o111)
    checked = "checked" if spec.sha256 is not None else "not given by the entry: recorded"
    return {"archive": url, "sha256": digest, "sha256_check": checked}


async def download_to(url: str, dest: Path, what: str) -> str:
    """Download ``url`` (http or https) into ``dest``; its sha256. Bounded: the server may
    wait :data:`SOCKET_TIMEOUT` at once, the whole download :data:`INSTALL_TIMEOUT` (checked
    between reads, in the thread: a blocking read cannot be cancelled from outside)."""
    if not url.startswith(("http://", "https://")):
        raise InstallError(f"{what}: only http and https URLs are downloaded: got {url!r}")
    return await anyio.to_thread.run_sync(_download, url, dest, what)


def _download(url: str, dest: Path, what: str) -> str:
    deadline = time.monotonic() + INSTALL_TIMEOUT
    digest = hashlib.sha256()
    size = 0
    try:
        with urllib.request.urlopen(url, timeout=SOCKET_TIMEOUT) as response, dest.open("wb") as f:
            while chunk := response.read(1 << 16):
                size += len(chunk)
                if size > MAX_DOWNLOAD or time.monotonic() > deadline:
                    raise InstallError(
                        f"{what}: {url} sent more than {MAX_DOWNLOAD} bytes or took longer "
                        f"than {INSTALL_TIMEOUT:g}s"
                    )
                digest.update(chunk)
                f.write(chunk)
    except urllib.error.HTTPError as exc:
        raise InstallError(f"{what}: {url} answered {exc.code} {exc.reason}") from exc
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise InstallError(f"{what}: cannot download {url}: {reason}") from exc
    return digest.hexdigest()


def _unpack(archive: Path, url: str, into: Path) -> None:
    """Unpack a .zip or a tar (gzip, xz, bzip2) archive; nothing may land outside ``into``
    (absolute names, ``..``, links out of it: refused)."""
    into.mkdir()
    if url.lower().endswith(".zip") or zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zipped:
            for member in zipped.infolist():
                target = (into / member.filename).resolve()
                if not target.is_relative_to(into.resolve()):
                    raise InstallError(f"{url}: {member.filename!r} would land outside its folder")
                zipped.extract(member, into)
                mode = (member.external_attr >> 16) & 0o777
                if mode and not member.is_dir():
                    target.chmod(mode)  # zipfile drops the mode: the command must stay runnable
        return
    try:
        with tarfile.open(archive) as tarred:
            tarred.extractall(into, filter="data")
    except tarfile.FilterError as exc:
        raise InstallError(f"{url}: {exc}") from exc
    except tarfile.TarError as exc:
        raise InstallError(f"{url}: not a .zip or tar archive: {exc}") from exc


def _lock_lines(report: Path) -> str:
    """``name==version --hash=sha256:…`` for every distribution pip installed (its report)."""
    lines = ["# What pip installed, with the sha256 of each distribution it downloaded.\n"]
    try:
        found = bounded_json.loads(read_text(report, what=REPORT_FILE, limit=MAX_REPORT_BYTES))
    except (OSError, ValueError) as exc:  # the file names itself when the reader refused it
        where = "" if isinstance(exc, InputRefused) else f"{report}: "
        raise InstallError(f"pip's install report: {where}{exc}") from None
    for item in found.get("install", []) if isinstance(found, dict) else []:
        meta = item.get("metadata", {})
        hashes = item.get("download_info", {}).get("archive_info", {}).get("hashes", {})
        pin = f"{meta.get('name')}=={meta.get('version')}"
        lines.append(pin + (f" --hash=sha256:{hashes['sha256']}" if "sha256" in hashes else ""))
    return "\n".join(lines) + "\n"


async def find_python(minimum: str | None) -> str:
    """A Python at least ``minimum`` (``3.12``): the bridge's own if it is, else the newest
    ``python3.X`` on PATH that runs, else pyenv's newest that is new enough."""
    if minimum is None or sys.version_info[:2] >= _version(minimum):
        return sys.executable
    wanted = _version(minimum)[1]
    found = [shutil.which(f"python3.{minor}") for minor in range(20, wanted - 1, -1)]
    found += _pyenv_pythons()
    for candidate in found:
        if candidate is not None and _minor(Path(candidate)) >= wanted and await _runs(candidate):
            return candidate
    raise InstallError(
        f"needs Python >= {minimum} (this is {sys.version.split()[0]}), and no python3.X "
        f"of that age is on PATH: install one (e.g. apt-get install python{minimum}, pyenv "
        f"install {minimum}) and try again"
    )


def _pyenv_pythons() -> list[str]:
    """pyenv's interpreters, newest first. A folder that cannot be looked into is no pyenv:
    ``runuser`` and ``sudo`` keep the caller's ``PYENV_ROOT`` (``/root/.pyenv``, mode 0700),
    and Python 3.11's glob raises on it."""
    root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    try:
        found = Path(root, "versions").glob("3.*/bin/python")
        return [str(p) for p in sorted(found, key=_minor, reverse=True)]
    except OSError:
        return []


def _minor(python: Path) -> int:
    """3.X's X from a path like ``…/python3.12`` or ``…/versions/3.13.0/bin/python``."""
    found = re.search(r"3\.(\d+)", str(python))
    return int(found.group(1)) if found else 0


def _version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


async def _runs(python: str) -> bool:
    try:
        with anyio.fail_after(PROBE_TIMEOUT):
            await _run([python, "-c", "pass"], _NEUTRAL, python)
    except (InstallError, TimeoutError):
        return False
    return True


def on_path(command: str) -> str | None:
    """The command on the host's PATH (for ``agents list``: installed by the operator)."""
    return shutil.which(command, path=os.environ.get("PATH", os.defpath))
