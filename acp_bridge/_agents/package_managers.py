"""The package managers' part of an agent's install (install.py): npm and PyPI run with a
deadline and their output kept for the error, each leaving its record of what it installed
(npm's ``package-lock.json``; for PyPI a ``requirements.lock`` with the sha256 of every
distribution, from ``pip install --report``); the Node an npm package needs found, and the
Python a PyPI package needs."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio

from acp_bridge._os import bounded_json
from acp_bridge._os.fs.input_files import InputRefused, read_text
from acp_bridge.config._package import PackageSpec
from acp_bridge.errors import BridgeError, ErrorCode

INSTALL_TIMEOUT = 1800.0
"""Seconds one install may take (npm agents are up to ~500 MB on a slow mirror)."""
PROBE_TIMEOUT = 15.0
OUTPUT_TAIL = 2000  # characters of a failed installer's output kept in the error
REPORT_FILE = "pip's install report"
MAX_REPORT_BYTES = 64 << 20
_NEUTRAL = Path("/")
"""Where the probes (``node --version``, ``python -c pass``) run: not our working folder,
which may be gone or unreadable."""


class InstallError(BridgeError):
    """The package manager could not install the agent; the message says what it said."""

    code = ErrorCode.SPAWN_FAILED


async def run_installer(argv: list[str], cwd: Path, what: str) -> str:
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


async def npm_install(spec: PackageSpec, prefix: Path) -> dict[str, Any]:
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError(f"{spec} needs npm (and Node.js): install Node.js, which brings npm")
    packages = [f"{spec.npm}@{spec.version}"]
    node = await _node_major()
    if spec.node is not None and (node is None or node < spec.node):
        packages.append(f"node@{spec.node}")  # the Node it needs, beside it
    (prefix / "package.json").write_text(json.dumps({"private": True}))
    argv = [npm, "install", "--prefix", str(prefix), "--save-exact", "--no-audit", "--no-fund"]
    await run_installer([*argv, "--loglevel=error", *packages], prefix, f"npm install {spec.npm}")
    return {"node": f"node@{spec.node} (installed beside it)" if len(packages) > 1 else "PATH"}


async def _node_major() -> int | None:
    node = shutil.which("node")
    if node is None:
        return None
    try:
        with anyio.fail_after(PROBE_TIMEOUT):
            text = await run_installer([node, "--version"], _NEUTRAL, "node --version")
    except (InstallError, TimeoutError):
        return None
    found = re.match(r"v(\d+)", text.strip())
    return int(found.group(1)) if found else None


async def pypi_install(spec: PackageSpec, prefix: Path) -> dict[str, Any]:
    python = await find_python(spec.python)
    venv = prefix / "venv"
    await run_installer([python, "-m", "venv", str(venv)], prefix, f"{python} -m venv")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    report = prefix / "install-report.json"
    argv = [*pip, "install", "-q", "--report", str(report), f"{spec.pypi}=={spec.version}"]
    await run_installer(argv, prefix, f"pip install {spec.pypi}")
    (prefix / "requirements.lock").write_text(_lock_lines(report))
    return {"python": python}


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
            await run_installer([python, "-c", "pass"], _NEUTRAL, python)
    except (InstallError, TimeoutError):
        return False
    return True
