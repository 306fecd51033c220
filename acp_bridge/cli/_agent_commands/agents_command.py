"""``acp-bridge agents install NAME… | list``: the agents of built-in profiles, installed for you.

``install`` puts a profile's pinned npm or PyPI package into the managed prefix
(_agents/install.py) and the profile finds it there from then on; ``list`` says, for
every profile that names a package, whether its command is installed, at which version and
from where (the managed prefix, or the operator's own install on PATH). ``run --install``
installs the agent first when it is missing.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import anyio

from acp_bridge._acp.agent_executable import (
    find_command,
    install_dir,
    installed,
    managed_command,
)
from acp_bridge._agents.doctor import command_version
from acp_bridge._agents.install import install, on_path, spec_of
from acp_bridge.cli._agent_commands.profiles_command import load
from acp_bridge.cli._printing import EXIT_OK, err, out
from acp_bridge.config import AgentProfile, LoadedConfig


def cmd_agents_install(args: argparse.Namespace) -> int:
    loaded = load(args)
    profiles = [loaded.profiles.get(name).profile for name in args.names]
    for profile in profiles:
        spec_of(profile)  # every name checked before anything is installed
    for profile in profiles:
        _install(profile, force=args.force)
    return EXIT_OK


def _install(profile: AgentProfile, *, force: bool = False) -> None:
    spec = spec_of(profile)
    if installed(spec) is None or force:
        err(f"installing {profile.name}: {spec} into {install_dir(spec)} …")
    done = anyio.run(lambda: install(profile, force=force))
    state = "installed" if done.fresh else "already installed"
    out(f"{profile.name}: {state}: {spec} in {done.path}")


def install_if_missing(loaded: LoadedConfig, name: str) -> None:
    """``run --install``: install the agent of profile ``name`` first when it is missing."""
    profile = loaded.profiles.get(name).profile
    if find_command(profile) is None:
        _install(profile)


def _row(loaded: LoadedConfig, name: str, profile: AgentProfile) -> dict[str, Any]:
    spec = spec_of(profile)
    managed = managed_command(profile)
    system = on_path(profile.command)
    # The managed install's from its record; an install of the operator's, as it says in
    # its sandbox (never outside: a --version may write the agent's state).
    version = anyio.run(command_version, loaded, name)[0] if managed or system else None
    return {
        "name": name,
        "package": f"{spec.manager}:{spec.name}",
        "pinned": spec.version,
        "installed": managed is not None or system is not None,
        "version": version,
        "from": managed or system,
        "managed": managed is not None,
    }


def cmd_agents_list(args: argparse.Namespace) -> int:
    loaded = load(args)
    rows = [
        _row(loaded, name, resolved.profile)
        for name, resolved in loaded.profiles.usable().items()
        if resolved.profile.package is not None
    ]
    if args.json:
        out(json.dumps(rows, indent=2))
        return EXIT_OK
    width = max((len(r["name"]) for r in rows), default=4)
    out(f"{'NAME':<{width}}  {'INSTALLED':<9}  {'VERSION':<9}  {'PINNED':<9}  PACKAGE  FROM")
    for row in rows:
        state = "managed" if row["managed"] else "PATH" if row["installed"] else "no"
        version = row["version"] or ("?" if row["installed"] else "-")
        where = row["from"] or f"(acp-bridge agents install {row['name']})"
        cells = f"{state:<9}  {version:<9}  {row['pinned']:<9}  {row['package']}  {where}"
        out(f"{row['name']:<{width}}  {cells}")
    return EXIT_OK
