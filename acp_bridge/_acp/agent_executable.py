"""Where a profile's agent command is, and which profiles are ready to run here.

One rule for every place that asks (the run itself, ``profiles list``, ``agents list``,
``doctor``, the ``acp_spawn`` tool's agent enum of ``tools`` and of the MCP face, smoke's
``--skip-missing``): a profile with a ``package:`` whose pinned version ``acp-bridge agents
install`` put in the managed prefix runs that one (its ``node_modules/.bin`` or venv ``bin``
first on the agent's ``PATH``, so an npm agent's ``#!/usr/bin/env node`` finds the Node
installed beside it); otherwise the command as the profile names it, on the ``PATH`` the
agent gets. A command the operator named by path is always taken as it is.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from acp_bridge._os import bounded_json
from acp_bridge._os.fs.input_files import read_text
from acp_bridge._os.fs.locations import agents_dir
from acp_bridge._os.fs.run_folders import existing_directory
from acp_bridge._os.process.command_lookup import resolve_command
from acp_bridge._os.process.environment import constructed_env
from acp_bridge.config import AgentProfile, LoadedConfig
from acp_bridge.config._package import PackageSpec
from acp_bridge.errors import ConfigError, SpawnError

STAMP = "acp-bridge-install.json"
STAMP_FILE = "an install stamp"
MAX_STAMP_BYTES = 1 << 20
"""Written last by an install: a folder without it is a half-finished install, never used."""


def install_dir(spec: PackageSpec) -> Path:
    """The managed prefix of one package at one version."""
    return agents_dir() / spec.manager / f"{spec.name.replace('/', '+')}@{spec.version}"


ARCHIVE_DIR = "archive"
"""Where an install unpacks a ``binary`` package's archive, inside its folder."""


def bin_dir(spec: PackageSpec) -> Path:
    """Where the installed package's commands are (an archive's: the folder of its ``cmd``)."""
    if spec.manager == "npm":
        return install_dir(spec) / "node_modules" / ".bin"
    if spec.cmd is not None:
        return (install_dir(spec) / ARCHIVE_DIR / spec.cmd).parent
    return install_dir(spec) / "venv" / "bin"


def installed(spec: PackageSpec) -> dict[str, Any] | None:
    """The record of a finished install of ``spec`` (its stamp), or None."""
    try:
        text = read_text(install_dir(spec) / STAMP, what=STAMP_FILE, limit=MAX_STAMP_BYTES)
        data = bounded_json.loads(text)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def managed_command(profile: AgentProfile) -> str | None:
    """The profile's command in the managed prefix, if its pinned package is installed."""
    spec = profile.package
    if spec is None or "/" in profile.command or installed(spec) is None:
        return None
    candidate = bin_dir(spec) / profile.command
    return str(candidate) if os.access(candidate, os.X_OK) and candidate.is_file() else None


def agent_path(profile: AgentProfile) -> str:
    """The ``PATH`` the agent of ``profile`` gets."""
    env = constructed_env(depth=1, extra=profile.env, passthrough=profile.env_passthrough)
    return agent_command(profile, env)[1].get("PATH", os.defpath)


def agent_command(profile: AgentProfile, env: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The command to start for ``profile`` and ``env`` with the managed ``bin`` first on
    its ``PATH`` when the command comes from there."""
    managed = managed_command(profile)
    if managed is None:
        return profile.command, env
    path = env.get("PATH", os.defpath)
    return managed, {**env, "PATH": f"{Path(managed).parent}{os.pathsep}{path}"}


def find_command(profile: AgentProfile) -> str | None:
    """The executable the profile runs here, or None when it is not installed."""
    return managed_command(profile) or shutil.which(profile.command, path=agent_path(profile))


def install_hint(profile: AgentProfile) -> str:
    """How to install the profile's command: ``acp-bridge agents install`` where the profile
    names its package, else the profile's own ``install`` text."""
    if profile.package is not None:
        return f"acp-bridge agents install {profile.name}"
    return profile.install


def check_installed(
    command: str, env: dict[str, str], cwd: Path, profile: AgentProfile, origin: str = ""
) -> None:
    """An agent that is not installed fails its run before anything is set up (no sandbox,
    no worktree, no "starting"), with the command that installs it. A config error (exit
    2), as a name no profile has: either way there is no such agent here, and the fix is
    the user's (install it, or name another), not a retry."""
    try:
        resolve_command(command, env.get("PATH", os.defpath), cwd)
    except FileNotFoundError as exc:
        raise ConfigError(_said(f"command not found: {command}", profile, origin)) from exc
    except OSError:  # there but not runnable: the launch says how, as for any command
        return


def spawn_error(why: object, profile: AgentProfile, origin: str = "") -> SpawnError:
    """A failed start of the profile's agent, with where its command was set and the hint."""
    return SpawnError(_said(why, profile, origin))


def _said(why: object, profile: AgentProfile, origin: str) -> str:
    """``why``, where the profile's command was set, and how to install it."""
    where = f" ({origin})" if origin else ""
    hint = install_hint(profile)
    return f"{why}{where}" + (f"; install it with: {hint}" if hint else "")


def ready_profiles(config: LoadedConfig) -> dict[str, str]:
    """Profile name → description, for every usable profile whose command is installed."""
    return {
        name: resolved.profile.description
        for name, resolved in config.profiles.usable().items()
        if find_command(resolved.profile) is not None
    }


def session_cwd(cwd: str | Path | None, profile: AgentProfile) -> Path:
    """Where the agent of ``profile`` runs: the caller's ``cwd``, else the profile's, else
    ours; an existing directory, or a ConfigError that names it."""
    return existing_directory(cwd if cwd is not None else (profile.cwd or Path.cwd()))
