"""``acp-bridge agents install``: a profile's pinned package into the managed prefix.

No global install and no sudo: each package version gets its own folder under the user's data
directory (``agent_commands.install_dir``), built in a temporary sibling and renamed into place
when complete, so a failed or interrupted install never leaves a half-working agent behind.
The package manager's own record is kept beside it: npm's ``package-lock.json`` (with the
integrity hash of every package), and for PyPI a ``requirements.lock`` with the sha256 of
every distribution pip installed (from ``pip install --report``).

An npm package that needs a newer Node than the one on ``PATH`` (``package.node``) gets that
Node from npm (the ``node`` package) in the same prefix: the run puts the prefix's
``.bin`` first on the agent's ``PATH``. A PyPI package that needs a newer Python than the
bridge's (``package.python``) gets a venv of the newest ``python3.X`` found that is new enough.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from acp_bridge._entries.agent_commands import STAMP, bin_dir, install_dir, installed
from acp_bridge.config import AgentProfile
from acp_bridge.config._package import PackageSpec
from acp_bridge.errors import BridgeError, ConfigError, ErrorCode

INSTALL_TIMEOUT = 1800.0
"""Seconds one install may take (npm agents are up to ~500 MB on a slow mirror)."""
PROBE_TIMEOUT = 15.0
OUTPUT_TAIL = 2000  # characters of a failed installer's output kept in the error


class InstallError(BridgeError):
    """The package manager could not install the agent; the message says what it said."""

    code = ErrorCode.SPAWN_FAILED


@dataclass(frozen=True)
class Installed:
    profile: str
    spec: PackageSpec
    path: Path
    fresh: bool  # installed now (False: it already was)


def spec_of(profile: AgentProfile) -> PackageSpec:
    if profile.package is None:
        how = f" (install it yourself: {profile.install})" if profile.install else ""
        raise ConfigError(
            f"profile {profile.name!r} names no package: acp-bridge cannot install it{how}"
        )
    return profile.package


async def install(profile: AgentProfile, *, force: bool = False) -> Installed:
    """Install the profile's pinned package (nothing to do when it already is)."""
    spec = spec_of(profile)
    target = install_dir(spec)
    if installed(spec) is not None and not force:
        return Installed(profile.name, spec, target, fresh=False)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        with anyio.fail_after(INSTALL_TIMEOUT):
            record = await (_npm(spec, work) if spec.manager == "npm" else _pypi(spec, work))
        command = profile.command
        if not (_bin_in(spec, work) / command).exists():
            raise InstallError(f"{spec} installed, but it has no command {command!r}")
        record |= {"profile": profile.name, "package": spec.name, "manager": spec.manager}
        record |= {"version": spec.version, "command": command, "installed_at": time.time()}
        await anyio.to_thread.run_sync(_put_in_place, work, target, json.dumps(record, indent=1))
    except TimeoutError as exc:
        raise InstallError(f"installing {spec} took longer than {INSTALL_TIMEOUT:g}s") from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Installed(profile.name, spec, target, fresh=True)


def _put_in_place(work: Path, target: Path, stamp: str) -> None:
    """Stamp the finished install and rename it into place (--force: the old one goes only
    once the new one is complete)."""
    (work / STAMP).write_text(stamp)
    if target.exists():
        shutil.rmtree(target)
    work.rename(target)


def _bin_in(spec: PackageSpec, prefix: Path) -> Path:
    return prefix / bin_dir(spec).relative_to(install_dir(spec))


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
            text = await _run([node, "--version"], Path.cwd(), "node --version")
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


def _lock_lines(report: Path) -> str:
    """``name==version --hash=sha256:…`` for every distribution pip installed (its report)."""
    lines = ["# What pip installed, with the sha256 of each distribution it downloaded.\n"]
    for item in json.loads(report.read_text()).get("install", []):
        meta = item.get("metadata", {})
        hashes = item.get("download_info", {}).get("archive_info", {}).get("hashes", {})
        pin = f"{meta.get('name')}=={meta.get('version')}"
        lines.append(pin + (f" --hash=sha256:{hashes['sha256']}" if "sha256" in hashes else ""))
    return "\n".join(lines) + "\n"


async def find_python(minimum: str | None) -> str:
    """A Python at least ``minimum`` (``3.12``): the bridge's own if it is, else the newest
    ``python3.X`` on PATH that is."""
    if minimum is None or sys.version_info[:2] >= _version(minimum):
        return sys.executable
    for minor in range(20, _version(minimum)[1] - 1, -1):
        candidate = shutil.which(f"python3.{minor}")
        if candidate is not None and await _runs(candidate):
            return candidate
    raise InstallError(
        f"needs Python >= {minimum} (this is {sys.version.split()[0]}), and no python3.X "
        f"of that age is on PATH: install one (e.g. apt-get install python{minimum}, pyenv "
        f"install {minimum}) and try again"
    )


def _version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


async def _runs(python: str) -> bool:
    try:
        with anyio.fail_after(PROBE_TIMEOUT):
            await _run([python, "-c", "pass"], Path.cwd(), python)
    except (InstallError, TimeoutError):
        return False
    return True


def on_path(command: str) -> str | None:
    """The command on the host's PATH (for ``agents list``: installed by the operator)."""
    return shutil.which(command, path=os.environ.get("PATH", os.defpath))
