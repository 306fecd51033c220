"""Where a profile's agent command is, and which profiles are ready to run here.

One rule for every place that asks (``profiles list``, ``doctor``, the ``acp_spawn`` tool's
agent enum of ``tools`` and of the MCP face, smoke's ``--skip-missing``, and the run
itself): the command as the profile names it, found on the ``PATH`` the agent gets.
"""

from __future__ import annotations

import os
import shutil

from acp_bridge._os.environment import constructed_env
from acp_bridge.config import AgentProfile, LoadedConfig


def agent_path(profile: AgentProfile) -> str:
    """The ``PATH`` the agent of ``profile`` gets."""
    env = constructed_env(depth=1, extra=profile.env, passthrough=profile.env_passthrough)
    return env.get("PATH", os.defpath)


def find_command(profile: AgentProfile) -> str | None:
    """The executable the profile's command names here, or None when it is not installed."""
    return shutil.which(profile.command, path=agent_path(profile))


def ready_profiles(config: LoadedConfig) -> dict[str, str]:
    """Profile name → description, for every usable profile whose command is installed."""
    return {
        name: resolved.profile.description
        for name, resolved in config.profiles.usable().items()
        if find_command(resolved.profile) is not None
    }
