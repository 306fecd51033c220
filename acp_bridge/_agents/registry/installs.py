"""A registry entry installed, and made a profile ``acp-bridge run ID`` finds with no YAML.

The install is the one every profile's package gets (_agents/install.py): pinned, into the
managed prefix, stamped last. Then the entry's profile is written to the registry profiles
folder (``$XDG_DATA_HOME/acp-bridge/agents/profiles/ID.yaml``): its command, arguments,
environment and package as the entry gives them, and the name of the built-in profile of the
same agent, if there is one, which the catalogue layers under it for what the registry does
not say (sandbox state, auth variables, model endpoint variables, quirks; config/_catalog.py).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from acp_bridge._agents.install import Installed, folder_error, install_package
from acp_bridge._agents.registry.agent_entries import Derived, RegistryAgent, derive
from acp_bridge._os.fs.locations import registry_profiles_dir
from acp_bridge.config import builtin_profile_files

BUILTIN_NAMES = {"claude-code-acp": "claude", "codex-acp": "codex", "mistral-vibe": "vibe"}
"""Registry ids whose built-in profile has another name (the others share theirs)."""


def builtin_for(agent_id: str) -> str | None:
    """The built-in profile of the same agent as the registry's ``agent_id``, if any."""
    name = BUILTIN_NAMES.get(agent_id, agent_id)
    return name if name in builtin_profile_files() else None


def profile_path(agent_id: str) -> Path:
    return registry_profiles_dir() / f"{agent_id}.yaml"


async def install_entry(agent: RegistryAgent, origin: str, *, force: bool = False) -> Installed:
    """Install the entry's package for this platform and write its profile."""
    derived = derive(agent)
    done = await install_package(agent.id, derived.spec, derived.command, force=force)
    write_profile(agent, derived, done.command, origin)
    return done


def write_profile(agent: RegistryAgent, derived: Derived, command: str, origin: str) -> Path:
    """Write the entry's profile (beside the old one and renamed: never half a file)."""
    profile: dict[str, Any] = {
        "name": agent.id,
        "description": f"{agent.name}: {agent.description}".rstrip(": "),
        "command": command,
        "args": [_literal(arg) for arg in derived.args],
        "env": {key: _literal(value) for key, value in derived.env.items()},
        "package": derived.spec.model_dump(exclude_none=True),
        "install": f"acp-bridge agents install {agent.id}",
    }
    document = {
        "builtin": builtin_for(agent.id),
        "registry": {"id": agent.id, "version": agent.version, "kind": derived.kind},
        "from": origin,
        "profile": profile,
    }
    head = (
        f"# Written by `acp-bridge agents install {agent.id}` from the ACP registry ({origin}).\n"
        "# Written again by each install: edit a profile of the same name in a profiles\n"
        "# folder or the config instead, which is layered over this one.\n"
    )
    target = profile_path(agent.id)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{agent.id}-", suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(head + json.dumps(document, indent=1) + "\n")
        Path(name).replace(target)
    except OSError as exc:
        raise folder_error(target.parent, exc) from exc
    return target


def _literal(text: str) -> str:
    """The registry's text as it is: a profile expands ``${VAR}``, ``$$`` is one dollar."""
    return text.replace("$", "$$")
