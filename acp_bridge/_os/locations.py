"""Where the bridge keeps its own files, by the XDG base directory rules.

State (transcripts, diffs, worktrees, the run store) under ``$XDG_STATE_HOME/acp-bridge``,
else ``~/.local/state/acp-bridge``; the config under ``$XDG_CONFIG_HOME/acp-bridge``, else
``~/.config/acp-bridge``. The sandbox hides both from agents (other runs' transcripts and the
operator's keys are none of their business).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def _base(variable: str, fallback: str, environ: Mapping[str, str] | None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get(variable) or str(Path(env.get("HOME", "~")) / fallback)
    return Path(base).expanduser() / "acp-bridge"


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    return _base("XDG_STATE_HOME", ".local/state", environ)


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    return _base("XDG_CONFIG_HOME", ".config", environ)
