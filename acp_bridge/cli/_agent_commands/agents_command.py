"""``acp-bridge agents install NAME… | list | search WORDS``: agents installed for you, from
the built-in profiles and from the ACP registry.

``install`` puts a profile's pinned npm or PyPI package into the managed prefix
(_agents/install.py) and the profile finds it there from then on; a name the ACP registry
lists and no profile names (or ``--from-registry``) installs that entry the same way and
writes the profile ``run NAME`` uses (_agents/registry/installs.py). ``list`` shows every
profile that names a package and every registry agent beside them: whether it is installed,
at which version and from where (the managed prefix, or the operator's own install on PATH);
``--ready`` proves the installed ones as ``doctor`` does. ``search`` lists those whose name
or description has every word. ``--registry URL|FILE`` replaces the cached copy of the
registry first; nothing else reaches the network. ``run --install`` installs the agent first
when it is missing.
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
from acp_bridge._agents.doctor import command_version, diagnose
from acp_bridge._agents.install import install, on_path, spec_of
from acp_bridge._agents.registry.agent_entries import RegistryAgent, derive
from acp_bridge._agents.registry.installs import builtin_for, install_entry
from acp_bridge._agents.registry.sources import LoadedRegistry, load_registry, refresh
from acp_bridge.cli._agent_commands.profiles_command import load
from acp_bridge.cli._printing import EXIT_OK, err, out
from acp_bridge.cli._safe_text import one_line
from acp_bridge.config import AgentProfile, LoadedConfig
from acp_bridge.errors import ConfigError


def _registry(args: argparse.Namespace) -> LoadedRegistry:
    """The registry, refreshed first from ``--registry`` when given."""
    if args.registry:
        loaded = anyio.run(refresh, args.registry)
        err(f"registry: {len(loaded.registry.agents)} agents, now cached as {loaded.origin}")
        return loaded
    return load_registry()


def cmd_agents_install(args: argparse.Namespace) -> int:
    loaded = load(args)
    registry = _registry(args)
    plan: list[AgentProfile | RegistryAgent] = []
    for name in args.names:  # every name checked before anything is installed
        entry = registry.registry.get(name)
        if entry is not None and (args.from_registry or _not_a_profile(loaded, name)):
            derive(entry)  # this platform offered, its package pinned
            plan.append(entry)
        elif args.from_registry:
            raise ConfigError(f"the ACP registry ({registry.origin}) lists no agent {name!r}")
        else:
            profile = loaded.profiles.get(name).profile
            spec_of(profile)
            plan.append(profile)
    for item in plan:
        if isinstance(item, RegistryAgent):
            _install_entry(item, registry, force=args.force)
        else:
            _install(item, force=args.force)
    return EXIT_OK


def _not_a_profile(loaded: LoadedConfig, name: str) -> bool:
    """Whether ``name`` is no profile, or one an install from the registry wrote (installed
    again from the registry: its profile follows the entry)."""
    catalog = loaded.profiles
    return name not in catalog.names() or (name in catalog.registry and name not in catalog.layers)


def _install_entry(entry: RegistryAgent, registry: LoadedRegistry, *, force: bool) -> None:
    spec = derive(entry).spec
    if installed(spec) is None or force:
        err(f"installing {entry.id} from the ACP registry: {spec} into {install_dir(spec)} …")
    done = anyio.run(lambda: install_entry(entry, registry.origin, force=force))
    state = "installed" if done.fresh else "already installed"
    out(f"{entry.id}: {state}: {spec} in {done.path}; run it: acp-bridge run {entry.id} …")


def _install(profile: AgentProfile, *, force: bool = False) -> None:
    spec = spec_of(profile)
    if installed(spec) is None or force:
        err(f"installing {profile.name}: {spec} into {install_dir(spec)} …")
    done = anyio.run(lambda: install(profile, force=force))
    state = "installed" if done.fresh else "already installed"
    out(f"{profile.name}: {state}: {spec} in {done.path}")


def install_if_missing(loaded: LoadedConfig, name: str) -> None:
    """``run --install``: install the agent of profile ``name`` first when it is missing;
    a name no profile has but the registry (as last fetched) lists: its entry."""
    if name not in loaded.profiles.names():
        registry = load_registry()
        entry = registry.registry.get(name)
        if entry is not None:
            _install_entry(entry, registry, force=False)
            return
    profile = loaded.profiles.get(name).profile
    if find_command(profile) is None:
        _install(profile)


def _source(loaded: LoadedConfig, name: str) -> str:
    catalog = loaded.profiles
    if name in catalog.layers:
        return catalog.layers[name][-1].origin
    return "registry" if name in catalog.registry else "built-in"


def _row(loaded: LoadedConfig, name: str, profile: AgentProfile) -> dict[str, Any]:
    spec = spec_of(profile)
    managed = managed_command(profile)
    system = on_path(profile.command)
    # The managed install's from its record; an install of the operator's, as it says in
    # its sandbox (never outside: a --version may write the agent's state).
    version = anyio.run(command_version, loaded, name)[0] if managed or system else None
    found = managed is not None or system is not None
    return {
        "name": name,
        "source": _source(loaded, name),
        "description": profile.description,
        "package": f"{spec.manager}:{spec.name}",
        "pinned": spec.version,
        "installed": found,
        "state": f"installed {version or '?'}" if found else "not installed",
        "version": version,
        "from": managed or system,
        "managed": managed is not None,
    }


def _entry_row(entry: RegistryAgent) -> dict[str, Any]:
    """A registry agent no profile names: not installed (an install writes its profile)."""
    try:
        spec = derive(entry).spec
        package = f"{spec.manager}:{spec.name}"
    except ConfigError as exc:  # no archive for this platform: said, not installable
        package = f"({one_line(str(exc))})"
    return {
        "name": entry.id,
        "source": "registry",
        "description": f"{entry.name}: {entry.description}",
        "package": package,
        "pinned": entry.version,
        "installed": False,
        "state": "not installed",
        "version": None,
        "from": None,
        "managed": False,
    }


def _rows(args: argparse.Namespace) -> tuple[list[dict[str, Any]], LoadedRegistry]:
    loaded = load(args)
    registry = _registry(args)
    usable = loaded.profiles.usable()
    rows = [
        _row(loaded, name, resolved.profile)
        for name, resolved in usable.items()
        if resolved.profile.package is not None
    ]
    rows += [_entry_row(e) for e in registry.registry.agents if e.id not in usable]
    listed = {e.id: e.version for e in registry.registry.agents}
    for row in rows:  # what the registry offers for the same agent, beside the profile
        same = row["name"] if row["name"] in listed else _registry_id(row["name"], listed)
        row["registry"] = f"{same}@{listed[same]}" if same else None
    if getattr(args, "ready", False):
        names = [row["name"] for row in rows if row["installed"]]
        reports = anyio.run(lambda: diagnose(loaded, names))
        for report in reports:
            row = next(r for r in rows if r["name"] == report.profile)
            problem = report.problem
            row["state"] = (
                "ready" if problem is None else f"{row['state']} (not ready: {problem.name})"
            )
    rows.sort(key=lambda row: str(row["name"]))
    return rows, registry


def _registry_id(name: str, listed: dict[str, str]) -> str | None:
    return next((i for i in listed if builtin_for(i) == name), None)


def cmd_agents_list(args: argparse.Namespace) -> int:
    rows, registry = _rows(args)
    _show(args, rows, registry)
    return EXIT_OK


def cmd_agents_search(args: argparse.Namespace) -> int:
    rows, registry = _rows(args)
    words = [word.lower() for word in args.words]
    rows = [
        row
        for row in rows
        if all(w in f"{row['name']} {row['description']} {row['package']}".lower() for w in words)
    ]
    _show(args, rows, registry)
    return EXIT_OK


def _show(args: argparse.Namespace, rows: list[dict[str, Any]], registry: LoadedRegistry) -> None:
    if args.json:
        out(json.dumps(rows, indent=2))
        return
    err(f"registry: {registry.origin}")
    width = max((len(r["name"]) for r in rows), default=4)
    state_width = max((len(r["state"]) for r in rows), default=5)
    header = f"{'STATE':<{state_width}}  {'PINNED':<9}  {'SOURCE':<8}  {'REGISTRY':<16}"
    out(f"{'NAME':<{width}}  {header}  PACKAGE  FROM")
    for row in rows:
        where = row["from"] or f"(acp-bridge agents install {row['name']})"
        if row["state"] == "not installed" and row["package"].startswith("("):
            where = ""
        # The registry's version of the same agent, where a profile of ours names it too.
        listed = row["registry"] if row["registry"] and row["source"] != "registry" else "-"
        cells = f"{row['state']:<{state_width}}  {row['pinned']:<9}  {row['source']:<8}"
        cells += f"  {one_line(listed):<16}"
        out(f"{one_line(row['name']):<{width}}  {cells}  {one_line(row['package'])}  {where}")
